"""Shared helpers of the vector primitive tests: dtypes, random inputs, tolerances, masks."""
import ml_dtypes
import numpy as np

from ascendc.lang import core
from prim_core import Arena

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I32, I16 = np.dtype(np.int32), np.dtype(np.int16)
FLOATS = [F32, F16, BF16]
INTS = [I32, I16]
TOL = {F32: 1e-6, F16: 1e-3, BF16: 8e-3}
ids = str


def isf(dt):
    return np.dtype(dt).kind == "f" or np.dtype(dt) == BF16


def rand(n, dtype, lo=-4.0, hi=4.0, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if not isf(dt):
        return rng.integers(int(lo), int(hi), n).astype(dt)
    return rng.uniform(lo, hi, n).astype(dt)


def assert_close(got, ref, dtype, rtol=None):
    dt = np.dtype(dtype)
    if not isf(dt):
        np.testing.assert_array_equal(got, ref.astype(dt))
        return
    tol = rtol or TOL[dt]
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(dt).astype(np.float64),
                               rtol=tol, atol=tol)


def rep_lanes(repeat, lanes, words, pb, blk, rep):
    """[(r, j, element index)] of the selected lanes, in hardware order."""
    w = words[0] | (words[1] << 64)
    return [(r, j, r * rep * pb + (j // pb) * blk * pb + j % pb)
            for r in range(repeat) for j in range(lanes) if (w >> j) & 1]


def W(w0, w1=0):
    """A bit-mode mask as the surface table passes it: a 2-tuple of uint64 words."""
    return np.uint64(w0), np.uint64(w1)


def mask_to_words(mask, lanes):
    if isinstance(mask, tuple):
        return int(mask[0]), int(mask[1]) if len(mask) > 1 else 0
    w = (1 << mask) - 1
    return w & (2**64 - 1), w >> 64


def vops(ctx):
    return core.read_counters(ctx)["vector_elem_ops"]




def tensors(dt=F32, n=256):
    A = Arena()
    return A, A.new(n, dt)[0], A.new(n, dt)[0], A.new(n, dt)[0]


def wide(x):
    return x.astype(np.float64) if isf(x.dtype) else x.astype(np.int64)
