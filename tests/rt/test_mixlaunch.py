"""rt.mixlaunch + rt.crossflags with plain Python binaries: groups of AIC + AIV instances running
at once on reusable threads, the cross-core flag rules of each mode, inter-block flags, SyncAll,
deadlock detection, faults and cancels. Ordering is asserted from recorded sequence numbers."""
import importlib
import itertools
import threading

import pytest

import rt
from rt.crossflags import AIC, AIV, FAILED, PASSED
from rt.mixlaunch import MixSpec

L = importlib.import_module("rt.launch")        # `rt.launch` is the function

MIX12 = (AIC, AIV, AIV)


class MixBinary:
    """Runs `body(inst, log)` for each instance; `log(event)` records (seq, name, event)."""

    def __init__(self, body, roles=MIX12, across=False, check=True):
        self.name = "mix"
        self.needs_all_resident = False
        self.shuffle_blocks = True
        self.counters = ()
        self.last_counters = {}
        self.mix = MixSpec(tuple(roles), across, check)
        self.body = body
        self.events = []
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self.threads = set()

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        self.threads.add(threading.get_ident())

        def log(ev):
            with self._lock:
                self.events.append((next(self._seq), barrier.name, ev))
        r = self.body(barrier, log)
        if r is not None and r != PASSED:
            raise RuntimeError(barrier.error or "aborted")

    def seq(self, name, ev):
        return next(s for s, n, e in self.events if n == name and e == ev)


@pytest.fixture
def cores2():
    pool = L.set_core_count(2)
    yield pool
    L.set_core_count()


def _run(b, block_dim):
    task = rt.launch(b, block_dim, ())
    try:
        rt.default_stream().synchronize()
    except rt.AclError:
        pass
    return task


def _ping_pong(inst, log):
    """AIC -> AIVs (mode 2), AIVs -> AIC (mode 2), AIV0 <-> AIV1 (mode 1)."""
    L = inst.launch
    if inst.role == AIC:
        log("aic-write")
        L.set_flag(inst, 3, 2)
        assert L.wait_flag(inst, 4, 2) == PASSED
        log("aic-after-wait")
    else:
        assert L.wait_flag(inst, 3, 2) == PASSED
        log("aiv-after-wait")
        log("aiv-write")
        L.set_flag(inst, 4, 2)
        L.set_flag(inst, 5, 1)
        assert L.wait_flag(inst, 5, 1) == PASSED
        log("aiv-after-mode1")


def test_groups_run_concurrently_on_few_threads_and_flags_order_them(dev0, cores2):
    b = MixBinary(_ping_pong)
    task = _run(b, 24)
    assert task.error is None
    assert len(b.threads) <= 2 * 3         # slots x cores of a group (not 72 threads)
    for g in range(24):
        aic = f"AIC {g}"
        aivs = [f"AIV {2 * g + s} (group {g}, sub-block {s})" for s in (0, 1)]
        for v in aivs:
            assert b.seq(aic, "aic-write") < b.seq(v, "aiv-after-wait")
            assert b.seq(v, "aiv-write") < b.seq(aic, "aic-after-wait")
            # mode 1: neither AIV passes before both have written
            assert max(b.seq(w, "aiv-write") for w in aivs) < b.seq(v, "aiv-after-mode1")


def _affinity_body(inst, log):
    import os
    log(("cpus", tuple(sorted(os.sched_getaffinity(0))), inst.group))
    return _ping_pong(inst, lambda ev: None)


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity")
                    or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and 2 CPUs")
def test_a_slots_threads_share_one_cpu_while_they_run_and_get_their_affinity_back(
        dev0, cores2, monkeypatch):
    import os
    every = tuple(sorted(os.sched_getaffinity(0)))
    b = MixBinary(_affinity_body)
    assert _run(b, 8).error is None
    seen = {}
    for _, name, (_, cpus, g) in b.events:
        assert len(cpus) == 1 and cpus[0] in every, (name, cpus)
        seen.setdefault(g, set()).add(cpus[0])
    assert all(len(c) == 1 for c in seen.values())          # a group's 3 cores: one CPU
    # 2 slots on every[0] and every[1] (which runs how many groups depends on timing)
    assert set().union(*seen.values()) <= set(every[:2])
    # the same threads run the next launch: a launch across groups is not pinned, so the
    # affinity they report is what they had before (the whole set)
    across = MixBinary(_affinity_body, across=True)
    assert _run(across, 2).error is None
    assert {cpus for _, _, (_, cpus, _) in across.events} == {every}
    monkeypatch.setenv("ASCEND_EMU_PIN_GROUPS", "0")
    off = MixBinary(_affinity_body)
    assert _run(off, 8).error is None
    assert {cpus for _, _, (_, cpus, _) in off.events} == {every}


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity")
                    or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and 2 CPUs")
