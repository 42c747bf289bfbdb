"""asc.adv.Matmul in a MIX kernel (pyasc tutorials 03 and 05): the AIC of each group serves the
Matmul calls its AIVs send (Ascend C's KfcServer / KfcCommClient, ascendc/adv/kfc.py), in both
modes: results against numpy, and who did the work by the NPU view's per-instance streams (the
cube pipes only on the AICs, the messages as point-to-point flags between the two sides)."""
import json
from collections import Counter

import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc import host
from rt.npu import op_summary_row

from test_adv_matmul import DT, make_tiling, matmul_kernel

CUBE_PIPES = {"CUBE", "MTE1", "FIXPIPE"}


def _profiled(launch):
    with rt.profile(npu=True) as prof:
        launch()
        rt.current_stream().synchronize()
    runs = prof.npu_runs()
    assert len(runs) == 1
    return prof, runs[0]


def _sides(run):
    """Per role: Counter of pipes, names of cross-core rows, mmads."""
    out = {}
    for i, blk in enumerate(run.blocks):
        role = run.roles[i % len(run.roles)]
        c = out.setdefault(role, {"pipes": Counter(), "cross": Counter(), "mmad": 0})
        c["pipes"].update(x.pipe for x in blk)
        c["cross"].update((x.name, x.cross[2]) for x in blk if x.cross)
        c["mmad"] += sum(1 for x in blk if x.name == "mmad")
    return out


CASES = [  # m, n, k, cores, trans_a, trans_b, bias
    (33, 47, 29, 1, False, False, False),       # ragged, one AIV busy, K tail
    (128, 128, 128, 4, False, False, True),     # tile multiples, bias
    (70, 50, 90, 3, True, True, True),          # both transposed, ragged, an idle AIV
]


@pytest.mark.parametrize("kernel_type", ["MIX_AIC_1_2", "MIX_AIC_1_1"])
@pytest.mark.parametrize("case", CASES)
def test_iterate_all_is_served_by_the_aic(interpret, case, kernel_type):
    m, n, k, cores, ta, tb, bias = case
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    bv = rng.standard_normal(n, np.float32)
    c = np.full((m, n), 7.0, np.float32)
    t = make_tiling(m, n, k, DT.DT_FLOAT, cores, ta, tb, bias)
    per_group = 2 if kernel_type == "MIX_AIC_1_2" else 1
    groups = -(-int(t.used_core_num) // per_group)
    _, run = _profiled(lambda: matmul_kernel[groups](
        np.ascontiguousarray(a.T) if ta else a, np.ascontiguousarray(b.T) if tb else b, c, bv,
        t, ta, tb, ta, tb, bias, 0, interpret=interpret, kernel_type=kernel_type))
    ref = a.astype(np.float64) @ b.astype(np.float64) + (bv if bias else 0)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)
    sides = _sides(run)
    # the cube work is on the AICs only; the AIVs post messages and wait for the answers
    assert sides["AIC"]["mmad"] > 0 and sides["AIV"]["mmad"] == 0
    assert not set(sides["AIV"]["pipes"]) & CUBE_PIPES
    assert CUBE_PIPES <= set(sides["AIC"]["pipes"])
    busy = int(t.used_core_num)       # each busy AIV: iterate_all (answered) and end (not)
    assert sides["AIV"]["cross"] == {("cross_core_set_flag", 3): 2 * busy,
                                     ("cross_core_wait_flag", 3): busy}
    assert sides["AIC"]["cross"] == {("cross_core_wait_flag", 3): 2 * busy,
                                     ("cross_core_set_flag", 3): busy}


# ---- tutorial 05's shape: iterate + get_tensor_c into UB through the workspace, LeakyReLU -------

