"""Writing `asc.adv.TCubeTiling` fields in compiled kernels (njit, called as `_ADV.<name>`).

A compiled kernel holds a tiling as a namedtuple record (immutable in Numba), so
`tiling.f = v` becomes `tiling = _ADV.tiling_set(tiling, <index of f>, v)` and
`asc.adv.TCubeTiling(f=v, ...)` becomes `_ADV.tiling_new((...every field...))` (ascendc/adv/
lowering.py); every field is an int64 in the record, so the rebuilt record has the type of the
old one. `tiling_norm` is what Matmul.init reads (both modes): a tiling made by hand (pyasc's own
tests leave step_k_a, step_k_b and db_l0a/b/c at 0 and pass on the NPU) has those at least 1.
The fields are written out one by one: Numba builds a record only from all of its fields, and
only from plain names in a call this long (no inline conditionals).
"""
from __future__ import annotations

import numpy as np

from ..lang.core import prim
from .tiling import FIELDS, TCubeTilingRecord

NFIELDS = len(FIELDS)
INDEX = {f: i for i, f in enumerate(FIELDS)}
# read as "at least 1" by Matmul.init (0 in a hand-made tiling)
AT_LEAST_ONE = ('step_m', 'step_n', 'step_k_a', 'step_k_b', 'db_l0a', 'db_l0b', 'db_l0c')


@prim
def tiling_set(t, i, v):
    """`t` with field number `i` = `v`."""
    v = np.int64(v)
    x0 = v if i == 0 else t[0]
    x1 = v if i == 1 else t[1]
    x2 = v if i == 2 else t[2]
    x3 = v if i == 3 else t[3]
    x4 = v if i == 4 else t[4]
    x5 = v if i == 5 else t[5]
    x6 = v if i == 6 else t[6]
    x7 = v if i == 7 else t[7]
    x8 = v if i == 8 else t[8]
    x9 = v if i == 9 else t[9]
    x10 = v if i == 10 else t[10]
    x11 = v if i == 11 else t[11]
    x12 = v if i == 12 else t[12]
    x13 = v if i == 13 else t[13]
    x14 = v if i == 14 else t[14]
    x15 = v if i == 15 else t[15]
    x16 = v if i == 16 else t[16]
    x17 = v if i == 17 else t[17]
    x18 = v if i == 18 else t[18]
    x19 = v if i == 19 else t[19]
    x20 = v if i == 20 else t[20]
    x21 = v if i == 21 else t[21]
    x22 = v if i == 22 else t[22]
    x23 = v if i == 23 else t[23]
    x24 = v if i == 24 else t[24]
    x25 = v if i == 25 else t[25]
    x26 = v if i == 26 else t[26]
    x27 = v if i == 27 else t[27]
    x28 = v if i == 28 else t[28]
    x29 = v if i == 29 else t[29]
    x30 = v if i == 30 else t[30]
    x31 = v if i == 31 else t[31]
    x32 = v if i == 32 else t[32]
    x33 = v if i == 33 else t[33]
    x34 = v if i == 34 else t[34]
    x35 = v if i == 35 else t[35]
    x36 = v if i == 36 else t[36]
    x37 = v if i == 37 else t[37]
    x38 = v if i == 38 else t[38]
    x39 = v if i == 39 else t[39]
    x40 = v if i == 40 else t[40]
    x41 = v if i == 41 else t[41]
    x42 = v if i == 42 else t[42]
    x43 = v if i == 43 else t[43]
    x44 = v if i == 44 else t[44]
    x45 = v if i == 45 else t[45]
    x46 = v if i == 46 else t[46]
    x47 = v if i == 47 else t[47]
    x48 = v if i == 48 else t[48]
    return TCubeTilingRecord(
        x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15, x16, x17, x18, x19,
        x20, x21, x22, x23, x24, x25, x26, x27, x28, x29, x30, x31, x32, x33, x34, x35, x36, x37,
        x38, x39, x40, x41, x42, x43, x44, x45, x46, x47, x48)


