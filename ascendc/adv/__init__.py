"""`asc.adv`: pyasc's high-level APIs. Supported: the Matmul family (`Matmul`, `MatmulType`,
`register_matmul`, `TCubeTiling`, `LayoutMode`); the host-side tiling is `asc.lib.host`
(= `ascendc.host`)."""
from ..lang.surface import Extension, register_extension
from . import lowering
from .matmul import LayoutMode, Matmul, MatmulType, nd2nz_strips, register_matmul
from .tiling import TCubeTiling

register_extension(Extension("adv", lowering=lowering))

__all__ = ["Matmul", "MatmulType", "register_matmul", "TCubeTiling", "LayoutMode", "nd2nz_strips"]
