"""ascendc: Ascend C kernels in Python with pyasc's names (`import ascendc as asc`).

Kernels run compiled by Numba (one nogil function per AI Core, blocks spread over rt's core pool)
or interpreted as plain Python (`ASCENDC_INTERPRET=1` or `@asc.jit(interpret=True)`).
"""
__kernel_language__ = True

# first: importing the kernel cache checks NUMBA_CACHE_DIR before any cache=True function is
# defined (Numba picks the directory it reads pickles from at definition)
from .compiler import cache as _kernel_cache  # noqa: F401
from .language import *  # noqa: F403  (the kernel language: asc.add, asc.TQue, asc.jit, ...)
from .language import __all__ as _LANGUAGE
from . import adv, host, lib
from .adv.memalloc import LocalMemAllocator
from .jit import PreparedLaunch, record_launches  # launches bound once, queued again
from .npu import npu_trace  # the NPU view: simulated pipe timeline of an interpreted launch
# the kernel sanitizer: `with asc.sanitize(...)` (the function; the package is ascendc.sanitize's
# modules, `python -m ascendc.sanitize`)
from .sanitize import sanitize  # noqa: E402

__all__ = list(_LANGUAGE) + ["adv", "host", "lib", "npu_trace", "LocalMemAllocator", "sanitize",
                         "record_launches", "PreparedLaunch"]
