"""Findings and their report, in msSanitizer's shape with the CPU npu check's class names.

One `Finding` per error seen; `Report` deduplicates them (same class, kind, kernel and lines:
counted) and prints

    ====== ERROR: illegal read of size 64 (npu-check ErrorRead3)
    ======    at GM argument 'x' offset 4096 (argument of 4096 bytes) in kernel add_kernel
    ======    in block aiv(3)
    ======    #0 /path/to/script.py:18
    ======    found 2 times, in blocks aiv(3) aiv(7)

then `====== ERROR SUMMARY: N errors` and a table of errors per npu-check class.
"""
from __future__ import annotations

import linecache
import threading
from dataclasses import dataclass, field

PREFIX = "======"

# npu-check class -> (tool that finds it, what it is): docs/sanitizer.md explains each
CLASSES = {
    "Read1": ("memcheck", "read through a freed tensor"),
    "Read2": ("initcheck", "read of local memory never written since its allocation"),
    "Read3": ("memcheck", "read out of bounds"),
    "Read4": ("memcheck", "misaligned read"),
    "Write1": ("memcheck", "write through a freed tensor"),
    "Write2": ("memcheck", "write out of bounds"),
    "Write3": ("racecheck", "write over data another pipe has not yet read"),
    "Write4": ("memcheck", "misaligned write"),
    "Sync1": ("racecheck", "copies of one pipe over the same bytes without its pipe_barrier"),
    "Sync2": ("racecheck", "access between pipes without the flag that orders them"),
    "Sync3": ("synccheck", "set_flag / wait_flag / sync_all not paired"),
    "Sync4": ("synccheck", "event id set twice or out of range"),
    "Buffer0": ("memcheck", "queue or buffer used before init_buffer or after release"),
    "Buffer1": ("memcheck", "more buffers or tensors than the queue holds"),
    "Buffer2": ("memcheck", "queue order broken (deque of an empty queue, free of an "
                            "enqueued tensor)"),
    "Buffer3": ("memcheck", "tensor reaching past its buffer"),
    "Buffer4": ("memcheck", "tensor handed to a queue it does not belong to"),
    "Free": ("memcheck", "tensor freed twice"),
    "Leak": ("memcheck", "tensor or device memory never freed"),
    "Stomp": ("racecheck", "two blocks write the same GM bytes without ordering"),
    "GMRace": ("racecheck", "one block reads GM bytes another writes without ordering"),
    "Fault": ("memcheck", "another kernel fault (the block stopped there)"),
}
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


def npu_check_name(cls: str) -> str:
    """'Read3' -> 'ErrorRead3', 'Stomp' -> 'multi-core GM stomp' (the CPU npu check's names;
    'GMRace', a read and a write of two blocks, is this sanitizer's)."""
    if cls == "Stomp":
        return "multi-core GM stomp"
    if cls == "GMRace":
        return "multi-core GM race"
    if cls == "Fault":
        return "kernel fault"
    return "Error" + cls


def source(where) -> str:
    """'file:line' of a (file, line) pair, '' for None."""
    if not where or not where[0]:
        return ""
    return f"{where[0]}:{where[1]}"


@dataclass
class Finding:
    cls: str                 # npu-check class (CLASSES)
    kind: str                # what happened, msSanitizer's words: "illegal read of size 64"
    kernel: str
    block: str               # "aiv(3)"
    where: tuple | None      # (file, line) of the kernel source
    address: str = ""        # "GM argument 'x' offset 4096 ..." / "UB offset 256 ..."
    other: tuple | None = None   # the other side: (label, (file, line))
    detail: str = ""         # the fault's own message, or more words

    @property
    def tool(self) -> str:
        return CLASSES[self.cls][0]

    def key(self):
        return (self.cls, self.kind, self.kernel, source(self.where),
                source(self.other[1]) if self.other else "", self.address, self.detail)


@dataclass
class _Entry:
    first: Finding          # the one of the lowest block (a report does not depend on the
    count: int = 0          # order the core threads ran the blocks in)
    blocks: list = field(default_factory=list)      # the 8 lowest blocks, in order
    more: bool = False                              # and more blocks than those


class Report:
    """The findings of a session, deduplicated (thread-safe: blocks run on worker threads)."""

    def __init__(self):
        self._entries: dict = {}
        self._lock = threading.Lock()

    def add(self, f: Finding) -> None:
        with self._lock:
            e = self._entries.setdefault(f.key(), _Entry(f))
            e.count += 1
            if _block_order(f.block) < _block_order(e.first.block):
                e.first = f
            if f.block not in e.blocks:
                e.blocks.append(f.block)
                e.blocks.sort(key=_block_order)
                if len(e.blocks) > 8:
                    e.blocks.pop()
                    e.more = True

    @property
    def findings(self) -> list:
        """One Finding per distinct error (the one of its lowest block), in the order the
        errors were first found."""
        with self._lock:
            return [e.first for e in self._entries.values()]

    def count(self, cls: str | None = None) -> int:
        """Errors found (each occurrence), of one class or all."""
        with self._lock:
            return sum(e.count for e in self._entries.values()
                       if cls is None or e.first.cls == cls)

    @property
    def error_count(self) -> int:
        return self.count()

    def per_class(self) -> dict:
        out: dict = {}
        with self._lock:
            for e in self._entries.values():
                out[e.first.cls] = out.get(e.first.cls, 0) + e.count
        return out

    def format(self) -> str:
        lines = []
        with self._lock:
            entries = list(self._entries.values())
        for e in entries:
            lines += _block_lines(e)
        total = sum(e.count for e in entries)
        lines.append(f"{PREFIX} ERROR SUMMARY: {total} error{'s' if total != 1 else ''}")
        per = self.per_class()
        if per:
            lines.append(f"{PREFIX} npu-check class       tool        errors")
            for cls in CLASSES:
                if cls in per:
                    lines.append(f"{PREFIX}    {npu_check_name(cls):<18} {CLASSES[cls][0]:<11} "
                                 f"{per[cls]}")
        return "\n".join(lines) + "\n"


def _block_order(label: str):
    """'aiv(10)' sorts after 'aiv(9)': (kind, number)."""
    kind, _, rest = label.partition("(")
    num = rest.rstrip(")")
    return (kind, int(num) if num.isdigit() else -1, label)


def _block_lines(e: _Entry) -> list:
    f = e.first
    out = [f"{PREFIX} ERROR: {f.kind} ({npu_check_name(f.cls)})"]
    if f.address:
        out.append(f"{PREFIX}    at {f.address} in kernel {f.kernel}")
    else:
        out.append(f"{PREFIX}    in kernel {f.kernel}")
    out.append(f"{PREFIX}    in block {f.block}")
    if f.where:
        out.append(f"{PREFIX}    #0 {source(f.where)}")
        text = linecache.getline(f.where[0], f.where[1]).strip()
        if text:
            out.append(f"{PREFIX}       {text}")
    if f.other:
        label, where = f.other
        out.append(f"{PREFIX}    {label} {source(where) or '(unknown line)'}")
    if f.detail:
        out.append(f"{PREFIX}    {f.detail}")
    if e.count > 1:
        out.append(f"{PREFIX}    found {e.count} times, in blocks {' '.join(e.blocks)}"
                   + (" ..." if e.more else ""))
    return out
