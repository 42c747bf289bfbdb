"""bench.kernels_add on a small shape: every variant is timed, and the C floor of the kernel's
tiled design (bench/c/add_floor.c) is built and checked against x + y when the machine has a C
compiler. No timing is asserted."""

import numpy as np
import pytest

from bench import kernels_add as B


def test_measure_times_every_variant():
    m = B.measure(50_003, 1)
    for name in B.PEERS:
        assert m[name] > 0 and m[B.PEERS[name]] > 0
    assert not any(k.startswith("C,") for k in m)


@pytest.mark.skipif(B.c_compiler() is None, reason="no C compiler on this machine")
@pytest.mark.parametrize("n,threads", [(8192 * 3, 2), (50_003, 2), (7, 1), (100_000, 3)])
def test_c_floor_adds_ragged_and_tile_multiple_lengths(n, threads):
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    run = B.c_floor(x, y, out, threads)
    run()
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.skipif(B.c_compiler() is None, reason="no C compiler on this machine")
def test_measure_adds_the_c_floor_row_when_asked():
    m = B.measure(50_003, 1, with_c_floor=True)
    assert any(k.startswith("C, kernels.add's tiling") for k in m)


def test_no_compiler_means_no_floor(monkeypatch):
    monkeypatch.setattr(B.shutil, "which", lambda name: None)
    x = np.ones(16, np.float32)
    assert B.c_floor(x, x, np.empty_like(x), 1) is None
