"""A sanitizer session: while it is active every kernel launch runs sanitized (checked mode with
FLAG_SANITIZE; binaries.Binary._run_sanitized hands each block's rows and fault here), and its
findings collect in one Report.

    with asc.sanitize(tool="racecheck") as san:
        kernel[8](x, y)
    assert san.report.count("Sync2") == 0
"""
from __future__ import annotations

import gc
import os
import sys
import threading

import rt

from .. import binaries
from ..lang import core
from ..lang.positions import LEVEL_NAMES
from ..lang.prims import ktype as KT
from .analysis import BlockPass
from .crosscore import Instance, pending_sets
from .faults import classify
from .gmrace import Track, check as gm_races
from .report import TOOLS, Finding, Report

_PACKAGE_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                      for m in (binaries, sys.modules["rt"]))


def block_label(kernel_type: int, block_idx: int) -> str:
    """msSanitizer's name of a kernel instance: aiv(3), aic(0); a whole AI Core (the emulator's
    AICORE kernels, cube and vector in one instance) is aicore(3)."""
    if kernel_type == KT.AIC_ONLY:
        return f"aic({block_idx})"
    if kernel_type == KT.AICORE:
        return f"aicore({block_idx})"
    return f"aiv({block_idx})"


class Session:
    """The state of one sanitized run: which checks, the report, launches in progress."""

    def __init__(self, tool: str = "memcheck", check_all: bool = False, leak_check: bool = False,
                 raise_faults: bool = False):
        if tool not in TOOLS:
            raise ValueError(f"asc.sanitize: tool must be one of {', '.join(TOOLS)}, got "
                             f"tool={tool!r}")
        self.tools = frozenset(TOOLS) if check_all else frozenset((tool,))
        self.leak_check = bool(leak_check)
        self.report = Report()
        # a fault ends its launch with the checked-mode exception too (as an unsanitized launch
        # does): a test that expects the error still sees it (the suite's sanitizer sweep)
        self.raise_faults = bool(raise_faults)
        # one (kernel name, faulted, [Finding]) per launch that ended (or was cut short by a
        # fault) inside the session, in the order they ended
        self.launches: list = []
        self._launches: dict = {}
        self._cut: dict = {}        # launch key -> [findings, labels] of a launch a fault ended
        self._lock = threading.Lock()
        self._allocs: dict = {}          # device address -> (file, line) of its malloc
        self._pool_cls = None
        self._pool_malloc = None
        self._pool_free = None

    # -- what binaries calls per block --------------------------------------------------------
    def block(self, binary, launch, block_idx, rows, fault, where, gms, lost, role=None,
              group=0):
        """One block's (or, `role` "AIC"/"AIV", one MIX instance's of `group`) rows."""
        label = (block_label(binary.kernel_type, block_idx) if role is None else
                 f"{role.lower()}({block_idx})")
        levels = self._levels(binary.soc)
        bp = BlockPass(self.tools, binary.name, label, binary.trace_lines(), levels).run(rows)
        found = list(bp.findings)
        if fault is not None:
            # a fault stopped the block: reported whichever tool runs
            found.append(classify(fault, binary.name, label, where, gms, binary.gm_names))
        if lost:
            found.append(Finding("Fault", "block too long to analyse whole", binary.name,
                                 label, None, detail=f"{lost} instructions were not "
                                 f"recorded (raise ASCEND_EMU_NPU_TRACE_ROWS)"))
        for f in found:
            self.report.add(f)
        inst = Instance(role, group, label, bp.xsets, bp.xwaits) if role is not None else None
        track = Track(label, role, group, bp.gm, bp.points) if "racecheck" in self.tools else None
        self._collect(binary, launch, track, gms, inst, found, fault is not None, label)

    def _levels(self, soc):
        offs, sizes, _ = core.layout(soc)
        return [(LEVEL_NAMES[i], offs[i], sizes[i]) for i in range(len(sizes))]

    # -- what the launch's blocks found together: GM stomps, cross-core flags left pending ------
    def _collect(self, binary, launch, track, gms, inst, found, faulted, label):
        key = (id(binary), launch[0])
        # the launch's own GM arguments, held: `key` holds the id of the launch's argument
        # tuple, which a later launch may get once this one's is freed, so a block belongs to
        # the launch of `key` only if it has the very same arguments (and a label not seen)
        args = tuple(a for a, _ in gms)
        with self._lock:
            cut = self._cut.get(key)
            if cut is not None:
                if _same(cut[2], args) and label not in cut[1]:
                    cut[1].add(label)       # a block of a launch a fault already ended (its
                    cut[0] += found         # other workers' ranges run on): same launch
                    return
                del self._cut[key]          # a new launch
            acc = self._launches.get(key)
            if acc is not None and (not _same(acc[7], args) or label in acc[6]):
                # a launch a fault stopped before all its blocks ran, and a new one under its
                # key: the old one ends here, cut short
                del self._launches[key]
                self.launches.append((acc[3], True, acc[4]))
                acc = None
            if acc is None:
                acc = self._launches[key] = [[], 0, [], binary.name, [], False, set(), args]
            acc[6].add(label)
            if track is not None:
                acc[0].append(track)
            if inst is not None:
                acc[2].append(inst)
            acc[1] += 1
            acc[4] += found
            acc[5] = acc[5] or faulted
            if faulted and self.raise_faults:       # the launch ends here (binaries raises)
                del self._launches[key]
                self.launches.append((binary.name, True, acc[4]))
                self._cut[key] = [acc[4], acc[6], args]
                return
            if acc[1] < launch[1]:
                return
            del self._launches[key]
        found = acc[4]
        lines = binary.trace_lines()

        def at(i):
            return lines[i] if 0 < i < len(lines) else None
        if "racecheck" in self.tools:
            # the launch's instances in a fixed order: the report does not depend on threads
            tracks = sorted(acc[0], key=lambda t: (t.role != "AIC", t.group, t.label))
            for f in gm_races(binary.name, tracks, at, lambda a: _gm_name(gms, a)):
                self.report.add(f)
                found.append(f)
        if "synccheck" in self.tools and acc[2]:
            for f in pending_sets(binary.name, acc[2], at):
                self.report.add(f)
                found.append(f)
        with self._lock:
            self.launches.append((binary.name, acc[5], found))

    # -- install / remove -----------------------------------------------------------------------
    def start(self):
        if binaries.sanitizer() is not None:
            raise RuntimeError("asc.sanitize: a sanitizer session must not be nested, got one "
                               "already active")
        if self.leak_check:
            self._track_device_memory()
        binaries.set_sanitizer(self)
        return self

    def stop(self):
        try:                    # launches queued inside the session are sanitized by it
            rt.synchronize_device()
        except rt.AclError:
            pass                # (no device, or a stream's own error: the script sees it)
        binaries.set_sanitizer(None)
        with self._lock:            # launches a fault cut short (their other blocks never ran)
            for acc in self._launches.values():
                self.launches.append((acc[3], True, acc[4]))
            self._launches.clear()
            self._cut.clear()
        if self.leak_check:
            self._untrack_device_memory()
            self._report_device_leaks()
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _track_device_memory(self):
        from rt.pool import DevicePool as Pool
        allocs, orig_malloc, orig_free = self._allocs, Pool.malloc, Pool.free

        def malloc(pool, size, policy=0):
            ptr = orig_malloc(pool, size, policy)
            allocs[int(ptr)] = (_caller(), size)
            return ptr

        def free(pool, addr, *args, **kw):
            allocs.pop(int(addr), None)
            return orig_free(pool, addr, *args, **kw)
        self._pool_cls, self._pool_malloc, self._pool_free = Pool, orig_malloc, orig_free
        Pool.malloc, Pool.free = malloc, free

    def _untrack_device_memory(self):
        if self._pool_cls is not None:
            gc.collect()            # arrays the script dropped give their memory back now
            self._pool_cls.malloc, self._pool_cls.free = self._pool_malloc, self._pool_free
            self._pool_cls = None

    def _report_device_leaks(self):
        for addr, (where, size) in list(self._allocs.items()):
            self.report.add(Finding("Leak", f"device memory of size {size} never freed",
                                    "(host)", "host", where, f"device address {addr:#x}",
                                    detail="allocated by rt.malloc / a DeviceArray and not "
                                           "freed before the run ended"))
        self._allocs.clear()


def _same(a: tuple, b: tuple) -> bool:
    """The same GM argument objects (not equal ones: the very objects of one launch)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _gm_name(gms, addr):
    """(argument name, byte offset) of GM address `addr` among a launch's GM arguments
    ([(GMArg, bytes reached)]), or ("", 0)."""
    for a, reach in gms:
        base = int(a.view().ctypes.data)        # the kernel's view: what trace rows hold
        if base <= addr < base + max(reach, 1):
            return a.name, addr - base
    return "", 0


def _caller():
    """(file, line) of the first frame outside rt and ascendc: the script's line."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIRS):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None
