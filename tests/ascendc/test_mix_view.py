"""The NPU view of MIX kernels: with rt.profile(npu=True) each instance (the AIC and each AIV of a
group) records its own stream, and the simulator replays them on their own cores with the
cross-core flags as dependencies (a wait starts no earlier than the set(s) that released it ended
plus `cross_core_flag_cycles`); npu_trace.json draws the flags as arrows between cores and the
aic_* / aiv_* columns come from the cores that ran each side. A kernel that is not MIX keeps the
as-if split of its single stream, labelled so."""
import json

import numpy as np
import pytest

import rt
from rt.npu import op_summary_row, pipe_model

import mix_kernels as K

LATENCY = pipe_model("Ascend910B2").cross_core_flag_cycles


def _record(launch):
    with rt.profile(npu=True) as prof:
        launch()
        rt.current_stream().synchronize()
    runs = prof.npu_runs()
    assert len(runs) == 1
    return prof, runs[0]


def _matmul_case(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0).astype(np.float32)
    return a, b, bias, want


def _cross(tl, kind):
    """Records of cross-core instructions of `kind` ("set" / "wait"), by record index."""
    return {n: r for n, r in enumerate(tl.records) if r[0].cross and r[0].cross[0] == kind}


def _xflows(tl):
    """(set record, wait record) of the cross-core flags (Timeline.flows also holds each core's
    own set_flag -> wait_flag pairs)."""
    return [(s, w) for s, w in tl.flows if tl.records[s][0].cross]


def test_the_aiv_wait_starts_at_the_aic_set_end_plus_the_flag_latency(interpret):
    x = np.arange(4, dtype=np.float32)
    z = np.zeros(8, np.float32)
    _, run = _record(lambda: K.handoff_kernel[1](x, z, interpret=interpret))
    np.testing.assert_array_equal(z[:2], [1.0, 2.0])
    assert run.roles == ("AIC", "AIV")
    tl = run.timeline
    assert tl.view == "streams" and tl.core_kinds == {**{c: "AIC" for c in range(24)},
                                                      **{c: "AIV" for c in range(24, 48)}}
    got = [(r[0].name, tl.core_name(r[1]), r[2], r[3], r[4]) for r in tl.records]
    # AIC: get_value, set_value (1 cycle each on SCALAR), the set's issue slot (2-3), the set on
    # FIXPIPE (3-4); AIV: its wait on SCALAR starts at 4 + the flag latency, then 2 scalar ops
    set_end = 4.0
    assert got == [("LocalTensor.get_value", "AIC 0", "SCALAR", 0.0, 1.0),
                   ("LocalTensor.set_value", "AIC 0", "SCALAR", 1.0, 2.0),
                   ("cross_core_set_flag", "AIC 0", "FIXPIPE", 3.0, set_end),
                   ("cross_core_wait_flag", "AIV 0", "SCALAR", set_end + LATENCY,
                    set_end + LATENCY + 1),
                   ("LocalTensor.get_value", "AIV 0", "SCALAR", set_end + LATENCY + 1,
                    set_end + LATENCY + 2),
                   ("LocalTensor.set_value", "AIV 0", "SCALAR", set_end + LATENCY + 2,
                    set_end + LATENCY + 3)]
    # launch: 1 us (1800 cycles) + the MIX head cost 7 us x 1 AIC used / 24 (525 cycles)
    # the flag latency fitted on M11's 1-core rows (docs/npu-model.md §1.5 (h))
    assert LATENCY == 1000 and tl.makespan == 1007.0 and tl.total_cycles == 1007.0 + 1800 + 525
    assert tl.flows == [(2, 3)]


