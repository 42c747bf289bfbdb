"""The cube GEMM's micro-kernel is sized to the CPU's vector registers (8 rows x 2 strips on
AVX-512, 6 x 1 on AVX2, 2 x 1 on SSE); every blocking computes each L0C cell by the same chain
of fused multiply-adds, so the result is bit-identical whichever the CPU is."""
import numpy as np
import pytest
from numba import config, njit

from ascendc.lang.prims import cubegemm
from ascendc.lang.prims.cubegemm import gemm_nz, pack_zn


@pytest.mark.parametrize("bits, nregs, expect", [(512, 32, (8, 2)), (256, 16, (6, 1)),
                                                 (128, 16, (2, 1))])
def test_blocking_fills_the_register_file_without_spilling(bits, nregs, expect):
    assert cubegemm._blocking(bits, nregs) == expect


@pytest.mark.parametrize("features, expect", [("+avx512f,+avx2,+avx", (512, 32)),
                                              ("-avx512f,+avx2,+avx,+fma", (256, 16)),
                                              ("+sse4.2,-avx", (128, 16))])
def test_vector_registers_follow_numba_cpu_features(monkeypatch, features, expect):
    monkeypatch.setattr(config, "CPU_FEATURES", features)
    assert cubegemm._vector_registers() == expect


def _gemm_with(mr, nr):
    """gemm_nz's loop with an mr x nr micro-kernel (and its tails), whatever the host's."""
    tail = 16 % mr or mr
    uk, uk1 = cubegemm._make_ukernel(mr, nr), cubegemm._make_ukernel(mr, 1)
    ukt, ukt1 = cubegemm._make_ukernel(tail, nr), cubegemm._make_ukernel(tail, 1)

    @njit
    def gemm(c, a, bp, m16, n16, k, c0, kpad, init):
        ash = 3 if c0 == 8 else 4
        kb = kpad // c0
        for s0 in range(0, n16 // 16, nr):
            ns = min(nr, n16 // 16 - s0)
            bo = s0 * kpad * 16
            for rb in range(0, m16, 16):
                for r in range(0, 16, mr):
                    ao = (rb // 16) * kb * 16 * c0 + r * c0
                    co = (s0 * m16 + rb + r) * 16
                    if r + mr <= 16:
                        if ns == nr:
                            uk(c, co, m16 * 16, a, ao, ash, bp, bo, kpad * 16, k, init)
                        else:
                            uk1(c, co, m16 * 16, a, ao, ash, bp, bo, kpad * 16, k, init)
                    elif ns == nr:
                        ukt(c, co, m16 * 16, a, ao, ash, bp, bo, kpad * 16, k, init)
                    else:
                        ukt1(c, co, m16 * 16, a, ao, ash, bp, bo, kpad * 16, k, init)
    return gemm


@pytest.mark.parametrize("c0", [8, 16])
def test_every_blocking_gives_the_host_gemms_bits(c0):
    rng = np.random.default_rng(7)
    m16, n16, kpad, k = 48, 48, 48, 45          # three strips: an odd count; k short of kpad
    a = rng.standard_normal((m16, kpad)).astype(np.float32)
    b = rng.standard_normal((kpad, n16)).astype(np.float32)
    a[:, k:] = np.nan                           # past k: never read
    a_zz = a.reshape(m16 // 16, 16, kpad // c0, c0).transpose(0, 2, 1, 3).ravel()
    b_zn = b.T.reshape(n16 // 16, 16, kpad // c0, c0).transpose(2, 0, 1, 3).ravel()
    bp = pack_zn(b_zn, n16 // 16, kpad // c0, c0)
    c0_init = rng.standard_normal(m16 * n16).astype(np.float32)
    host_set, host_acc = np.empty_like(c0_init), c0_init.copy()
    gemm_nz(host_set, a_zz, bp, m16, n16, k, c0, kpad, True)
    gemm_nz(host_acc, a_zz, bp, m16, n16, k, c0, kpad, False)
    want = (a[:, :k].astype(np.float64) @ b[:k].astype(np.float64))
    got = host_set.reshape(n16 // 16, m16, 16).transpose(1, 0, 2).reshape(m16, n16)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    for mr, nr in [(8, 2), (6, 1), (2, 1), (4, 2), (5, 1)]:
        gemm = _gemm_with(mr, nr)
        c_set, c_acc = np.full_like(c0_init, np.nan), c0_init.copy()
        gemm(c_set, a_zz, bp, m16, n16, k, c0, kpad, 1)
        gemm(c_acc, a_zz, bp, m16, n16, k, c0, kpad, 0)
        assert np.array_equal(c_set.view(np.uint32), host_set.view(np.uint32)), (mr, nr)
        assert np.array_equal(c_acc.view(np.uint32), host_acc.view(np.uint32)), (mr, nr)
