"""rt.npu.export: the msOpProf-style outputs of a simulated Timeline on synthetic
instruction lists, and once through `asc.npu_trace(..., out=)` on the add kernel."""
import csv
import importlib.util
import json
import sys

import numpy as np
import pytest

import ascendc as asc

from rt.npu import (PIPES, Instr, code_exe, format_top_lines, op_summary_row, pipe_model,
                    simulate, write_all, write_code_exe, write_pipe_utilization, write_trace)

M = pipe_model("Ascend910B2")
SOC = "Ascend910B2"
KEY_IN, KEY_OUT = ("MTE2", "VECTOR", 0), ("VECTOR", "MTE3", 0)
MSPROF_KEYS = {"aicore_time(us)", "aic_total_cycles", "aic_mac_ratio", "aic_mte1_ratio",
               "aic_mte2_ratio", "aic_fixpipe_ratio", "aiv_time(us)", "aiv_total_cycles",
               "aiv_vec_ratio", "aiv_scalar_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio",
               "l2_cache_hit_rate"}


def vector_block(b, tiles=2, exps=1):
    """copy in, flag, `exps` exp's at k.py:20 and one add at k.py:21, flag, copy out."""
    out = []
    for _ in range(tiles):
        out += [Instr(b, "MTE2", "data_copy", bytes=8192, path="GM->UB", src="k.py:10"),
                Instr(b, "MTE2", "set_flag", set_flag=KEY_IN, src="k.py:11"),
                Instr(b, "VECTOR", "wait_flag", wait_flag=KEY_IN, src="k.py:12")]
        out += [Instr(b, "VECTOR", "exp", bytes=8192, repeats=32, elements=2048,
                      src="k.py:20")] * exps
        out += [Instr(b, "VECTOR", "add", bytes=8192, repeats=32, elements=2048, src="k.py:21"),
                Instr(b, "VECTOR", "set_flag", set_flag=KEY_OUT, src="k.py:22"),
                Instr(b, "MTE3", "wait_flag", wait_flag=KEY_OUT, src="k.py:23"),
                Instr(b, "MTE3", "data_copy", bytes=8192, path="UB->GM", src="k.py:24")]
    return out


def cube_block(b):
    return [Instr(b, "MTE2", "data_copy", bytes=32768, path="GM->L1", src="m.py:5"),
            Instr(b, "MTE2", "set_flag", set_flag=("MTE2", "MTE1", 0)),
            Instr(b, "MTE1", "wait_flag", wait_flag=("MTE2", "MTE1", 0)),
            Instr(b, "MTE1", "load_data", bytes=32768, path="L1->L0A", src="m.py:6"),
            Instr(b, "MTE1", "set_flag", set_flag=("MTE1", "CUBE", 0)),
            Instr(b, "CUBE", "wait_flag", wait_flag=("MTE1", "CUBE", 0)),
            Instr(b, "CUBE", "mmad", macs=128 ** 3, shape=(128, 128, 128), dtype_bytes=2,
                  src="m.py:7"),
            Instr(b, "CUBE", "set_flag", set_flag=("CUBE", "FIXPIPE", 0)),
            Instr(b, "FIXPIPE", "wait_flag", wait_flag=("CUBE", "FIXPIPE", 0)),
            Instr(b, "FIXPIPE", "fixpipe", bytes=65536, path="L0C->GM", src="m.py:8")]


@pytest.fixture(scope="module")
def tl():
    return simulate([vector_block(b, exps=1 + b) for b in range(3)], M, 2)