def test_a_launch_made_from_a_thread_pinned_to_one_cpu_still_pins_its_slots_to_two(dev0,
                                                                                   cores2):
    """The next launch on a stream is often dispatched by a slot's thread of the launch before,
    pinned to one CPU at that moment: the new launch's slots must still get a CPU each (the
    process's set), not be left unpinned because the caller sees one CPU."""
    import os
    every = tuple(sorted(os.sched_getaffinity(0)))
    b = MixBinary(_affinity_body)
    tasks = []

    def pinned():
        rt.set_device(0)
        os.sched_setaffinity(0, (every[-1],))
        tasks.append(_run(b, 8))
    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    assert tasks[0].error is None
    seen = {}
    for _, name, (_, cpus, g) in b.events:
        assert len(cpus) == 1 and cpus[0] in every, (name, cpus)
        seen.setdefault(g, set()).add(cpus[0])
    assert all(len(c) == 1 for c in seen.values())
    assert set().union(*seen.values()) <= set(every[:2])


def test_a_slot_takes_the_next_group_when_it_is_free_not_a_fixed_share(dev0, cores2):
    """Group 0 blocks until every other group has run: its slot cannot run any other group
    meanwhile, so the other slot must take them all (a fixed round-robin share would leave
    some behind group 0 for ever)."""
    n_groups = 8
    done = []
    lock = threading.Lock()
    others_done = threading.Event()

    def body(inst, log):
        if inst.group == 0:
            log(("released", others_done.wait(timeout=60)))
            return None
        with lock:
            done.append(inst.group)
            if len(done) == 3 * (n_groups - 1):
                others_done.set()
        return None
    b = MixBinary(body)
    b.shuffle_blocks = False        # groups in order: a fixed share puts 2, 4, 6 behind 0
    assert _run(b, n_groups).error is None
    assert [ev for _, _, ev in b.events] == [("released", True)] * 3
    assert sorted(set(done)) == list(range(1, n_groups))


def test_mode_0_is_a_barrier_over_cores_of_one_kind(dev0):
    def body(inst, log):
        L = inst.launch
        log("before")
        L.set_flag(inst, 7, 0)
        assert L.wait_flag(inst, 7, 0) == PASSED
        log("after")
    b = MixBinary(body, roles=(AIV,), across=True)
    assert _run(b, 8).error is None
    befores = [s for s, _, e in b.events if e == "before"]
    afters = [s for s, _, e in b.events if e == "after"]
    assert max(befores) < min(afters) and len(afters) == 8


def test_an_aic_set_releases_each_aiv_once_and_counts_accumulate(dev0):
    def body(inst, log):
        L = inst.launch
        if inst.role == AIC:
            for _ in range(3):
                L.set_flag(inst, 0, 2)
        else:
            for i in range(3):
                assert L.wait_flag(inst, 0, 2) == PASSED
            log(f"counter={inst.counters[0]}")
    b = MixBinary(body)
    assert _run(b, 2).error is None
    assert sorted(e for _, _, e in b.events) == ["counter=0"] * 4


def test_a_counter_past_16_pending_sets_is_an_error_when_checked(dev0):
    def body(inst, log):
        if inst.role == AIC:
            for _ in range(17):
                if inst.launch.set_flag(inst, 1, 2) != PASSED:
                    return FAILED
    task = _run(MixBinary(body), 1)
    assert "counter must hold at most 16 pending sets (CrossCoreSetFlag's limit), got " \
        "flag_id=1 of AIV 0 (group 0, sub-block 0) at 17" in str(task.error)
    assert _run(MixBinary(body, check=False), 1).error is None


def test_a_wait_nothing_can_release_is_a_deadlock_naming_every_blocked_core(dev0):
    def body(inst, log):
        L = inst.launch
        if inst.role == AIC:
            return L.wait_flag(inst, 2, 2, where=lambda: "k.py:7")
        if inst.sub == 0:
            return L.wait_flag(inst, 6, 1, where=lambda: "k.py:9")
    task = _run(MixBinary(body), 4)
    msg = str(task.error)
    assert "cross-core deadlock: a wait must be released by a core that can still run (the " \
        "NPU would hang), got every core of the group" in msg
    assert "waits on cross_core_wait_flag(flag_id=2, mode_id=2) at k.py:7" in msg
    assert "waits on cross_core_wait_flag(flag_id=6, mode_id=1) at k.py:9" in msg
    assert "ended: AIV" in msg and task.done


def test_a_fault_in_one_core_releases_the_others_and_is_the_one_reported(dev0):
    def body(inst, log):
        L = inst.launch
        if inst.role == AIC and inst.group == 1:
            raise ValueError("cube side broke")
        if inst.role == AIV:
            return L.wait_flag(inst, 0, 2)
        L.set_flag(inst, 0, 2)
    task = _run(MixBinary(body), 3)
    assert "ValueError: cube side broke" in str(task.error) and task.done


def test_ib_set_and_ib_wait_chain_blocks_in_order(dev0):
    def body(inst, log):
        L = inst.launch
        g = inst.block_idx
        if g > 0:
            assert L.ib_wait(inst, 1000 + g - 1, g - 1, 0) == PASSED
        log("step")
        if g < inst.launch.groups - 1:
            assert L.ib_set(inst, 1000 + g, g, 0) == PASSED
    b = MixBinary(body, roles=(AIV,), across=True)
    assert _run(b, 6).error is None
    assert [n for _, n, _ in sorted(b.events)] == [f"AIV {g}" for g in range(6)]


