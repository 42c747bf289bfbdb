"""Where device ops get their implementations: AI CPU (numpy, `rt.graph.aicpu`, always there) and
AI Core (kernels in the kernel language, registered from above `rt`).

`rt` never imports the kernel library (tests/test_layering.py). An op library registers its AI
Core implementations with `register_aicore(op_type, impl)`; the installed ones are found through
the packaging entry-point group `ascend_emu.op_libraries` (this project's `kernels.model_ops`,
declared in pyproject.toml), loaded once, the first time a model is loaded. Importing an op
library registers it too.

An AI Core implementation is any object with
- `supports(node, specs) -> bool`: whether it runs this node (`specs`: `Specs`);
- `prepare(node, specs) -> state`: at model load (weights are in `specs.consts` as numpy);
- `launch(node, state, ins, outs, workspace, stream)`: enqueue the node's kernels on `stream`
  (`ins`/`outs`: `rt.DeviceArray`s, None for an omitted input; `workspace`: a uint8 DeviceArray
  of the node's planned workspace, or None).
"""
from __future__ import annotations

import importlib.metadata
import threading
from dataclasses import dataclass, field

from ..log import logger

ENTRY_POINT_GROUP = "ascend_emu.op_libraries"
AICORE: dict = {}
_loaded = False
_lock = threading.Lock()


@dataclass
class Specs:
    """What an implementation may look at when it decides and prepares: shapes and dtypes of the
    inputs/outputs (None for an omitted input) and the weights among the inputs (index -> numpy)."""
    inputs: list
    outputs: list
    consts: dict = field(default_factory=dict)
    workspace_bytes: int = 0


def register_aicore(op_type: str, impl) -> None:
    """Register an AI Core implementation of device op `op_type` (the last one wins)."""
    for attr in ("supports", "prepare", "launch"):
        if not callable(getattr(impl, attr, None)):
            raise TypeError(f"register_aicore: impl must have a callable {attr}(), got {impl!r}")
    AICORE[op_type] = impl


def load_op_libraries() -> None:
    """Load the op libraries installed under the entry-point group (once per process)."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        eps, seen = [], set()
        try:    # every distribution on the path (a stale egg-info must not hide the dist-info)
            for dist in importlib.metadata.distributions():
                for ep in dist.entry_points:
                    if ep.group == ENTRY_POINT_GROUP and ep.value not in seen:
                        seen.add(ep.value)
                        eps.append(ep)
        except Exception as e:          # broken metadata must not break model loading
            logger.warning("model: cannot list op libraries (%s); AI CPU only", e)
            return
        for ep in eps:
            try:
                fn = ep.load()
                if callable(fn):
                    fn()
            except Exception as e:
                logger.warning("model: op library %s failed to load (%s: %s); its ops run on "
                               "the AI CPU", ep.value, type(e).__name__, e)
    if not AICORE:
        logger.warning("model: no AI Core op library is installed (entry points %r); every op "
                       "runs as an AI CPU op. `pip install -e .` or `import kernels.model_ops`.",
                       ENTRY_POINT_GROUP)
