"""pyasc's `asc.lib` namespace: `asc.lib.host` is `ascendc.host` (host-side tiling)."""
from . import host

__all__ = ["host"]
