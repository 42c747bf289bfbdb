"""The cube's float16 -> float32 operand conversion (ascendc/lang/prims/cubegemm.py h2f16)."""
import numpy as np
from numba import njit

from ascendc.lang.prims.cubegemm import h2f16


@njit
def _convert(u):
    out = np.empty(u.size, np.float32)
    for i in range(0, u.size, 16):
        h2f16(out, i, u, i)
    return out


def test_h2f16_is_exact_for_every_float16():
    u = np.arange(65536, dtype=np.uint16)
    got = _convert(u).view(np.uint32)
    ref = u.view(np.float16).astype(np.float32).view(np.uint32)
    snan = ((u & 0x7C00) == 0x7C00) & ((u & 0x3FF) != 0) & ((u & 0x200) == 0)
    np.testing.assert_array_equal(got[~snan], ref[~snan])      # incl. subnormals, inf, qNaN
    # a signalling NaN comes out quiet (its payload kept), as any arithmetic on it would make it
    np.testing.assert_array_equal(got[snan], ref[snan] | 0x00400000)
    assert snan.sum() == 1022


def test_h2f16_reads_and_writes_at_offsets():
    u = np.arange(48, dtype=np.float16).view(np.uint16)
    out = np.full(40, -1, np.float32)

    @njit
    def one(out, u):
        h2f16(out, 3, u, 29)

    one(out, u)
    np.testing.assert_array_equal(out[3:19], np.arange(29, 45, dtype=np.float32))
    assert (out[:3] == -1).all() and (out[19:] == -1).all()
