"""bench.models' idle accounting (`idle_by_cause`): the core-thread time no block range ran in,
by cause, from a stream's tasks and their ranges; checked on a hand-made timeline, exactly (no
timing)."""
import rt

from bench.models import IDLE_CAUSES, idle_by_cause


def test_idle_by_cause_accounts_every_idle_core_ns():
    br = rt.BlockRun
    tasks = [
        (50, 78, [br(1, 0, 1, 52, 60), br(1, 1, 2, 60, 78)]),      # both ranges on core 1
        (10, 40, [br(0, 0, 2, 12, 40), br(1, 2, 3, 20, 30)]),
        (45, 50, []),                                               # an AI CPU task
    ]
    got = idle_by_cause(tasks, 0, 100, 2)
    assert list(got) == list(IDLE_CAUSES)
    assert got == {"before the first launch and after the last": (10 + 22) * 2,
                   "between launches": (5 + 0) * 2,
                   "to the first range": 2 * 2 + 2 * 1,
                   "to the last core's start": 20 - 12,
                   "first core done to last": 40 - 30,
                   "on one core": 5 * 2 + 28 * 1}
    busy = sum(r.end_ns - r.start_ns for _, _, rs in tasks for r in rs)
    assert busy + sum(got.values()) == 2 * 100
