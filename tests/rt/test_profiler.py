"""rt.profile: task records, per-core ranges, Chrome trace export, summary table, counters hook."""
import importlib
import json
import threading

import numpy as np
import pytest

import rt

from rt_test_helpers import PlainBinary

L = importlib.import_module("rt.launch")


class Binary(PlainBinary):
    def __init__(self, name):
        self.name = name

    def run_blocks(self, first, last, block_dim, args):
        pass


class CountingBinary(Binary):
    """A binary that declares `counters`: rt stores its `last_counters` in the record's args."""
    counters = ("mte2_bytes", "vec_ops")

    def __init__(self):
        super().__init__("counted")
        self.last_counters = {}

    def run_blocks(self, first, last, block_dim, args):
        self.last_counters = {"mte2_bytes": 4096, "vec_ops": 12}


@pytest.fixture
def cores2():
    L.set_core_count(2).solo_short = False     # one range per core (the records' layout)
    yield
    L.set_core_count()


def run_workload():
    s = rt.Stream()
    host = rt.malloc_host(4096)
    dev = rt.malloc(4096)
    start, end = rt.Event(), rt.Event()
    start.record(s)
    rt.memcpy_async(dev, host, 4096, rt.MemcpyKind.HOST_TO_DEVICE, s)
    rt.memset_async(dev, 4096, 0, 1024, s)
    rt.launch(Binary("my_kernel"), 4, (), s)
    rt.launch(Binary("my_kernel"), 4, (), s)
    s.launch_host_func(lambda: None)
    tid = threading.get_ident()
    rt.subscribe_report(tid, s)
    rt.launch_callback(lambda d: None, None, rt.callback.ACL_CALLBACK_NO_BLOCK, s)
    end.record(s)
    s.synchronize()
    rt.process_report(1000)
    rt.unsubscribe_report(tid, s)
    rt.free(dev)
    rt.free_host(host)
    return s


def test_records_every_task_kind(dev0, cores2):
    with rt.profile() as prof:
        s = run_workload()
    kinds = [r.kind for r in prof.records]
    assert kinds.count("kernel") == 2
    assert {"memcpy", "memset", "event", "host_func", "callback"} <= set(kinds)
    for r in prof.records:
        assert r.device == 0 and r.stream == s.id and r.end_ns >= r.start_ns
    copy = next(r for r in prof.records if r.kind == "memcpy")
    assert copy.name == "memcpy_H2D" and copy.nbytes == 4096 and copy.args == {"kind": "H2D"}
    assert next(r for r in prof.records if r.kind == "memset").nbytes == 1024
    k = next(r for r in prof.records if r.kind == "kernel")
    assert k.name == "my_kernel" and k.block_dim == 4
    assert [(first, last) for _, first, last, _, _ in k.ranges] == [(0, 2), (2, 4)]
    assert all(0 <= core < 2 and k.start_ns <= t0 <= t1 <= k.end_ns
               for core, _, _, t0, t1 in k.ranges)
    starts = [r.start_ns for r in prof.records if r.kind != "callback"]
    assert starts == sorted(starts)                      # one stream: in order


def test_nothing_recorded_outside_the_block(dev0):
    with rt.profile() as prof:
        pass
    rt.launch(Binary("k"), 1, ())
    rt.default_stream().synchronize()
    assert prof.records == []


def test_chrome_trace_has_stream_and_core_tracks(dev0, cores2, tmp_path):
    with rt.profile() as prof:
        s = run_workload()
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.load(open(path))
    events = trace["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[(0, s.id)] == f"stream {s.id}"
    core_tids = [tid for (_, tid), n in names.items() if n.startswith("core ")]
    assert core_tids and all(tid >= 1_000_000 for tid in core_tids)
    xs = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in xs)
    kern = [e for e in xs if e["name"] == "my_kernel"]
    assert len(kern) == 2 and kern[0]["args"]["block_dim"] == 4
    blocks = [e for e in xs if e["cat"] == "block_range"]
    assert {e["name"] for e in blocks} == {"my_kernel [0, 2)", "my_kernel [2, 4)"}
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)


def test_table_sums_by_name(dev0):
    with rt.profile() as prof:
        for _ in range(3):
            rt.launch(Binary("alpha"), 2, ())
        rt.launch(Binary("beta"), 1, ())
        rt.default_stream().synchronize()
    table = prof.table()
    lines = table.splitlines()
    assert lines[0].split() == ["Name", "Kind", "Calls", "Total", "us", "Avg", "us", "Min", "us",
                                "Max", "us", "Bytes"]
    alpha = next(line for line in lines if line.startswith("alpha"))
    assert alpha.split()[1:3] == ["kernel", "3"]
    assert next(line for line in lines if line.startswith("beta")).split()[2] == "1"
    assert prof.table(sort_by="name").splitlines()[2].startswith("alpha")


def test_counters_hook_fills_record_args(dev0):
    with rt.profile() as prof:
        rt.launch(CountingBinary(), 1, ())
        rt.launch(Binary("plain"), 1, ())
        rt.default_stream().synchronize()
    counted, plain = prof.records
    assert counted.args == {"mte2_bytes": 4096, "vec_ops": 12} and plain.args == {}


def test_failed_task_is_recorded_with_its_error(dev0):
    s = rt.Stream()
    with rt.profile() as prof:
        s.launch_host_func(lambda: 1 / 0)
        with pytest.raises(rt.AclError):
            s.synchronize()
    (r,) = prof.records
    assert r.error.startswith("ZeroDivisionError")


def test_two_profilers_see_the_same_tasks(dev0):
    with rt.profile() as outer:
        with rt.profile() as inner:
            rt.launch(Binary("k"), 1, ())
            rt.default_stream().synchronize()
        rt.launch(Binary("k2"), 1, ())
        rt.default_stream().synchronize()
    assert [r.name for r in inner.records] == ["k"]
    assert [r.name for r in outer.records] == ["k", "k2"]
    assert np.isfinite(outer.records[0].duration_us)


def test_cli_info_table(capsys, monkeypatch):
    import rt.__main__ as cli
    from collections import deque
    # AICore(%) spans the recent launches of the process: the earlier tests' ones, minutes old,
    # would dilute the demo's to 0.0
    monkeypatch.setattr(L, "RECENT", deque(maxlen=L.RECENT.maxlen))
    assert cli.main(["info", "--demo"]) == 0
    out = capsys.readouterr().out.splitlines()
    widths = {len(line) for line in out}
    assert len(widths) == 1                              # a rectangular table
    assert "npu-smi (ascend-emu" in out[1] and "CPU core workers:" in out[1]
    row0 = next(line for line in out if line.startswith("| 0 "))
    cells = [c.strip() for c in row0.strip("|").split("|")]
    assert cells[1] == "Ascend910B2" and cells[2] == "OK"
    assert float(cells[3]) > 0.0                         # the demo's launches
    used, total = (int(x) for x in cells[4].split(" / "))
    assert used >= 32 and total == 65536
    assert sum(1 for line in out if line.startswith("| ") and line[2].isdigit()) == 8
