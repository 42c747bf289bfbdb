"""kernels.norm (layernorm, rmsnorm) against numpy references, interpreted and compiled."""
import ml_dtypes
import numpy as np
import pytest

import rt
from kernels.norm import (LayerNormTiling, RmsNormTiling, layernorm, layernorm_reference,
                          layernorm_tiling, rmsnorm, rmsnorm_reference, rmsnorm_tiling)
from kernels.tolerances import assert_close

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

DTYPES = [np.float32, np.float16, BFLOAT16]
SHAPES = [(1, 8), (3, 37), (16, 64), (5, 1000)]


def _opts(mode):  # `mode` is the shared fixture of tests/conftest.py (interpret / compiled)
    return {"interpret": mode == "interpret", "checked": True}


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    cols = shape[-1]
    x = (rng.standard_normal(shape) * 2.0 + 0.5).astype(dtype)
    gamma = (rng.standard_normal(cols) * 0.5 + 1.0).astype(dtype)
    beta = (rng.standard_normal(cols) * 0.5).astype(dtype)
    return x, gamma, beta


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_layernorm_matches_reference(mode, shape, dtype):
    x, g, b = _data(shape, dtype)
    y = layernorm(x, g, b, **_opts(mode))
    assert y.dtype == x.dtype and y.shape == x.shape
    assert_close(y, layernorm_reference(x, g, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rmsnorm_matches_reference(mode, shape, dtype):
    x, g, _ = _data(shape, dtype, seed=1)
    y = rmsnorm(x, g, **_opts(mode))
    assert y.dtype == x.dtype and y.shape == x.shape
    assert_close(y, rmsnorm_reference(x, g))


def test_norms_several_tiles_and_cores(mode):
    x, g, b = _data((7, 37), BFLOAT16, seed=2)
    t = LayerNormTiling(rows=7, cols=37, block_dim=3, rows_per_core=3, tile_rows=2, stride=48,
                        chunk=37, tmp_elems=24)
    assert_close(layernorm(x, g, b, tiling=t, **_opts(mode)), layernorm_reference(x, g, b))
    t = RmsNormTiling(rows=7, cols=37, block_dim=3, rows_per_core=3, tile_rows=2, stride=48,
                      chunk=37, tmp_elems=24)
    assert_close(rmsnorm(x, g, tiling=t, **_opts(mode)), rmsnorm_reference(x, g))


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_norms_chunked_rows(mode, dtype):
    # chunked scheme forced with 64-column chunks; the last chunk holds 8 columns
    x, g, b = _data((3, 200), dtype, seed=3)
    t = layernorm_tiling(3, 200, dtype, chunk=64)
    assert t.chunked
    assert_close(layernorm(x, g, b, tiling=t, **_opts(mode)), layernorm_reference(x, g, b))
    t = rmsnorm_tiling(3, 200, dtype, chunk=64)
    assert_close(rmsnorm(x, g, tiling=t, **_opts(mode)), rmsnorm_reference(x, g))


def test_norm_long_rows_pick_chunked_scheme():
    assert layernorm_tiling(2, 50_000, np.float32).chunked
    assert rmsnorm_tiling(2, 50_000, np.float16).chunked
    assert not layernorm_tiling(2, 2000, np.float32).chunked


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_norm_widest_tile_row_and_first_chunked_row_fit_ub(op):
    # the UB plan is exact: the widest one-tile row runs, one column more runs chunked
    tiling_fn = layernorm_tiling if op == "layernorm" else rmsnorm_tiling
    cols = {"layernorm": 8144, "rmsnorm": 9760}[op]
    assert not tiling_fn(1, cols, np.float16).chunked and tiling_fn(1, cols + 1, np.float16).chunked
    for c in (cols, cols + 1):
        x, g, b = _data((2, c), np.float16, seed=6)
        if op == "layernorm":
            assert_close(layernorm(x, g, b, interpret=True, checked=True),
                         layernorm_reference(x, g, b))
        else:
            assert_close(rmsnorm(x, g, interpret=True, checked=True), rmsnorm_reference(x, g))


def test_norm_eps_and_params_cast_on_host():
    x, g, b = _data((4, 24), np.float16, seed=4)
    y = layernorm(x, g.astype(np.float64), b.astype(np.float32), eps=1e-3, interpret=True,
                  checked=True)
    assert_close(y, layernorm_reference(x, g, b, eps=1e-3))
    x = np.zeros((2, 16), np.float32)  # all-zero rows: only eps keeps the result finite
    assert np.all(rmsnorm(x, np.ones(16, np.float32), interpret=True, checked=True) == 0)


def test_norm_device_arrays_on_stream(mode):
    x, g, b = _data((5, 37), np.float32, seed=5)
    s = rt.Stream()
    xd, gd, bd = rt.to_device(x), rt.to_device(g), rt.to_device(b)
    yd = layernorm(xd, gd, bd, stream=s, **_opts(mode))
    zd = rmsnorm(xd, gd, stream=s, **_opts(mode))
    y, z = yd.copy_to_host(stream=s), zd.copy_to_host(stream=s)
    s.synchronize()
    assert_close(y, layernorm_reference(x, g, b))
    assert_close(z, rmsnorm_reference(x, g))


def test_norm_rejects_bad_input():
    x, g, b = _data((2, 8), np.float32)
    with pytest.raises(ValueError, match=r"layernorm: gamma must have shape \(8,\)"):
        layernorm(x, g[:4], b)
    with pytest.raises(ValueError, match=r"rmsnorm: eps must be > 0, got eps=0"):
        rmsnorm(x, g, eps=0)
    with pytest.raises(TypeError, match="layernorm: x must be float32, float16 or bfloat16"):
        layernorm(x.astype(np.int16), g, b)
    with pytest.raises(TypeError, match="beta must be an rt.DeviceArray"):
        layernorm(rt.to_device(x), rt.to_device(g), b)
