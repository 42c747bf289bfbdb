"""The core pool when a core rung for a kernel is late (a loaded machine): the core that ran the
kernel's first range takes half of each range left waiting for the late one (CorePool._split),
every block still runs exactly once, errors still name their block, and the late core works
normally once it arrives. The late core is made late deterministically: the bell the pool rings
for it is not the one it sleeps on until the test lets it go."""
import importlib
import threading

import pytest

import rt

from rt_test_helpers import PlainBinary

L = importlib.import_module("rt.launch")        # `rt.launch` is the function


class Recorder(PlainBinary):
    """Records (thread, first, last) of each range; a block in `fail` raises. Not interruptible
    (as compiled code): a synchronizing thread does not run its ranges (CorePool.assist)."""
    name = "recorder"
    interruptible = False

    def __init__(self, fail=()):
        self.calls, self.fail, self.lock = [], set(fail), threading.Lock()

    def run_blocks(self, first, last, block_dim, args):
        with self.lock:
            self.calls.append((threading.get_ident(), first, last))
        for b in range(first, last):
            if b in self.fail:
                raise ValueError(f"block {b} fails")


def _idle_pool(split: bool):
    """A 2-core pool with both cores asleep on their bells (a first launch's ranges done)."""
    pool = L.set_core_count(2)
    pool.split_late = split
    done = threading.Event()
    with pool._lock:
        asleep = len(pool._idle) == 2
    if not asleep:                  # wait until both cores have gone to sleep (no timing)
        while True:
            with pool._lock:
                if len(pool._idle) == 2:
                    break
            done.wait(0.001)
    return pool


def _make_late(pool):
    """Ring core 1 through a fresh bell: core 1 sleeps on the old one, so it stays rung and
    asleep; returns a function that lets it go."""
    with pool._lock:
        assert sorted(pool._idle) == [0, 1]
        pool._idle[:] = [1, 0]              # the next launch rings core 0, then core 1
        old = pool._bells[1]
        new = threading.Lock()
        new.acquire()
        pool._bells[1] = new

    def release():
        with pool._lock:
            pool._bells[1] = old
        old.release()
    return release


@pytest.fixture
def restore_pool():
    yield
    L.set_core_count()


def test_a_late_core_leaves_its_range_to_be_halved_by_the_core_that_came(dev0, restore_pool):
    pool = _idle_pool(True)
    release = _make_late(pool)
    b = Recorder()
    s = rt.Stream()
    try:
        task = rt.launch(b, 8, (), s)
        s.synchronize()                     # core 0 runs everything: core 1 never came
        assert sorted((f, la) for _, f, la in b.calls) == [(0, 4), (4, 6), (6, 7), (7, 8)]
        assert len({t for t, _, _ in b.calls}) == 1
        assert sorted((r.first, r.last) for r in task.ranges) == [(0, 4), (4, 6), (6, 7), (7, 8)]
        assert {r.core for r in task.ranges} == {0}
    finally:
        release()
    # core 1 works again: a launch whose first range blocks until the second has run needs both
    both, order = threading.Barrier(2, timeout=60), []

    class Both(PlainBinary):
        name = "both"

        def run_blocks(self, first, last, block_dim, args):
            both.wait()
            order.append(threading.get_ident())
    rt.launch(Both(), 2, (), s)
    s.synchronize()
    assert len(set(order)) == 2


def test_with_split_late_off_the_late_core_s_range_waits_whole(dev0, restore_pool):
    pool = _idle_pool(False)
    release = _make_late(pool)
    b = Recorder()
    s = rt.Stream()
    try:
        rt.launch(b, 8, (), s)
        s.synchronize()
        assert sorted((f, la) for _, f, la in b.calls) == [(0, 4), (4, 8)]
    finally:
        release()


def test_a_fault_in_a_halved_range_names_its_own_block(dev0, restore_pool):
    pool = _idle_pool(True)
    release = _make_late(pool)
    b = Recorder(fail={6, 7})
    s = rt.Stream()
    try:
        rt.launch(b, 8, (), s)
        with pytest.raises(rt.AclError) as ei:
            s.synchronize()
    finally:
        release()
    assert "failed in block_idx=6/8" in str(ei.value) and "block 6 fails" in str(ei.value)
    assert sorted((f, la) for _, f, la in b.calls) == [(0, 4), (4, 6), (6, 7), (7, 8)]
