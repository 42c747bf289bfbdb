"""The cube GEMM's micro-kernel is sized to the CPU's vector registers (8 rows x 2 strips on
AVX-512, 6 x 1 on AVX2, 2 x 1 on SSE); every blocking computes each L0C cell by the same chain
of fused multiply-adds, so the result is bit-identical whichever the CPU is. All three are
compiled in, so each runs here through the real loops (`gemm_nz_blocked`, `gemm_zn_blocked`)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from ascendc.lang import numba_link
from ascendc.lang.prims.cubegemm import (BLOCKINGS, HOST_BLOCKING, gemm_nz, gemm_nz_blocked,
                                         gemm_zn, gemm_zn_blocked, host_blocking, pack_zn)


@pytest.mark.parametrize("which, nregs, per_row", [(0, 32, 1), (1, 16, 2), (2, 16, 4)])
def test_each_blocking_fills_its_register_file_without_spilling(which, nregs, per_row):
    """AVX-512 (32 registers, a 16-float row in one), AVX2 (16, two), SSE (16, four): the
    accumulators, one B row per strip and the A broadcast fit, and one more row would not
    (or the rows are 8, half a fractal block)."""
    rows, strips = BLOCKINGS[which]
    assert (rows + 1) * strips * per_row + 1 <= nregs
    assert rows == 8 or (rows + 2) * strips * per_row + 1 > nregs


@pytest.mark.parametrize("features, expect", [({"avx512f", "avx2", "avx"}, 0),
                                              ({"avx2", "fma"}, 1), ({"avx"}, 1),
                                              ({"sse4.2", "sse2"}, 2), (set(), 2)])
def test_host_blocking_follows_the_features(features, expect):
    assert host_blocking(features) == expect


CHILD = "from ascendc.lang.prims.cubegemm import HOST_BLOCKING; print('BLOCKING', HOST_BLOCKING)"


@pytest.mark.parametrize("env", [{"NUMBA_CPU_FEATURES": "+sse2,+sse4.2,-avx,-avx2,-avx512f"},
                                 {"NUMBA_ENABLE_AVX": "0"}])
def test_host_blocking_is_what_numba_compiles_for(env, tmp_path):
    """The features are those of Numba's code generator (what its cache keys carry), not the
    raw host's: NUMBA_CPU_FEATURES or NUMBA_ENABLE_AVX=0 without AVX give the SSE blocking on
    any x86 CPU."""
    root = pathlib.Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=root, capture_output=True, text=True,
                       env=dict(os.environ, **env, PYTHONPATH=str(root),
                                NUMBA_CACHE_DIR=str(tmp_path / "numba"),
                                ASCENDC_CACHE_DIR=str(tmp_path / "kernels")), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("BLOCKING")[-1].strip() == "2"
    assert HOST_BLOCKING == host_blocking(numba_link.target_features())


@pytest.mark.parametrize("c0", [8, 16])
@pytest.mark.parametrize("n16", [48, 64])                # odd and even strip counts
def test_every_blocking_gives_the_same_bits(c0, n16):
    rng = np.random.default_rng(7)
    m16, kpad, k = 48, 48, 45                          # k short of kpad
    a = rng.standard_normal((m16, kpad)).astype(np.float32)
    b = rng.standard_normal((kpad, n16)).astype(np.float32)
    a[:, k:] = np.nan                                  # past k: never read
    a_zz = a.reshape(m16 // 16, 16, kpad // c0, c0).transpose(0, 2, 1, 3).ravel()
    b_zn = b.T.reshape(n16 // 16, 16, kpad // c0, c0).transpose(2, 0, 1, 3).ravel()
    bp = pack_zn(b_zn, n16 // 16, kpad // c0, c0)
    old = rng.standard_normal(m16 * n16).astype(np.float32)
    host_set, host_acc = np.empty_like(old), old.copy()
    gemm_nz(host_set, a_zz, bp, m16, n16, k, c0, kpad, True)
    gemm_nz(host_acc, a_zz, bp, m16, n16, k, c0, kpad, False)
    want = a[:, :k].astype(np.float64) @ b[:k].astype(np.float64)
    got = host_set.reshape(n16 // 16, m16, 16).transpose(1, 0, 2).reshape(m16, n16)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(host_acc - old, host_set, rtol=1e-5, atol=1e-5)
    zn = np.empty_like(old)
    gemm_zn(zn, a_zz, b_zn, m16, n16, k, c0, kpad // c0, True)
    assert np.array_equal(zn.view(np.uint32), host_set.view(np.uint32))
    for which in range(len(BLOCKINGS)):
        for init, base, host in ((True, np.nan, host_set), (False, old, host_acc)):
            c_nz, c_zn = np.full_like(old, base), np.full_like(old, base)
            gemm_nz_blocked(c_nz, a_zz, bp, m16, n16, k, c0, kpad, init, which)
            gemm_zn_blocked(c_zn, a_zz, b_zn, m16, n16, k, c0, kpad // c0, init, which)
            assert np.array_equal(c_nz.view(np.uint32), host.view(np.uint32)), (which, init)
            assert np.array_equal(c_zn.view(np.uint32), host.view(np.uint32)), (which, init)