@asc.jit
def leaky_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                 bias: asc.GlobalAddress, alpha: float, tiling: asc.adv.TCubeTiling,
                 workspace: asc.GlobalAddress):
    blk = asc.get_block_idx()
    rows = (tiling.m + tiling.single_core_m - 1) // tiling.single_core_m
    mi = blk % rows
    ni = blk // rows
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    biasg = asc.GlobalTensor()
    ag.set_global_buffer(a + mi * tiling.k_a * tiling.single_core_m)
    bg.set_global_buffer(b + ni * tiling.single_core_n)
    cg.set_global_buffer(c + mi * tiling.n * tiling.single_core_m + ni * tiling.single_core_n)
    biasg.set_global_buffer(bias + ni * tiling.single_core_n)
    pipe = asc.TPipe()
    out_q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=out_q, num=1, len=tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype),
        bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    if blk < tiling.used_core_num:
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.set_bias(biasg)
        tiles_m = tiling.single_core_m // tiling.base_m
        with mm.iterate() as tile:
            out = out_q.alloc_tensor(c.dtype)
            mm.get_tensor_c(out, en_sequential_write=True)
            asc.leaky_relu(out, out, alpha, count=tiling.base_m * tiling.base_n)
            out_q.enque(out)
            out = out_q.deque(c.dtype)
            at = tile % tiles_m * tiling.base_m * tiling.n + tile // tiles_m * tiling.base_n
            asc.data_copy(cg[at:], out, repeat_params=asc.DataCopyParams(
                block_count=tiling.base_m, block_len=tiling.base_n * 4 // 32, src_stride=0,
                dst_stride=(tiling.n - tiling.base_n) * 4 // 32))
            out_q.free_tensor(out)
        mm.end()


def leaky_tiling(m, n, k, cores, base_m, base_n):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT16, False)
    t.set_c_type(host.TPosition.VECCALC, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_dim(cores)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(True)
    t.set_traverse(host.MatrixTraverse.FIRSTM)
    t.set_fix_split(base_m, base_n, -1)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


def _leaky(interpret, m, n, k, cores, groups, kernel_type="MIX_AIC_1_2", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-5, 5, (m, k)).astype(np.float16)
    b = rng.integers(-5, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-5, 5, n).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    t = leaky_tiling(m, n, k, cores, 64, 32)
    ws = np.zeros(1 << 20, np.uint8)
    prof, run = _profiled(lambda: leaky_kernel[groups](a, b, c, bias, 0.01, t, ws,
                                                        interpret=interpret,
                                                        kernel_type=kernel_type))
    ref = a.astype(np.float32) @ b.astype(np.float32) + bias
    np.testing.assert_allclose(c, np.where(ref >= 0, ref, ref * 0.01), rtol=1e-5, atol=1e-5)
    return prof, run, t


@pytest.mark.parametrize("m,n,k,cores,groups", [(128, 64, 64, 2, 1), (256, 96, 80, 4, 3)])
def test_iterate_and_get_tensor_c_are_served_tile_by_tile(interpret, m, n, k, cores, groups):
    _, run, t = _leaky(interpret, m, n, k, cores, groups)
    sides = _sides(run)
    assert sides["AIC"]["mmad"] > 0 and sides["AIV"]["mmad"] == 0
    assert not set(sides["AIV"]["pipes"]) & CUBE_PIPES
    assert {"VECTOR", "MTE3", "MTE2"} <= set(sides["AIV"]["pipes"])
    assert not set(sides["AIC"]["pipes"]) & {"VECTOR", "MTE3"}
    # per busy AIV: one iterate message per tile, one more that finds no tile, and end
    tiles = (t.single_core_m // t.base_m) * (t.single_core_n // t.base_n)
    busy = int(t.used_core_num)
    assert sides["AIV"]["cross"][("cross_core_set_flag", 3)] == busy * (tiles + 2)
    assert sides["AIV"]["cross"][("cross_core_wait_flag", 3)] == busy * (tiles + 1)
    # every answer the AIC gives waits for its fixpipe into the workspace: the AIV's copy of
    # the tile starts after the answer's flag
    tl = run.timeline
    waits = [r for r in tl.records if r[0].cross and r[0].cross[0] == "wait" and
             tl.core_kinds[r[1]] == "AIV"]
    fix_ends = sorted(r[4] for r in tl.records if r[0].pipe == "FIXPIPE")
    assert all(w[3] > fix_ends[0] for w in waits)


def test_the_npu_view_draws_the_messages_as_arrows_and_fills_both_sides(interpret, tmp_path):
    prof, run, _ = _leaky(interpret, 128, 64, 64, 2, 1)
    tl = run.timeline
    row = op_summary_row(tl)
    assert row["aic_mac_ratio"] > 0 and row["aic_fixpipe_ratio"] > 0
    assert row["aiv_vec_ratio"] > 0 and row["aiv_mte3_ratio"] > 0
    doc = json.loads(prof.export_npu(tmp_path)["trace"].read_text())
    arrows = [e for e in doc["traceEvents"]
              if e.get("cat") == "simulated,crossflag" and e["ph"] == "s"]
    names = Counter(e["name"] for e in arrows)
    # 2 tiles per AIV: 3 iterate messages (the last finds none) answered, and end
    assert names == {"Matmul message AIV 0->AIC 0": 4, "Matmul message AIV 1->AIC 0": 4,
                     "Matmul message AIC 0->AIV 0": 3, "Matmul message AIC 0->AIV 1": 3}


def test_interpreted_and_compiled_servers_simulate_to_the_same_cycles():
    cycles = []
    for interpret in (True, False):
        _, run, _ = _leaky(interpret, 128, 64, 64, 2, 1)
        cycles.append((run.timeline.total_cycles, len(run.timeline.records)))
    assert cycles[0] == cycles[1]


# ---- errors ----------------------------------------------------------------------------------

@asc.jit
def aic_calls_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                     tiling: asc.adv.TCubeTiling):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    if asc.ascend_is_aiv():
        asc.adv.register_matmul(pipe, mm, tiling)
    else:               # the AIC using the Matmul itself, not serving it
        mm.init(tiling)
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.iterate_all(cg)


@asc.jit
def no_operand_kernel(a: asc.GlobalAddress, c: asc.GlobalAddress, tiling: asc.adv.TCubeTiling):
    ag = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_b(ag)
    mm.iterate_all(cg)


def test_a_matmul_called_on_the_serving_aic_is_an_error(interpret):
    a = np.ones((16, 16), np.float32)
    t = make_tiling(16, 16, 16, DT.DT_FLOAT, 1)
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.iterate_all: in a MIX kernel the AIC "
                                          r"serves the Matmul \(register_matmul runs its server "
                                          r"loop and returns\), so Matmul calls must come from "
                                          r"the AIVs, got a call on AIC 0"):
        aic_calls_kernel[1](a, a, np.zeros((16, 16), np.float32), t, interpret=interpret,
                            kernel_type="MIX_AIC_1_2")


def test_iterate_all_before_set_tensor_a_is_an_error(interpret):
    a = np.ones((16, 16), np.float32)
    t = make_tiling(16, 16, 16, DT.DT_FLOAT, 1)
    with pytest.raises((rt.AclError, asc.CompileError),
                       match=r"asc.adv.Matmul.iterate_all: set_tensor_a and set_tensor_b must be "
                             r"called first, got a=False b=True"):
        no_operand_kernel[1](a, np.zeros((16, 16), np.float32), t, interpret=interpret,
                             kernel_type="MIX_AIC_1_2")
