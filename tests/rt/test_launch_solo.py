"""The core pool's short launches: a launch whose blocks take less time than a sleeping core
takes to arrive once rung (`CorePool.late_ns`, measured) runs as one range on the core at hand,
and a core pool worker that dispatches it (the stream's previous kernel just finished there)
rings no other core. The pool's measurements are set by hand here, so the choice is
deterministic; every block still runs once, faults still name their block."""
import importlib
import threading

import pytest

import rt

from rt_test_helpers import PlainBinary

L = importlib.import_module("rt.launch")        # `rt.launch` is the function


class Recorder(PlainBinary):
    """Records (thread, first, last) of each range; a block in `fail` raises a KernelFault. Not
    interruptible (as compiled code): a synchronizing thread does not run its ranges
    (CorePool.assist)."""
    name = "recorder"
    interruptible = False

    def __init__(self, fail=()):
        self.calls, self.fail, self.lock = [], set(fail), threading.Lock()

    def run_blocks(self, first, last, block_dim, args):
        with self.lock:
            self.calls.append((threading.get_ident(), first, last))
        for b in range(first, last):
            if b in self.fail:        # pinned on its block, as ascendc's binaries do
                raise rt.KernelFault(rt.errors.ACL_ERROR_RT_AICORE_EXCEPTION,
                                     f"block {b} fails", b)


class PinnedBlockTimes(dict):
    """The pool's measured time per block of each binary, with `key`'s kept as the test set it:
    a range the machine's load stretched must not change the next launch's choice."""

    def __init__(self, key, ns):
        super().__init__({key: ns})
        self.key = key

    def __setitem__(self, key, ns):
        if key != self.key:
            super().__setitem__(key, ns)


@pytest.fixture
def pool2():
    """A 2-core pool with both cores asleep (idle, waiting for their bells)."""
    pool = L.set_core_count(2)
    wait = threading.Event()
    while True:                     # its workers start asleep: wait until both are
        with pool._lock:
            if len(pool._idle) == 2:
                break
        wait.wait(0.001)
    yield pool
    L.set_core_count()


def test_a_rung_core_records_how_late_it_came(dev0, pool2):
    assert pool2.late_ns == 0
    s = rt.Stream()
    task = rt.launch(Recorder(), 2, (), s)
    s.synchronize()
    assert pool2.late_ns > 0 and sorted((r.first, r.last) for r in task.ranges)[0][0] == 0


def test_short_launches_run_as_one_range_on_the_core_that_dispatches_them(dev0, pool2):
    b = Recorder()
    pool2.late_ns = 10 ** 12                  # cores come 1000 s after their bell
    pool2._block_ns = PinnedBlockTimes(id(b), 1)    # and a block takes 1 ns, launch after launch
    s = rt.Stream()
    tasks = [rt.launch(b, 4, (), s) for _ in range(3)]
    s.synchronize()
    assert [[(r.first, r.last) for r in t.ranges] for t in tasks] == [[(0, 4)]] * 3
    assert len({t for t, _, _ in b.calls}) == 1           # one core ran them: no hand-off
    assert len({r.core for t in tasks for r in t.ranges}) == 1
    assert pool2.late_ns <= 10 ** 12 * (31 / 32) ** 3     # forgotten slowly, launch by launch


def test_without_a_late_core_or_with_solo_short_off_each_core_gets_a_range(dev0, pool2):
    b = Recorder()
    pool2._block_ns[id(b)] = 1
    s = rt.Stream()
    task = rt.launch(b, 4, (), s)               # late_ns 0: no core measured late yet
    s.synchronize()
    assert sorted((r.first, r.last) for r in task.ranges) == [(0, 2), (2, 4)]
    pool2.late_ns = 10 ** 12
    pool2.solo_short = False
    task = rt.launch(b, 4, (), s)
    s.synchronize()
    assert sorted((r.first, r.last) for r in task.ranges) == [(0, 2), (2, 4)]


def test_a_long_launch_still_gets_one_range_per_core(dev0, pool2):
    b = Recorder()
    pool2.late_ns = 1000                        # a core comes 1 us late
    pool2._block_ns[id(b)] = 10 ** 6            # and a block takes 1 ms
    s = rt.Stream()
    task = rt.launch(b, 4, (), s)
    s.synchronize()
    assert sorted((r.first, r.last) for r in task.ranges) == [(0, 2), (2, 4)]
    pool2.late_ns = 10 ** 12                    # however late, a core counts as 100 us late:
    pool2._block_ns[id(b)] = 10 ** 5            # 4 blocks of 100 us are worth two cores
    task = rt.launch(b, 4, (), s)
    s.synchronize()
    assert sorted((r.first, r.last) for r in task.ranges) == [(0, 2), (2, 4)]


def test_a_fault_in_a_solo_range_names_its_block(dev0, pool2):
    b = Recorder(fail={2, 3})
    pool2.late_ns = 10 ** 12
    pool2._block_ns[id(b)] = 1
    s = rt.Stream()
    rt.launch(b, 4, (), s)
    with pytest.raises(rt.AclError) as ei:
        s.synchronize()
    assert "failed in block_idx=2/4" in str(ei.value) and "block 2 fails" in str(ei.value)
    assert [(f, la) for _, f, la in b.calls] == [(0, 4)]