def _matmul_relu(interpret, m=64, n=32, k=32):
    a, b, bias, want = _matmul_case(m, n, k, m)
    groups = -(-m // K.BM)
    y = np.zeros((m, n), np.float32)
    ws = np.full(groups * K.BM * n, np.nan, np.float32)
    zeros = np.zeros(K.BM * 16, np.float16)
    prof, run = _record(lambda: K.matmul_relu_kernel[groups](a, b, bias, y, ws, zeros, m, n, k,
                                                             interpret=interpret))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    return prof, run


def test_each_instance_records_its_own_stream_and_runs_on_its_own_core(interpret):
    _, run = _matmul_relu(interpret)
    assert run.roles == ("AIC", "AIV", "AIV") and len(run.blocks) == 6   # 2 groups x 3 cores
    aic_pipes = {i.pipe for g in (0, 3) for i in run.blocks[g]}
    aiv_pipes = {i.pipe for g in (1, 2, 4, 5) for i in run.blocks[g]}
    assert {"CUBE", "MTE1", "FIXPIPE"} <= aic_pipes and not aic_pipes & {"VECTOR", "MTE3"}
    assert {"VECTOR", "MTE3"} <= aiv_pipes and not aiv_pipes & {"CUBE", "MTE1", "FIXPIPE"}
    tl = run.timeline
    ran = {(tl.core_name(c), r[0].block) for r in tl.records for c in [r[1]]}
    # group g's AIC is AIC g; its AIVs are AIV 2g and 2g + 1 (instances 3g + 1, 3g + 2)
    assert ran == {("AIC 0", 0), ("AIV 0", 1), ("AIV 1", 2), ("AIC 1", 3), ("AIV 2", 4),
                   ("AIV 3", 5)}
    sets, waits = _cross(tl, "set"), _cross(tl, "wait")
    # FULL: each AIC's set releases the wait of each of its AIVs; FREE: the AIC's wait is
    # released by the round of both its AIVs' sets (an arrow from each)
    assert len(sets) == 2 + 4 and len(waits) == 4 + 2 and len(_xflows(tl)) == 4 + 4
    for s, w in _xflows(tl):
        assert s in sets and w in waits
        assert sets[s][1] != waits[w][1]
        assert waits[w][3] >= sets[s][4] + LATENCY
    for w in waits:       # each wait starts exactly at the latest of its sets' ends + latency
        assert waits[w][3] == max(sets[s][4] for s, ww in _xflows(tl) if ww == w) + LATENCY


def test_interpreted_and_compiled_streams_simulate_to_the_same_cycles():
    cycles = []
    for interpret in (True, False):
        _, run = _matmul_relu(interpret)
        cycles.append((run.timeline.total_cycles, len(run.timeline.records)))
    assert cycles[0] == cycles[1]


def test_npu_trace_draws_the_flags_as_arrows_between_aic_and_aiv(tmp_path, interpret):
    prof, run = _matmul_relu(interpret)
    paths = prof.export_npu(tmp_path)
    doc = json.loads(paths["trace"].read_text())
    ev = doc["traceEvents"]
    arrows = [e for e in ev if e.get("cat") == "simulated,crossflag"]
    starts = {e["id"]: e for e in arrows if e["ph"] == "s"}
    ends = {e["id"]: e for e in arrows if e["ph"] == "f"}
    assert len(starts) == len(ends) == 8
    names = {e["name"] for e in starts.values()}
    assert "cross-core flag 1 mode 2 AIC 0->AIV 1" in names
    assert "cross-core flag 2 mode 2 AIV 3->AIC 1" in names
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    for i, s in starts.items():
        f = ends[i]
        assert {procs[s["pid"]].split()[0], procs[f["pid"]].split()[0]} == {"AIC", "AIV"}
        assert f["ts"] > s["ts"]
    labels = [e["args"]["labels"] for e in ev if e["name"] == "process_labels"]
    assert all(lab.endswith("MIX kernel: each instance's own stream") for lab in labels)
    assert doc["otherData"]["roles"] == ["AIC", "AIV", "AIV"]
    assert doc["otherData"]["core_kinds"]["AIV 3"] == "core1.veccore1"


def test_aic_and_aiv_columns_come_from_the_side_that_did_the_work(interpret):
    _, run = _matmul_relu(interpret)
    tl = run.timeline
    row = op_summary_row(tl)
    for col in ("aic_mac_ratio", "aic_mte1_ratio", "aic_mte2_ratio", "aic_fixpipe_ratio",
                "aiv_vec_ratio", "aiv_scalar_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio"):
        assert row[col] > 0, col
    aic = [c for c, k in tl.core_kinds.items() if k == "AIC" and c in (0, 1)]
    aiv = [c for c, k in tl.core_kinds.items() if k == "AIV" and c in range(24, 28)]
    # the ratios are exactly the busy cycles of that side's cores over their total time
    total = tl.total_cycles
    assert row["aic_mac_ratio"] == sum(tl.busy[c]["CUBE"] for c in aic) / (2 * total)
    assert row["aiv_vec_ratio"] == sum(tl.busy[c]["VECTOR"] for c in aiv) / (4 * total)
    assert all(tl.busy[c]["VECTOR"] == tl.busy[c]["MTE3"] == 0 for c in aic)
    assert all(tl.busy[c]["CUBE"] == tl.busy[c]["FIXPIPE"] == 0 for c in aiv)


@pytest.mark.parametrize("m,groups", [(192, 1), (203, 3)])
def test_a_ring_with_two_flags_replays_without_deadlock_and_overlaps_the_sides(interpret, m,
                                                                               groups):
    n, k = 32, 32
    a, b, bias, want = _matmul_case(m, n, k, m)
    y = np.zeros((m, n), np.float32)
    ws = np.full(groups * 2 * K.BM * n, np.nan, np.float32)
    zeros = np.zeros(K.BM * 16, np.float16)
    _, run = _record(lambda: K.matmul_ring_kernel[groups](a, b, bias, y, ws, zeros, m, n, k,
                                                          interpret=interpret))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    tl = run.timeline
    tiles = -(-m // K.BM)
    sets, waits = _cross(tl, "set"), _cross(tl, "wait")
    # per tile: the AIC waits FREE and sets FULL, each AIV waits FULL and sets FREE; each AIV
    # also sets FREE twice up front (the two credits of the double-buffered workspace), which
    # the AIC takes back at its end
    assert len(waits) == 3 * tiles + 2 * groups and len(sets) == 3 * tiles + 4 * groups
    # every wait released (FULL: one arrow per AIV; FREE: one per AIV of the round)
    assert sorted({w for _, w in _xflows(tl)}) == sorted(waits)
    if groups == 1:     # double buffering: the AIC computes tile 1 during tile 0's epilogue
        mmads = sorted(r[3] for r in tl.records if r[0].name == "mmad")
        full0_set = min(r[4] for r in sets.values() if r[0].cross[1] == K.FULL)
        full0_wait = min(r[3] for r in waits.values() if r[0].cross[1] == K.FULL)
        epilogue0_end = min(r[4] for r in sets.values() if r[0].cross[1] == K.FREE and
                            tl.core_kinds[r[1]] == "AIV" and r[3] > full0_wait)
        assert full0_wait == full0_set + LATENCY
        assert full0_set < mmads[1] < epilogue0_end


def test_a_kernel_that_is_not_mix_keeps_the_labelled_as_if_split(tmp_path):
    m, n, k = 64, 32, 32
    a, b, bias, want = _matmul_case(m, n, k, 5)
    y = np.zeros((m, n), np.float32)
    ws = np.full(2 * K.BM * n, np.nan, np.float32)
    prof, run = _record(lambda: K.fused_matmul_relu_kernel[2](
        a, b, bias, y, ws, np.zeros(K.BM * 16, np.float16), m, n, k, interpret=True))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert run.roles == () and len(run.blocks) == 2          # one stream per block
    tl = run.timeline
    assert tl.view == "as-if split" and tl.mix and tl.handoffs     # GM hand-offs, no flags
    assert not any(r[0].cross for r in tl.records)
    doc = json.loads(prof.export_npu(tmp_path)["trace"].read_text())
    labels = [e["args"]["labels"] for e in doc["traceEvents"] if e["name"] == "process_labels"]
    assert len(labels) == 4 and all(lab.endswith(
        "as-if AIC/AIV split of one stream per block (not a MIX kernel)") for lab in labels)
    assert doc["otherData"]["view"].startswith("as-if AIC/AIV split")
    row = op_summary_row(tl)
    assert row["aic_mac_ratio"] > 0 and row["aiv_vec_ratio"] > 0


def test_ib_flags_serialise_the_blocks_of_the_replay(interpret):
    n = 4
    x = np.arange(1, n + 1, dtype=np.float32)
    ws = np.zeros(8 * n, np.int32)
    z = np.zeros(n, np.float32)
    _, run = _record(lambda: K.ib_chain_kernel[n](x, ws, z, interpret=interpret))
    np.testing.assert_array_equal(z, np.cumsum(x))
    assert run.roles == ("AIV",)
    tl = run.timeline
    assert tl.view == "streams" and set(tl.core_kinds.values()) == {"AIV"}
    sets = {r[0].cross[1]: r for r in tl.records if r[0].cross and r[0].cross[0] == "ib_set"}
    waits = {r[1]: r for r in tl.records if r[0].cross and r[0].cross[0] == "ib_wait"}
    # block b waits for block b - 1's word: its wait starts LAT after that set ended
    assert sorted(waits) == [1, 2, 3] and sorted(sets) == [0, 1, 2]
    assert [sets[b][1] for b in (0, 1, 2)] == [0, 1, 2]       # block b on AIV b
    for b in (1, 2, 3):
        assert waits[b][3] == sets[b - 1][4] + LATENCY


@pytest.mark.parametrize("mode0", [0, 1])
def test_sync_all_and_mode_0_release_every_aiv_of_the_launch_together(interpret, mode0):
    groups = 3
    x = np.arange(2 * groups, dtype=np.float32)
    z = np.zeros(4 * groups, np.float32)
    _, run = _record(lambda: K.phases_kernel[groups](x, z, mode0, interpret=interpret))
    np.testing.assert_array_equal(z[2 * groups:], (x + 1) + np.roll(x + 1, -1))
    tl = run.timeline
    name = "cross_core_wait_flag" if mode0 else "sync_all"
    after = [r for r in tl.records if r[0].name == name]
    assert len(after) == 2 * groups and {tl.core_kinds[r[1]] for r in after} == {"AIV"}
    if mode0:           # every AIV's wait starts LAT after the last AIV's set ended
        last = max(r[4] for r in tl.records if r[0].name == "cross_core_set_flag")
        assert {r[3] for r in after} == {last + LATENCY}
        assert len(_xflows(tl)) == (2 * groups) ** 2      # an arrow from every set to every wait
    else:               # sync_all: all AIVs leave together
        assert len({r[4] for r in after}) == 1
