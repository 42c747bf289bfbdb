"""Batch Matmul: `Matmul.iterate_batch` over LayoutMode.NORMAL operands and the host's
`set_a/b/c_layout`, `set_batch_num` (pyasc generalization/adv/
test_matmul_iterate_batch.py). Ascend C IterateBatch: one single_core_m x single_core_n C per
batch; batch_a and batch_b must be multiples of each other (pyasc python/asc/language/adv/utils.py,
iterate_batch_docstring), the smaller one broadcast as pyasc's test reference does."""
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc import host as phost

MODES = [pytest.param(True, id="interpret"), pytest.param(False, id="compiled")]


@asc.jit
def batch_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                 tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress, batch_a: int,
                 batch_b: int):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(
        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype, False,
                           asc.LayoutMode.NORMAL),
        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype, False,
                           asc.LayoutMode.NORMAL),
        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype, False,
                           asc.LayoutMode.NORMAL))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.iterate_batch(cg, batch_a, batch_b, False)
    mm.end()


def _tiling(m, n, k, batch_a, batch_b):
    t = phost.MultiCoreMatmulTiling(phost.get_ascendc_platform())
    t.set_a_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT16)
    t.set_b_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT16)
    t.set_c_type(phost.TPosition.GM, phost.CubeFormat.ND, phost.DataType.DT_FLOAT)
    t.set_shape(m, n, k)
    t.set_org_shape(m, n, k)
    batch = max(batch_a, batch_b)
    assert t.set_a_layout(batch_a, m, 1, 1, k) == 0
    assert t.set_b_layout(batch_b, k, 1, 1, n) == 0
    assert t.set_c_layout(batch, m, 1, 1, n) == 0
    assert t.set_batch_num(batch) == 0
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


def _run(m, n, k, batch_a, batch_b, interpret):
    rng = np.random.default_rng(m * 7 + batch_b)
    a = rng.integers(-4, 4, (batch_a * m, k)).astype(np.float16)
    b = rng.integers(-4, 4, (batch_b * k, n)).astype(np.float16)
    batch = max(batch_a, batch_b)
    c = np.full((batch * m, n), -7, np.float32)
    batch_kernel[1](a, b, c, _tiling(m, n, k, batch_a, batch_b), np.zeros(1 << 16, np.uint8),
                    batch_a, batch_b, interpret=interpret)
    return a, b, c


@pytest.mark.parametrize("interpret", MODES)
@pytest.mark.parametrize("m,n,k,batch_a,batch_b", [
    (32, 32, 32, 2, 2),         # tile multiples, one matrix of each per batch
    (40, 24, 20, 1, 3),         # ragged (tails in m, n, k), A broadcast over 3 batches
    (16, 48, 32, 4, 2),         # B broadcast: batch i uses B[i // 2]
], ids=["tiles", "ragged-bcast-a", "bcast-b"])
def test_iterate_batch_matches_numpy(m, n, k, batch_a, batch_b, interpret):
    a, b, c = _run(m, n, k, batch_a, batch_b, interpret)
    batch = max(batch_a, batch_b)
    for i in range(batch):
        ia, ib = i // (batch // batch_a), i // (batch // batch_b)
        ref = a[ia * m:(ia + 1) * m].astype(np.float32) @ b[ib * k:(ib + 1) * k].astype(np.float32)
        np.testing.assert_array_equal(c[i * m:(i + 1) * m], ref, err_msg=f"batch {i}")


@pytest.mark.parametrize("interpret", MODES)
def test_iterate_batch_needs_batches_that_divide(interpret):
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.iterate_batch: batch_a and batch_b "
                                          r"must be >= 1 and one a multiple of the other, got "
                                          r"batch_a=2 batch_b=3"):
        _run(32, 32, 32, 2, 3, interpret)


def test_host_layout_setters_check_their_arguments():
    t = phost.MultiCoreMatmulTiling(phost.get_ascendc_platform())
    with pytest.raises(ValueError, match=r"MultiCoreMatmulTiling.set_a_layout: s must be in "
                                         r"\[1, 2147483647\], got s=0"):
        t.set_a_layout(2, 0, 1, 1, 16)
    with pytest.raises(ValueError, match=r"MultiCoreMatmulTiling.set_batch_num: batch must be in "
                                         r"\[1, 2147483647\], got batch=-1"):
        t.set_batch_num(-1)
    tiling = _tiling(32, 16, 64, 3, 1)
    assert (tiling.a_layout_info_b, tiling.a_layout_info_s, tiling.a_layout_info_d) == (3, 32, 64)
    assert (tiling.b_layout_info_b, tiling.b_layout_info_s, tiling.b_layout_info_d) == (1, 64, 16)
    assert (tiling.c_layout_info_b, tiling.c_layout_info_s1, tiling.c_layout_info_s2) == (3, 32,
                                                                                          16)
    assert tiling.batch_num == 3