def test_trace_has_a_lane_per_pipe_a_slice_per_instruction_and_flag_arrows(tl, tmp_path):
    doc = json.loads(write_trace(tl, tmp_path / "t.json", SOC).read_text())
    assert doc["displayTimeUnit"] == "ns" and doc["otherData"]["simulated"] is True
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    # a vector-only kernel on a separated SoC runs on vector cores, named as msOpProf groups them
    assert procs == {0: "AIV 0 (simulated Ascend910B2)", 1: "AIV 1 (simulated Ascend910B2)"}
    labels = {e["pid"]: e["args"]["labels"] for e in ev if e["name"] == "process_labels"}
    assert labels[1] == "simulated Ascend910B2; vector core; msOpProf core0.veccore1"
    aiv_lanes = [(PIPES.index(p), p) for p in ("SCALAR", "VECTOR", "MTE2", "MTE3")]
    for c in procs:
        lanes = [(e["tid"], e["args"]["name"]) for e in ev
                 if e["name"] == "thread_name" and e["pid"] == c]
        assert sorted(lanes) == aiv_lanes
        order = {e["tid"]: e["args"]["sort_index"] for e in ev
                 if e["name"] == "thread_sort_index" and e["pid"] == c}
        assert order == {i: i for i, _ in aiv_lanes}
    xs = [e for e in ev if e["ph"] == "X" and e["cat"] == "simulated"]
    assert len(xs) == len(tl.records)
    copies = 0
    for e, (ins, core, pipe, start, end), held in zip(xs, tl.records, tl.held):
        assert (e["name"], e["pid"], e["tid"]) == (ins.name, core, PIPES.index(pipe))
        assert e["ts"] == pytest.approx(start / M.clock_hz * 1e6)
        # dur: the time the pipe was held; a copy's latency after that is in the args
        assert e["dur"] == pytest.approx(held / M.clock_hz * 1e6)
        if ins.path:
            copies += 1
            lat = M.dma_latency[ins.path]
            assert end - start == pytest.approx(held + lat)
            assert e["args"]["latency_cycles"] == pytest.approx(lat)
            assert e["args"]["done_us"] == pytest.approx(end / M.clock_hz * 1e6)
        else:
            assert held == end - start and "latency_cycles" not in e["args"]
        assert e["args"]["src"] == ins.src and e["args"]["bytes"] == ins.bytes
        assert e["args"]["repeats"] == ins.repeats and e["args"]["elements"] == ins.elements
    assert copies == 3 * 2 * 2
    issues = [e for e in ev if e["ph"] == "X" and e["cat"] == "simulated,issue"]
    assert len(issues) == len(tl.issues) and {e["tid"] for e in issues} == {0}
    assert doc["otherData"]["l2"] == {"hit_bytes": tl.l2_hit_bytes,
                                      "miss_bytes": tl.l2_miss_bytes,
                                      "write_bytes": tl.l2_write_bytes,
                                      "writeback_bytes": tl.l2_writeback_bytes,
                                      "hit_rate": tl.l2_hit_ratio}
    # one arrow per wait_flag: from its set_flag's slice to its own, same id
    n_waits = sum(1 for r in tl.records if r[0].wait_flag)
    assert len(tl.flows) == n_waits == 3 * 2 * 2
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert set(starts) == set(ends) == set(range(n_waits))
    for n, (si, wi) in enumerate(tl.flows):
        s, w = tl.records[si], tl.records[wi]
        assert s[0].set_flag == w[0].wait_flag and s[1] == w[1] and s[4] <= w[3]
        assert (starts[n]["pid"], starts[n]["tid"]) == (s[1], PIPES.index(s[2]))
        assert (ends[n]["pid"], ends[n]["tid"], ends[n]["bp"]) == (w[1], PIPES.index(w[2]), "e")
        assert ends[n]["ts"] == pytest.approx(w[3] / M.clock_hz * 1e6)


def test_flows_pair_sets_and_waits_first_in_first_out():
    key = ("MTE2", "VECTOR", 0)
    block = [Instr(0, "MTE2", "data_copy", bytes=2048, path="GM->UB"),
             Instr(0, "MTE2", "set_flag", set_flag=key),
             Instr(0, "MTE2", "data_copy", bytes=65536, path="GM->UB"),
             Instr(0, "MTE2", "set_flag", set_flag=key),
             Instr(0, "VECTOR", "wait_flag", wait_flag=key),
             Instr(0, "VECTOR", "wait_flag", wait_flag=key)]
    t = simulate([block], M, 1)
    sets = [i for i, r in enumerate(t.records) if r[0].set_flag]
    waits = [i for i, r in enumerate(t.records) if r[0].wait_flag]
    assert t.flows == list(zip(sets, waits))


def test_pipe_utilization_ratios_are_busy_over_total(tl, tmp_path):
    with write_pipe_utilization(tl, tmp_path / "p.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["core", "pipe", "busy_time(us)", "total_time(us)", "ratio",
                             "busy_cycles", "total_cycles", "soc"]
    assert [(r["core"], r["pipe"]) for r in rows] == \
        [(c, p) for c in ("0", "1", "all") for p in PIPES]
    assert {r["soc"] for r in rows} == {"simulated Ascend910B2"}
    for r in rows:
        busy, total = float(r["busy_time(us)"]), float(r["total_time(us)"])
        assert float(r["ratio"]) == pytest.approx(busy / total, rel=1e-5, abs=1e-9)
        if r["core"] != "all":
            assert float(r["busy_cycles"]) == pytest.approx(tl.busy[int(r["core"])][r["pipe"]])
            assert total == pytest.approx(tl.us)
        else:
            assert float(r["busy_cycles"]) == pytest.approx(tl.pipe_busy(r["pipe"]))
            assert total == pytest.approx(2 * tl.us)
    assert 0 < float(next(r for r in rows if r["pipe"] == "MTE2")["ratio"]) < 1


