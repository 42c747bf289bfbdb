"""The one per-dtype tolerance table shared by tests and benchmarks (rtol, atol)."""
import ml_dtypes
import numpy as np

TOLERANCES = {
    np.dtype(np.float32): (2e-5, 1e-5),
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(ml_dtypes.bfloat16): (1.6e-2, 1.6e-2),
    np.dtype(np.float64): (1e-12, 1e-12),
}


def tolerance(dtype):
    """(rtol, atol) for comparing a result of `dtype` with its float64/float32 reference."""
    return TOLERANCES.get(np.dtype(dtype), (0.0, 0.0))


def assert_close(actual, expected, dtype=None, scale=1.0):
    """Compare with the shared tolerance (exact for integer dtypes); `scale` widens it."""
    dtype = np.dtype(dtype or actual.dtype)
    rtol, atol = tolerance(dtype)
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    np.testing.assert_allclose(a, e, rtol=rtol * scale, atol=atol * scale)
