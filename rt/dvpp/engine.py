"""The DVPP units of each device as engines for stream tasks, their utilisation, and their trace
track.

A DVPP operation is a `rt.sched.Task` of kind "dvpp" whose engine is one of the device's units
(JPEGD, PNGD, VPC, JPEGE; one thread each, started on first use): the stream hands the task over
and goes on once the unit has run it, so DVPP work is ordered with kernels, copies and events on
its stream like any task, runs concurrently with kernels and copies, and the units of a device
are shared by all its streams (tasks of different streams queue at the unit, as on hardware).

`utilization(device)` is the busy percentage of the device's DVPP units over the span of their
recent tasks (what `npu-smi info -t dvpp` reports per unit; 0 when idle). The profiler's Chrome
trace has one track per DVPP unit (`rt.profiler.DVPP_TID_BASE`); `chrome_trace(prof)` is it.
"""
from __future__ import annotations

import collections
import queue
import threading
from time import perf_counter_ns

from ..profiler import DVPP_UNITS as UNITS     # the profiler draws the unit tracks

RECENT: collections.deque = collections.deque(maxlen=4096)   # (device, unit, start_ns, end_ns)


class DvppUnit:
    """One hardware unit of one device: runs the DVPP tasks handed to it in arrival order."""

    def __init__(self, device_id: int, unit: str):
        self.device_id, self.unit = device_id, unit
        self.q = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=f"rt-dvpp-{unit}-{device_id}",
                                       daemon=True)
        self.thread.start()

    def put(self, task) -> None:
        self.q.put(task)

    def _loop(self) -> None:
        q = self.q
        while True:
            task = q.get()
            task.start_ns = perf_counter_ns()
            if task.core.skipping:            # ACL_STOP_ON_FAILURE after an earlier failure
                task.skipped = True
            else:
                try:
                    task.fn()
                except BaseException as exc:  # noqa: BLE001 - becomes the stream's error
                    task.error = exc
                task.end_ns = perf_counter_ns()
                RECENT.append((self.device_id, self.unit, task.start_ns, task.end_ns))
            task.core.complete(task)
            del task


_units: dict = {}
_lock = threading.Lock()


def unit(device_id: int, name: str) -> DvppUnit:
    """Device `device_id`'s DVPP unit `name` (one of UNITS), started on first use."""
    key = (device_id, name)
    u = _units.get(key)
    if u is None:
        with _lock:
            u = _units.get(key)
            if u is None:
                u = _units[key] = DvppUnit(device_id, name)
    return u


def utilization(device: int, unit_name: str | None = None, window_ns: int | None = None) -> float:
    """Percent of time the device's DVPP unit `unit_name` (default: the busiest) was busy over
    the span of its recent tasks (0.0 when it has none)."""
    if unit_name is None:
        return max(utilization(device, u, window_ns) for u in UNITS)
    recs = [r for r in list(RECENT) if r[0] == device and r[1] == unit_name]
    if window_ns is not None:
        cut = perf_counter_ns() - window_ns
        recs = [r for r in recs if r[3] >= cut]
    if not recs:
        return 0.0
    span = max(r[3] for r in recs) - min(r[2] for r in recs)
    busy = sum(r[3] - r[2] for r in recs)
    return 100.0 * min(1.0, busy / max(1, span))


def chrome_trace(prof) -> dict:
    """`prof.chrome_trace()`: the profiler itself draws every DVPP task on its unit's own track
    ("DVPP JPEGD", "DVPP VPC", ...; tid `rt.profiler.DVPP_TID_BASE + unit index`); kept for
    callers."""
    return prof.chrome_trace()


def export_chrome_trace(prof, path: str) -> str:
    """Write `chrome_trace(prof)` to `path` as JSON (Perfetto opens it)."""
    import json
    with open(path, "w") as f:
        json.dump(chrome_trace(prof), f)
    return path