def test_code_exe_sums_to_the_pipes_busy_cycles_and_ranks_lines(tl, tmp_path):
    rows = code_exe(tl)
    for p in PIPES:
        assert sum(r[f"{p}_cycles"] for r in rows) == pytest.approx(tl.pipe_busy(p))
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    totals = [r["total_cycles"] for r in rows]
    assert totals == sorted(totals, reverse=True)
    exp = next(r for r in rows if r["src"] == "k.py:20")
    assert (exp["file"], exp["line"], exp["instructions"]) == ("k.py", 20, 2 * (1 + 2 + 3))
    assert exp["VECTOR_cycles"] > 0 and exp["SCALAR_cycles"] == 12 * M.scalar_issue_cycles
    # the most expensive line is the one with the largest sum of its instructions' slots (the
    # time each held its pipe: a copy's latency after the pipe is free does not count)
    cost = {}
    for (ins, _, _, _, _), held in zip(tl.records, tl.held):
        cost[ins.src] = cost.get(ins.src, 0) + held
    for ins, _, s, e in tl.issues:
        cost[ins.src] = cost.get(ins.src, 0) + e - s
    assert rows[0]["src"] == max(cost, key=cost.get)
    with write_code_exe(tl, tmp_path / "c.csv").open() as f:
        written = list(csv.DictReader(f))
    assert [r["src"] for r in written] == [r["src"] for r in rows]
    table = format_top_lines(tl, n=3)
    lines = table.splitlines()
    assert "simulated Ascend910B2" in lines[0] and len(lines) == 2 + 3
    assert lines[1].split()[:2] == ["file", "line"]
    top = lines[2].split()
    assert top[:2] == [rows[0]["file"], str(rows[0]["line"])]
    assert top[-1] == max(PIPES, key=lambda p: rows[0][f"{p}_cycles"])


def test_op_summary_row_has_msprofs_columns():
    vec = simulate([vector_block(0)], M, 1)
    row = op_summary_row(vec, SOC)
    assert set(row) == MSPROF_KEYS
    assert row["aicore_time(us)"] == 0 and row["aic_mac_ratio"] == 0   # no cube work
    assert row["aiv_time(us)"] == pytest.approx(vec.us)
    assert row["aiv_total_cycles"] == pytest.approx(vec.total_cycles)
    assert row["aiv_vec_ratio"] == pytest.approx(vec.pipe_busy("VECTOR") / vec.total_cycles)
    assert row["aiv_mte3_ratio"] == pytest.approx(vec.pipe_busy("MTE3") / vec.total_cycles)
    assert row["l2_cache_hit_rate"] == vec.l2_hit_ratio
    cube = simulate([cube_block(b) for b in range(2)], M, 2)
    row = op_summary_row(cube, SOC)
    assert set(row) == MSPROF_KEYS and row["aiv_time(us)"] == 0
    assert row["aic_total_cycles"] == pytest.approx(2 * cube.total_cycles)
    for key, pipe in (("aic_mac_ratio", "CUBE"), ("aic_mte1_ratio", "MTE1"),
                      ("aic_mte2_ratio", "MTE2"), ("aic_fixpipe_ratio", "FIXPIPE")):
        assert row[key] == pytest.approx(cube.pipe_busy(pipe) / (2 * cube.total_cycles))
        assert 0 < row[key] < 1


def test_write_all_writes_the_three_files_and_the_pngs_with_matplotlib(tl, tmp_path):
    paths = write_all(tl, tmp_path / "out", SOC)
    names = {"npu_trace.json", "PipeUtilization.csv", "code_exe.csv"}
    if importlib.util.find_spec("matplotlib") is not None:
        names |= {"roofline.png", "pipe_utilization.png"}
    assert {p.name for p in paths.values()} == names
    assert all(p.is_file() and p.parent == tmp_path / "out" for p in paths.values())


