"""The decorator of generated kernel functions: Numba's njit, compiled as kernel GLUE.

While a GLUE function compiles, the larger primitives it reaches are called rather than inlined
(lang/numba_link.py, CalledLibrary): the kernel's own LLVM module holds only its control flow,
the small primitives and Numba's overload wrappers, so LLVM optimises and emits each primitive
once (it is disk-cached with its primitive) instead of once per kernel specialisation.
"""
from __future__ import annotations

from ..lang.numba_link import GlueDispatcher


def glue_jit(**options):
    """`@glue_jit(nogil=True, cache=True, ...)`: like `numba.njit(...)`."""
    cache = options.pop("cache", False)

    def deco(fn):
        disp = GlueDispatcher(py_func=fn, locals={},
                              targetoptions={"nopython": True, **options})
        if cache:
            disp.enable_caching()
        return disp
    return deco