@prim
def tiling_new(f):
    """A record from a tuple of all 49 field values (in FIELDS order)."""
    x0 = np.int64(f[0])
    x1 = np.int64(f[1])
    x2 = np.int64(f[2])
    x3 = np.int64(f[3])
    x4 = np.int64(f[4])
    x5 = np.int64(f[5])
    x6 = np.int64(f[6])
    x7 = np.int64(f[7])
    x8 = np.int64(f[8])
    x9 = np.int64(f[9])
    x10 = np.int64(f[10])
    x11 = np.int64(f[11])
    x12 = np.int64(f[12])
    x13 = np.int64(f[13])
    x14 = np.int64(f[14])
    x15 = np.int64(f[15])
    x16 = np.int64(f[16])
    x17 = np.int64(f[17])
    x18 = np.int64(f[18])
    x19 = np.int64(f[19])
    x20 = np.int64(f[20])
    x21 = np.int64(f[21])
    x22 = np.int64(f[22])
    x23 = np.int64(f[23])
    x24 = np.int64(f[24])
    x25 = np.int64(f[25])
    x26 = np.int64(f[26])
    x27 = np.int64(f[27])
    x28 = np.int64(f[28])
    x29 = np.int64(f[29])
    x30 = np.int64(f[30])
    x31 = np.int64(f[31])
    x32 = np.int64(f[32])
    x33 = np.int64(f[33])
    x34 = np.int64(f[34])
    x35 = np.int64(f[35])
    x36 = np.int64(f[36])
    x37 = np.int64(f[37])
    x38 = np.int64(f[38])
    x39 = np.int64(f[39])
    x40 = np.int64(f[40])
    x41 = np.int64(f[41])
    x42 = np.int64(f[42])
    x43 = np.int64(f[43])
    x44 = np.int64(f[44])
    x45 = np.int64(f[45])
    x46 = np.int64(f[46])
    x47 = np.int64(f[47])
    x48 = np.int64(f[48])
    return TCubeTilingRecord(
        x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15, x16, x17, x18, x19,
        x20, x21, x22, x23, x24, x25, x26, x27, x28, x29, x30, x31, x32, x33, x34, x35, x36, x37,
        x38, x39, x40, x41, x42, x43, x44, x45, x46, x47, x48)


@prim
def tiling_norm(t):
    """`t` with the fields of AT_LEAST_ONE at least 1."""
    x0 = t[0]
    x1 = t[1]
    x2 = t[2]
    x3 = t[3]
    x4 = t[4]
    x5 = t[5]
    x6 = t[6]
    x7 = t[7]
    x8 = t[8]
    x9 = t[9]
    x10 = t[10]
    x11 = t[11]
    x12 = t[12]
    x13 = max(t[13], 1)
    x14 = max(t[14], 1)
    x15 = t[15]
    x16 = t[16]
    x17 = t[17]
    x18 = t[18]
    x19 = t[19]
    x20 = t[20]
    x21 = t[21]
    x22 = t[22]
    x23 = t[23]
    x24 = t[24]
    x25 = t[25]
    x26 = max(t[26], 1)
    x27 = max(t[27], 1)
    x28 = t[28]
    x29 = t[29]
    x30 = max(t[30], 1)
    x31 = max(t[31], 1)
    x32 = max(t[32], 1)
    x33 = t[33]
    x34 = t[34]
    x35 = t[35]
    x36 = t[36]
    x37 = t[37]
    x38 = t[38]
    x39 = t[39]
    x40 = t[40]
    x41 = t[41]
    x42 = t[42]
    x43 = t[43]
    x44 = t[44]
    x45 = t[45]
    x46 = t[46]
    x47 = t[47]
    x48 = t[48]
    return TCubeTilingRecord(
        x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15, x16, x17, x18, x19,
        x20, x21, x22, x23, x24, x25, x26, x27, x28, x29, x30, x31, x32, x33, x34, x35, x36, x37,
        x38, x39, x40, x41, x42, x43, x44, x45, x46, x47, x48)


__all__ = ["tiling_set", "tiling_new", "tiling_norm", "INDEX", "NFIELDS", "AT_LEAST_ONE"]