def test_write_all_works_without_matplotlib(tl, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib fails
    paths = write_all(tl, tmp_path / "out", SOC)
    assert set(paths) == {"trace", "pipe_utilization", "code_exe"}


def test_a_mix_trace_groups_cube_cores_then_vector_cores_with_hand_off_arrows(tmp_path):
    """A MIX launch on 2 AI Cores: each block's cube part on an AIC, its vector part on an AIV;
    the trace lists AIC 0, AIC 1, then AIV 0, AIV 1, and draws the GM hand-offs."""
    blocks = []
    for b in range(2):
        out = (b * 65536, (b + 1) * 65536)
        blocks.append(cube_block(b)[:-1] + [
            Instr(b, "FIXPIPE", "fixpipe", bytes=65536, path="L0C->GM", gm=out, src="m.py:8"),
            Instr(b, "MTE2", "data_copy", bytes=8192, path="GM->UB", gm=(out[0], out[0] + 8192),
                  src="m.py:9"),
            Instr(b, "MTE2", "set_flag", set_flag=KEY_IN),
            Instr(b, "VECTOR", "wait_flag", wait_flag=KEY_IN),
            Instr(b, "VECTOR", "exp", bytes=8192, repeats=32, elements=2048, src="m.py:10")])
    t = simulate(blocks, M, 2)
    assert t.mix and t.core_kinds == {0: "AIC", 1: "AIC", 2: "AIV", 3: "AIV"}
    doc = json.loads(write_trace(t, tmp_path / "t.json", SOC).read_text())
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"].split(" (")[0] for e in ev
             if e["name"] == "process_name"}
    assert procs == {0: "AIC 0", 1: "AIC 1", 2: "AIV 0", 3: "AIV 1"}
    order = sorted(procs, key=lambda c: next(e["args"]["sort_index"] for e in ev if
                                             e["name"] == "process_sort_index" and e["pid"] == c))
    assert order == [0, 1, 2, 3]
    lanes = {c: {e["args"]["name"] for e in ev if e["name"] == "thread_name" and e["pid"] == c}
             for c in procs}
    assert lanes[0] == {"SCALAR", "CUBE", "MTE1", "MTE2", "FIXPIPE"}
    assert lanes[2] == {"SCALAR", "VECTOR", "MTE2", "MTE3"}
    labels = {e["pid"]: e["args"]["labels"] for e in ev if e["name"] == "process_labels"}
    as_if = "; as-if AIC/AIV split of one stream per block (not a MIX kernel)"
    assert labels[1].endswith("cube core; msOpProf core1.cubecore0" + as_if)
    assert labels[3].endswith("vector core; msOpProf core1.veccore0" + as_if)
    assert doc["otherData"]["view"] == as_if[2:] and t.view == "as-if split"
    assert doc["otherData"]["core_kinds"] == {"AIC 0": "core0.cubecore0",
                                              "AIC 1": "core1.cubecore0",
                                              "AIV 0": "core0.veccore0", "AIV 1": "core1.veccore0"}
    hand = [e for e in ev if e.get("cat") == "simulated,handoff"]
    assert len(t.handoffs) == 2 and len(hand) == 4
    assert {e["name"] for e in hand} == {"GM hand-off AIC 0->AIV 0", "GM hand-off AIC 1->AIV 1"}
    for pi, ci in t.handoffs:
        p, c = t.records[pi], t.records[ci]
        assert p[0].name == "fixpipe" and c[0].name == "data_copy"
        assert c[3] == p[4] + M.cross_core_flag_cycles
    row = op_summary_row(t, SOC)
    assert row["aic_total_cycles"] == row["aiv_total_cycles"] == 2 * t.total_cycles
    assert row["aic_mac_ratio"] == pytest.approx(t.pipe_busy("CUBE") / (2 * t.total_cycles))
    assert row["aiv_vec_ratio"] == pytest.approx(t.pipe_busy("VECTOR") / (2 * t.total_cycles))
    assert row["aiv_mte2_ratio"] == pytest.approx(
        sum(t.busy[c]["MTE2"] for c in (2, 3)) / (2 * t.total_cycles))


@asc.jit
def double_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """One block, one tile: z = x + x through a VECIN and a VECOUT queue."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, n)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qx, 1, n * x.dtype.sizeof())
    pipe.init_buffer(qz, 1, n * z.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    asc.data_copy(xl, xg, n)
    qx.enque(xl)
    xl = qx.deque(x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.add(zl, xl, xl, n)
    qz.enque(zl)
    qx.free_tensor(xl)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, n)
    qz.free_tensor(zl)


def test_npu_trace_out_writes_the_files_for_a_kernel(tmp_path):
    x = np.arange(256, dtype=np.float32)
    z = np.zeros_like(x)
    tl = asc.npu_trace(double_kernel, 1, x, z, 256, out=tmp_path / "prof")
    np.testing.assert_array_equal(z, 2 * x)
    for name in ("npu_trace.json", "PipeUtilization.csv", "code_exe.csv"):
        assert (tmp_path / "prof" / name).is_file()
    doc = json.loads((tmp_path / "prof" / "npu_trace.json").read_text())
    assert sum(e["ph"] == "X" and e["cat"] == "simulated" for e in doc["traceEvents"]) == \
        len(tl.records) > 0
    assert doc["otherData"]["soc"] == tl.soc
    assert all(r["file"] == __file__ for r in code_exe(tl))
