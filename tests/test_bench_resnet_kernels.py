"""bench.resnet_kernels' MAC accounting (`cube_macs`, `RESNET50_CONVS`) and bench.models' Conv
list from an ONNX graph (`conv_shapes`), and `operand_bytes` (--bytes): counts checked against
hand-computed values and against the light ResNet-50 model itself. No timing is asserted."""

import os

import pytest

from bench.resnet_kernels import (RESNET50_CONVS, RESNET50_RESIDUAL_CONVS, cube_macs,
                                  operand_bytes)
from kernels.conv2d import conv2d_tiling


def test_cube_macs_counts_whole_fractals_per_mmad():
    # 1x1 64x56x56 -> 256: M = 256 (two 128-row tiles), N = 3136 (a multiple of 16), K = 65
    t = conv2d_tiling((1, 64, 56, 56), (256, 64, 1, 1))
    assert (t.mm.m, t.mm.n, t.mm.k) == (256, 3136, 65)
    assert cube_macs(t) == 256 * 3136 * 65
    # 7 x 7 image: N = 49 computed as 64 columns (4 fractals of 16), K = 513
    t = conv2d_tiling((1, 512, 7, 7), (2048, 512, 1, 1))
    assert cube_macs(t) == 2048 * 64 * 513
    # ragged M: 40 output channels are 48 rows of the cube
    t = conv2d_tiling((1, 8, 10, 10), (40, 8, 1, 1))
    assert cube_macs(t) == 48 * 112 * 9


def test_tap_conv_counts_its_garbage_columns():
    # 3x3/1 at 28: rows of Wp = 32 columns (28 valid), K = 9 * 128 + 1
    t = conv2d_tiling((1, 128, 28, 28), (128, 128, 3, 3), 1, 1)
    assert t.tap_wp == 32
    assert cube_macs(t) == 128 * 28 * 32 * 1153


def test_resnet50_convs_total():
    real = sum(w[0] * w[1] * w[2] * w[3] * ((x[2] + 2 * p - w[2]) // s + 1) ** 2 * n
               for x, w, s, p, n in RESNET50_CONVS)
    assert sum(n for *_, n in RESNET50_CONVS) == 53
    assert real == 4_087_136_256


def test_conv_list_matches_the_light_model():
    onnx = pytest.importorskip("onnx")
    from bench.models import _light, conv_shapes
    path = _light("resnet50")
    if not os.path.exists(path):
        pytest.skip("the onnx wheel ships no light_resnet50.onnx")
    found = {}
    for x, w, s, p in conv_shapes(onnx.load(path)):
        key = (x, w, s[0], p[0])
        found[key] = found.get(key, 0) + 1
    assert found == {(x, w, s, p): n for x, w, s, p, n in RESNET50_CONVS}


def test_residual_convs_are_the_blocks_last_1x1_convs():
    """--residual's list: one 1x1 conv (C -> 4C, stride 1) per bottleneck block, 16 in all,
    each shape among RESNET50_CONVS at least that often."""
    assert sum(n for *_, n in RESNET50_RESIDUAL_CONVS) == 16
    counts = {(x, w): n for x, w, s, p, n in RESNET50_CONVS if s == 1 and p == 0}
    for x, oc, n in RESNET50_RESIDUAL_CONVS:
        assert counts[(x, (oc, x[1], 1, 1))] >= n and oc == 4 * x[1]


def test_operand_bytes_per_tile():
    # 1x1 512x7x7 -> 2048: 16 row tiles of 128, one column tile (N = 49 as 64 columns in B),
    # K = 513 as chunks 128, 128, 128, 128, 1 (padded to 8): KP = 520
    t = conv2d_tiling((1, 512, 7, 7), (2048, 512, 1, 1))
    assert (t.mm.base_m, t.mm.base_k, t.tile_n) == (128, 128, 64)
    a, b, c = operand_bytes(t)
    assert a == 2048 * 520 * 4              # the weights once: one column tile
    assert b == 16 * 520 * 64 * 4           # B once per row tile
    assert c == 2048 * 49 * 4
    # 1x1 64x56x56 -> 256: 2 row tiles x 22 column tiles of 144 (the last 112), K = 65 -> 72
    t = conv2d_tiling((1, 64, 56, 56), (256, 64, 1, 1))
    assert t.tile_n == 144
    a, b, c = operand_bytes(t)
    assert a == 22 * 256 * 72 * 4
    assert b == 2 * 72 * 3136 * 4
    assert c == 256 * 3136 * 4
