"""Random per-rank data and numpy references shared by the HCCL tests (imported by name: pytest
puts tests/rt/hccl on sys.path)."""
import numpy as np

from rt import hccl

FLOATS = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12, "bfloat16": 5e-2}
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64",
          "bfloat16"]
REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _np_dtype(name):
    return hccl.dtype_of(name, "test")


def _data(rng, n, count, dtype, op="sum"):
    dt = _np_dtype(dtype)
    if dt.kind == "f" or dtype == "bfloat16":
        lo, hi = (0.5, 1.5) if op == "prod" else (-4, 4)
        return [rng.uniform(lo, hi, count).astype(dt) for _ in range(n)]
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return [rng.integers(lo, hi, count, endpoint=True).astype(dt) for _ in range(n)]


def _reference(op, arrays):
    dt = arrays[0].dtype
    if dt.kind in "iu":                       # modular arithmetic: exact in any order
        out = arrays[0].copy()
        with np.errstate(over="ignore"):
            for a in arrays[1:]:
                REDUCE[op](out, a, out=out)
        return out
    return REDUCE[op].reduce(np.stack([a.astype(np.float64) for a in arrays]), axis=0)


def _check(got, want, dtype):
    tol = FLOATS.get(dtype)
    if tol is None:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
