"""The cube GEMM's micro-kernel is sized to the CPU's vector registers (8 rows x 2 strips on
AVX-512, 6 x 1 on AVX2, 2 x 1 on SSE); every blocking computes each L0C cell by the same chain
of fused multiply-adds, so the result is bit-identical whichever the CPU is. All three are
compiled in, so each runs here through the real loops (`gemm_nz_blocked`, `gemm_zn_blocked`)."""
import numpy as np
import pytest

from ascendc.lang import numba_link
from ascendc.lang.prims import cubegemm
from ascendc.lang.prims.cubegemm import (BLOCKINGS, HOST_BLOCKING, gemm_nz, gemm_nz_blocked,
                                         gemm_zn, gemm_zn_blocked, pack_zn)


@pytest.mark.parametrize("bits, nregs, expect", [(512, 32, (8, 2)), (256, 16, (6, 1)),
                                                 (128, 16, (2, 1))])
def test_blocking_fills_the_register_file_without_spilling(bits, nregs, expect):
    assert cubegemm._blocking(bits, nregs) == expect
    assert expect in BLOCKINGS


@pytest.mark.parametrize("features, expect", [({"avx512f", "avx2", "avx"}, (512, 32)),
                                              ({"avx2", "fma"}, (256, 16)),
                                              ({"avx"}, (256, 16)),
                                              ({"sse4.2", "sse2"}, (128, 16)), (set(), (128, 16))])
def test_vector_registers_follow_the_features(features, expect):
    assert cubegemm._vector_registers(features) == expect


def test_host_blocking_is_read_from_numbas_code_generator():
    """The features are those Numba compiles for (what its cache keys carry), not the raw
    host's: NUMBA_ENABLE_AVX=0 or NUMBA_CPU_FEATURES change both."""
    from numba.core.registry import cpu_target
    feats = cpu_target.target_context.codegen().magic_tuple()[2]
    on = numba_link.target_features()
    assert on == {f[1:] for f in feats.split(",") if f.startswith("+")}
    assert BLOCKINGS[HOST_BLOCKING] == cubegemm._blocking(*cubegemm._vector_registers(on))


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
