"""kernels.conv2d's even output tiles (`even_tile_n`, `balanced_tile_n`): the conv matmuls cut N
into tiles of one width (the last one narrower, none wider than base_n), and into more of them
when the tiles outnumber the SoC's cores (every core the same number); the outputs stay equal to
numpy in both modes on ragged and tile-multiple shapes, and the simulated launch is shorter than
with base_n-wide tiles and a sliver at the end."""
import dataclasses

import numpy as np
import pytest

import rt
from kernels.conv2d import (balanced_tile_n, conv2d, conv2d_reference, conv2d_tiling,
                            even_tile_n)
from kernels.tune import npu_total_us


@pytest.mark.parametrize("n,base_n,align", [(784, 256, 16), (896, 256, 32), (3584, 256, 64),
                                            (196, 256, 16), (49, 256, 16), (12544, 256, 16),
                                            (513, 128, 16), (16, 16, 16)])
def test_even_tile_n_keeps_the_tile_count_and_capacity(n, base_n, align):
    tn = even_tile_n(n, base_n, align)
    tiles = -(-n // base_n)
    assert tn <= base_n and tn % align == 0
    assert -(-n // tn) == tiles                      # no extra tile (each reloads all of A)
    widths = [min(tn, n - i * tn) for i in range(tiles)]
    assert sum(widths) == n and min(widths) > 0
    assert max(widths) < -(-n // tiles) + align     # the widest tile: the mean + < align
    assert min(widths) > n / tiles - tiles * align   # the narrowest: no sliver


def test_even_tile_n_splits_784_evenly():
    assert even_tile_n(784, 256) == 208             # 208, 208, 208, 160 (not ..., 256, 16)
    assert even_tile_n(28 * 32, 256, 32) == 224     # the tap path: 7 whole rows of Wp = 32


@pytest.mark.parametrize("n,tiles_m,cores,want", [
    (12544, 1, 24, 176),    # conv1: 49 tiles of 256 (3 on one core) -> 72 of 176, 3 on each
    (3136, 2, 24, 144),     # 26 tiles -> 44 (2 a core)
    (3136, 1, 24, 256),     # 13 tiles on 24 cores: as even_tile_n
    (784, 4, 24, 208),      # 16 tiles: as even_tile_n
    (6400, 1, 4, 240),      # 25 tiles on 4 cores (7 on one): 27 of 240, still 7 a core
])
def test_balanced_tile_n(n, tiles_m, cores, want):
    tn = balanced_tile_n(n, 256, 16, tiles_m, cores)
    assert tn == want and tn % 16 == 0 and tn <= 256
    t0, t1 = tiles_m * -(-n // 256), tiles_m * -(-n // tn)
    assert -(-t1 // cores) <= -(-t0 // cores)        # no more tiles per core than before
    assert t1 <= 2 * t0


@pytest.mark.parametrize("shape,oc,k,s,p", [
    ((1, 32, 28, 28), 256, 1, 1, 0),    # direct 1x1, N = 784: 4 tiles of 208/160
    ((1, 16, 28, 28), 130, 3, 1, 1),    # taps, N = 28 * 32: 4 tiles of 7 rows, ragged M
    ((2, 5, 13, 11), 20, 3, 1, 0),      # img2col, ragged: N = 99 (one tile)
    ((1, 24, 30, 30), 40, 3, 2, 1),     # stride 2 (phase path), N = 225
    ((1, 8, 32, 32), 16, 1, 1, 0),      # N = 1024: a multiple of base_n, tiles unchanged
    ((1, 3, 90, 90), 24, 3, 1, 0),      # N = 88 * 88: 31 tiles of 256 -> more of 144 (24 cores)
])
def test_conv_with_even_tiles_matches_reference(interpret, shape, oc, k, s, p):
    t = conv2d_tiling(shape, (oc, shape[1], k, k), s, p)
    assert t.tile_n == balanced_tile_n(t.mm.n, t.mm.base_n, t.tap_wp or 16,
                                       -(-t.mm.m // t.mm.base_m), rt.get_soc().ai_core_num)
    rng = np.random.default_rng(sum(shape) + oc)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((oc, shape[1], k, k)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    ref = conv2d_reference(x, w, b, s, p)
    y = conv2d(x, w, b, stride=s, padding=p, relu=True, interpret=interpret)
    np.testing.assert_allclose(y, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,oc,k,p,name", [
    ((1, 32, 28, 28), 256, 1, 0, "conv_matmul_kernel"),
    ((1, 16, 28, 28), 128, 3, 1, "conv_tap_kernel"),
])
def test_even_tiles_shorten_the_simulated_launch(shape, oc, k, p, name):
    t = conv2d_tiling(shape, (oc, shape[1], k, k), 1, p)
    assert t.tile_n < t.mm.base_n
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((oc, shape[1], k, k)).astype(np.float32)
    us, ys = [], []
    for tt in (t, dataclasses.replace(t, tile_n=0)):    # 0: base_n-wide tiles
        us.append(npu_total_us(lambda: ys.append(conv2d(x, w, None, padding=p, tiling=tt)),
                               name))
    np.testing.assert_array_equal(ys[0], ys[1])     # same cells, same fma chains
    assert us[0] < 0.92 * us[1]


def test_tiles_beyond_the_cores_shorten_the_simulated_launch():
    cores = rt.get_soc().ai_core_num
    shape = (1, 8, 16, 16 * (cores + 1))            # direct 1x1: N = (cores + 1) * 256
    t = conv2d_tiling(shape, (64, 8, 1, 1))
    assert t.tile_n < 256 and t.mm.block_dim == cores
    tiles = -(-t.mm.n // t.tile_n)                  # 2 a core at most, as with 25 of 256
    assert cores < tiles <= 2 * cores and t.tile_n <= -(-2 * t.mm.n // (2 * cores)) + 16
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((64, 8, 1, 1)).astype(np.float32)
    us, ys = [], []
    for tt in (t, dataclasses.replace(t, tile_n=0)):
        us.append(npu_total_us(lambda: ys.append(conv2d(x, w, None, tiling=tt)),
                               "conv_matmul_kernel"))
    np.testing.assert_array_equal(ys[0], ys[1])
    assert us[0] < 0.8 * us[1]                      # 2 tiles of 256 on one core before


def test_residual_epilogue_uses_the_socs_cores():
    """bias_act_kernel after a tap conv with a residual (the 1x1 and img2col convs add it in the
    matmul's launch) runs one block per AI Core (not per CPU of the machine): the same output,
    a shorter simulated epilogue."""
    shape, oc = (1, 64, 28, 28), 256
    t = conv2d_tiling(shape, (oc, 64, 3, 3), 1, 1)
    assert t.tap_wp
    assert t.epi_block_dim == min(rt.get_soc().ai_core_num, oc)
    assert t.epi_block_dim * t.epi_rows_per_core >= oc > (t.epi_block_dim - 1) * \
        t.epi_rows_per_core
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((oc, 64, 3, 3)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    res = rng.standard_normal((1, oc, 28, 28)).astype(np.float32)
    two = dataclasses.replace(t, epi_block_dim=2, epi_rows_per_core=oc // 2)
    us, ys = [], []
    for tt in (t, two):
        us.append(npu_total_us(lambda: ys.append(conv2d(x, w, b, padding=1, residual=res,
                                                        relu=True, tiling=tt)),
                               "bias_act_kernel"))
    np.testing.assert_array_equal(ys[0], ys[1])
    np.testing.assert_allclose(ys[0], np.maximum(conv2d_reference(x, w, b, 1, 1) + res, 0),
                               rtol=1e-4, atol=1e-4)
    assert us[0] < 0.5 * us[1]
