"""Collectives as stream tasks: asynchronous, ordered by events and stream waits like kernels
(checked with the tasks' and events' recorded timestamps), profiled; and failures: a rank that
never takes part gives HCCL_E_TIMEOUT (HCCL_EXEC_TIMEOUT / HCCL_CONNECT_TIMEOUT), never a hang."""
import threading
import time

import numpy as np
import pytest

import rt
from rt import hccl
from rt.hccl import HcclResult


def test_collective_after_wait_event_starts_after_the_event(ranks):
    R = ranks(2)
    gate = threading.Event()
    side = rt.Stream()                                   # device 0, not a rank's stream
    xs = R.put([np.zeros(1000, np.float32), np.ones(1000, np.float32)])
    ys = R.empty(1000, np.float32)
    # on `side`: wait for the gate, then write rank 0's input, then record e
    side.launch_host_func(gate.wait)
    fill = rt.to_device(np.full(1000, 41, np.float32), device=0)
    rt.memcpy_async(xs[0].ptr, fill.ptr, fill.nbytes, rt.MemcpyKind.DEVICE_TO_DEVICE, side)
    e = rt.Event()
    e.record(side)
    R.streams[0].wait_event(e)
    tasks = [c.all_reduce(x, y, stream=s) for c, s, x, y in zip(R.comms, R.streams, xs, ys)]
    assert not tasks[0].done and not tasks[1].done       # enqueued only: both wait for e
    assert not e.query()
    gate.set()
    got = R.get(ys)
    assert tasks[0].start_ns >= e.timestamp_ns           # rank 0 started after the event
    assert tasks[1].end_ns >= tasks[0].start_ns          # rank 1 could not finish without it
    for y in got:
        np.testing.assert_array_equal(y, 42)             # the copy before e was seen


def test_collective_is_ordered_with_kernels_copies_and_callbacks_on_its_stream(ranks):
    R = ranks(2)
    xs = R.put([np.arange(64, dtype=np.int32)] * 2)
    stamps = {}
    for r, (c, s, x) in enumerate(zip(R.comms, R.streams, xs)):
        s.launch_host_func(lambda r=r: stamps.__setitem__(("before", r), time.perf_counter_ns()))
        c.all_reduce(x, x, stream=s)
        s.launch_host_func(lambda r=r: stamps.__setitem__(("after", r), time.perf_counter_ns()))
    got = R.get(xs)
    for y in got:
        np.testing.assert_array_equal(y, 2 * np.arange(64))
    for r in range(2):
        assert stamps[("before", r)] <= stamps[("after", r)]
        # the other rank's collective could only finish after this rank's had started
        assert stamps[("after", 1 - r)] >= stamps[("before", r)]


def test_barrier_holds_every_rank_until_the_last_arrives(ranks):
    R = ranks(3)
    gate = threading.Event()
    R.streams[2].launch_host_func(gate.wait)             # rank 2 is late
    tasks = [hccl.barrier(comm=c, stream=s) for c, s in zip(R.comms, R.streams)]
    done = rt.Event()
    done.record(R.streams[0])
    assert not done.query()                              # cannot pass: rank 2 has not arrived
    gate.set()
    R.sync()
    for t in tasks[:2]:
        assert t.end_ns >= tasks[2].start_ns


def test_profiler_shows_collectives_as_tasks_with_bandwidth(ranks):
    R = ranks(2)
    xs = R.put([np.ones(4096, np.float32)] * 2)
    with rt.profile() as prof:
        for c, s, x in zip(R.comms, R.streams, xs):
            c.all_reduce(x, x, stream=s)
        R.sync()
    recs = [r for r in prof.records if r.kind == "hccl"]
    assert sorted(r.name for r in recs) == ["HcclAllReduce"] * 2
    for r in recs:
        assert r.nbytes == 4096 * 4 and r.args["op"] == "sum" and r.args["ranks"] == 2
        assert r.args["algbw_GBps"] > 0 and r.args["algorithm"] == "ring"


def test_bandwidth_of_a_slow_collective_stays_positive():
    # a loaded machine can stretch a 16 KiB all-reduce past a third of a second
    from types import SimpleNamespace
    from rt.hccl.comm import _bandwidth
    task = SimpleNamespace(start_ns=0, end_ns=2_000_000_000, nbytes=16384, error=None, args={})
    _bandwidth(task)
    assert task.args["algbw_GBps"] == pytest.approx(16384 / 2e9, rel=1e-3)


def test_missing_rank_times_out_with_hccl_code(ranks, monkeypatch):
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "0.5")
    R = ranks(2)
    x = R.put([np.ones(16, np.float32)] * 2)[0]
    t0 = time.perf_counter()
    R.comms[0].all_reduce(x, x, stream=R.streams[0])     # rank 1 never calls it
    with pytest.raises(rt.AclError) as ei:
        R.streams[0].synchronize()
    assert time.perf_counter() - t0 < 15                # 30x the timeout: a loaded machine
    assert ei.value.code == HcclResult.HCCL_E_TIMEOUT
    cause = ei.value.__cause__
    assert isinstance(cause, hccl.HcclError) and cause.code == HcclResult.HCCL_E_TIMEOUT
    assert "HCCL_EXEC_TIMEOUT" in str(cause) and "rank 0/2" in str(cause)


def test_comm_init_root_info_from_threads(monkeypatch):
    rt.init()
    n = 3
    info = hccl.get_root_info()
    assert len(bytes(info)) == hccl.ROOT_INFO_BYTES
    out, errors = [None] * n, []

    def rank_main(r):
        try:
            rt.set_device(r + 2)
            comm = hccl.comm_init_root_info(n, bytes(info), r)
            s = rt.Stream()
            x = rt.to_device(np.full(10, r + 1, np.int64))
            comm.all_reduce(x, x, op="prod", stream=s)
            s.synchronize()
            out[r] = (comm.rank_id(), comm.device, x.copy_to_host())
        except Exception as e:                           # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    for r in range(n):
        assert out[r][0] == r and out[r][1] == r + 2
        np.testing.assert_array_equal(out[r][2], 6)


def test_comm_init_root_info_times_out_when_a_rank_never_joins(monkeypatch):
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "0.3")
    rt.init()
    rt.set_device(0)
    t0 = time.perf_counter()
    with pytest.raises(hccl.HcclError) as ei:
        hccl.comm_init_root_info(2, hccl.get_root_info(), 0)
    assert time.perf_counter() - t0 < 10                # 30x the timeout: a loaded machine
    assert ei.value.code == HcclResult.HCCL_E_TIMEOUT
    assert "missing ranks [1]" in str(ei.value)


def test_root_info_and_init_argument_errors():
    rt.init()
    rt.set_device(0)
    for args in [(0, hccl.get_root_info(), 0), (2, hccl.get_root_info(), 2),
                 (2, b"junk", 0)]:
        with pytest.raises(hccl.HcclError) as ei:
            hccl.comm_init_root_info(*args)
        assert ei.value.code == HcclResult.HCCL_E_PARA
    for devices in [[], [0, 0], [0, 99], "01"]:
        with pytest.raises(hccl.HcclError) as ei:
            hccl.comm_init_all(devices)
        assert ei.value.code == HcclResult.HCCL_E_PARA
