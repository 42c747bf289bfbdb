"""One emulated core for primitive tests: local tensors as exact-size views at a level's base,
GM arrays registered for bounds messages."""
import numba
import numpy as np

import rt.soc
from ascendc.lang import core
from ascendc.lang.dtypes import from_numpy, storage_view
from ascendc.lang.numba_link import PrimCache
from ascendc.lang.state import MEM


def njit_cached(fn):
    """`numba.njit(cache=True)` for a test's helper that calls primitives: its disk cache is
    stamped with ascendc/lang's sources too (PrimCache), so an edit there recompiles it instead of
    loading object code that calls primitives by names that no longer exist."""
    disp = numba.njit(cache=True)(fn)
    if not numba.config.DISABLE_JIT:
        disp._cache = PrimCache(fn)
    return disp


class Core:
    """One core's context; local tensors are exact-size views at a level's base (+ byte offset)."""

    def __init__(self, flags=0):
        self.ctx = core.new_ctx(rt.soc.get_soc(), flags)

    def local(self, level, dtype, n, off=0, fill=None):
        mem = self.ctx[MEM]
        sd = from_numpy(dtype).storage
        b = int(core.state(self.ctx).level_base[level]) + off
        v = mem[b:b + n * sd.itemsize].view(sd)
        if fill is not None:
            self.logical(v)[:] = fill
        return v

    def gm(self, arr):
        a = storage_view(np.ascontiguousarray(arr).ravel())
        core.register_gm(self.ctx, a)
        return a

    @staticmethod
    def logical(a):
        return a.view(from_numpy(a.dtype).numpy)

    def counters(self):
        return core.read_counters(self.ctx)


class Arena:
    """Bump allocator of 32-byte-aligned tensors in a fresh core's UB."""

    def __init__(self, flags=0):
        self.ctx = core.new_ctx(rt.soc.get_soc(), flags)
        self.off = 0

    def new(self, n, dtype, fill=None):
        """(storage view for the primitive, logical numpy view for the test)."""
        dt = np.dtype(dtype)
        raw = self.ctx[MEM][self.off:self.off + n * dt.itemsize]
        self.off = (self.off + n * dt.itemsize + 31) // 32 * 32
        logical = raw.view(dt)
        logical[:] = 0 if fill is None else fill
        return storage_view(logical), logical