def test_sync_all_in_a_mix_launch_is_a_barrier_over_the_aivs(dev0):
    def body(inst, log):
        if inst.role == AIV:
            log("before")
            assert inst.wait(True) == PASSED
            log("after")
    b = MixBinary(body, across=True)
    assert _run(b, 3).error is None
    assert max(s for s, _, e in b.events if e == "before") < \
        min(s for s, _, e in b.events if e == "after")


def test_an_inter_group_call_in_an_intra_group_launch_is_an_error(dev0):
    def body(inst, log):
        if inst.role == AIV:
            return inst.launch.set_flag(inst, 0, 0)
    task = _run(MixBinary(body), 2)
    assert "the launch must run all its groups at once" in str(task.error)


def test_a_reset_device_stops_a_launch_blocked_on_flags(dev0):
    started = threading.Event()

    def body(inst, log):
        if inst.role == AIC:
            started.set()
            return inst.launch.wait_flag(inst, 0, 2)    # its AIVs never set: would hang,
        threading.Event().wait(0.2 if inst.sub else 0)  # but they are still running
        while not inst.launch.broken:
            threading.Event().wait(0.01)
    b = MixBinary(body)
    task = rt.launch(b, 2, ())
    assert started.wait(30)
    rt.reset_device(0)
    assert task.done and task.cancelled is not None


# ---- the Matmul client/server channel (kfc_post / kfc_recv / kfc_reply / kfc_wait) -------------

def _served(n_msgs):
    """Each AIV posts n_msgs[sub] messages and waits for each answer; the AIC answers each with
    the sender's sub * 100 + its message number and logs the order it served them in."""
    def body(inst, log):
        L = inst.launch
        if inst.role == AIC:
            while True:
                st, msg = L.kfc_recv(inst, where=lambda: "k.py:3")
                if st != PASSED:
                    return st
                if msg is None:
                    log("server-end")
                    return PASSED
                sub, words = msg
                log(("served", sub, words[0]))
                L.kfc_reply(inst, sub, sub * 100 + words[0])
        for i in range(n_msgs[inst.sub]):
            assert L.kfc_post(inst, [i, 7]) == PASSED
            st, value = L.kfc_wait(inst, where=lambda: "k.py:9")
            assert st == PASSED and value == inst.sub * 100 + i
            log(("answered", i))
        return PASSED
    return body


def test_the_server_takes_its_aivs_messages_in_turn_and_ends_when_they_have(dev0):
    for _ in range(3):      # the order does not depend on thread timing
        b = MixBinary(_served((3, 1)))
        task = _run(b, 2)
        assert task.error is None
        for g in (0, 1):
            served = [e for _, n, e in sorted(b.events) if n == f"AIC {g}" and e != "server-end"]
            # sub-block 0, 1, 0, then 0 alone once sub-block 1 has finished
            assert served == [("served", 0, 0), ("served", 1, 0), ("served", 0, 1),
                              ("served", 0, 2)]
            assert b.seq(f"AIC {g}", "server-end") > max(
                b.seq(f"AIV {2 * g + s} (group {g}, sub-block {s})", ("answered", 0))
                for s in (0, 1))


def test_a_client_whose_server_ended_is_a_deadlock_naming_its_wait(dev0):
    def body(inst, log):
        L = inst.launch
        if inst.role == AIC:
            return PASSED           # never serves
        L.kfc_post(inst, [1])
        return L.kfc_wait(inst, where=lambda: "k.py:12")[0]
    task = _run(MixBinary(body, roles=(AIC, AIV)), 1)
    msg = str(task.error)
    assert "cross-core deadlock" in msg
    assert "waits on the Matmul server's answer (KfcCommClient) at k.py:12" in msg
    assert "ended: AIC 0" in msg


def test_only_an_aiv_of_a_mix_launch_posts_matmul_messages(dev0):
    def body(inst, log):
        st = inst.launch.kfc_post(inst, [1])
        return st if inst.role == AIC else PASSED
    task = _run(MixBinary(body, roles=(AIC, AIV)), 1)
    assert "asc.adv.Matmul: a Matmul client must be an AIV of a MIX kernel, got AIC 0 posting " \
           "a message" in str(task.error)


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity")
                    or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and 2 CPUs")
def test_resident_threads_started_from_a_pinned_thread_run_on_every_cpu():
    """A launch dispatched from a thread pinned to one CPU (a MIX slot's thread that completed
    the previous task) starts resident threads: they must not inherit that one CPU."""
    import os

    from rt.resident import start_threads
    every = tuple(sorted(os.sched_getaffinity(0)))
    n = 24                                  # more than the idle threads: some are started anew
    gate = threading.Barrier(n + 1)
    seen = []

    def job():
        seen.append(tuple(sorted(os.sched_getaffinity(0))))
        gate.wait(timeout=30)

    def pinned():
        os.sched_setaffinity(0, (every[-1],))
        start_threads([job] * n)
    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    gate.wait(timeout=30)
    assert len(seen) == n and set(seen) == {every}
