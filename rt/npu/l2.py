"""The NPU simulator's L2 (`model.l2_bytes` > 0; docs/npu-model.md §1.5 (e)).

A chip-wide cache of GM, cold at the
launch's start, LRU, kept per `l2_line_bytes` sector of the copies' GM ranges (`Instr.gm`; a
strided copy's rows are inferred from its bytes and span, `rows_of`). Each copy is decided when
it starts (simulation-time order; at equal times cores in index order, pipes in PIPES order).
A read streams its missing bytes through HBM (then they are resident) and then its resident
bytes through L2; data another copy is still filling counts as resident, but the reader ends
no earlier than that fill (merged misses). A write allocates in L2 (dirty) and streams
through L2; dirty data pays HBM only when evicted (write-back: those bytes are added to the
HBM part of the copy whose fill evicted them). A copy without a GM range streams through HBM
as before. `l2_bytes=0` turns L2 off.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from .instr import Instr
from .model import GM_PATHS, PipeModel


def rows_of(nbytes: int, lo: int, hi: int) -> tuple:
    """(rows, row bytes, stride) of a copy of `nbytes` whose GM side spans [lo, hi). A strided
    copy (DataCopy blocks, Nd2Nz rows, fixpipe rows) records only its span, so the rows are
    inferred: the most rows (shortest row) that divide `nbytes` and give a whole-byte stride.
    A copy whose span is its size is one contiguous row."""
    span = hi - lo
    if nbytes <= 0 or span <= nbytes:
        return 1, span, span
    divs, d = set(), 1
    while d * d <= nbytes:
        if nbytes % d == 0:
            divs.update((d, nbytes // d))
        d += 1
    for w in sorted(divs):
        r = nbytes // w
        if r < 2:
            break
        if (span - w) % (r - 1) == 0:            # stride >= w because span > r * w
            return r, w, (span - w) // (r - 1)
    return 1, span, span                         # unreachable for even sizes (2 rows fit)


class L2Cache:
    """The chip's L2 (module doc): residency of the GM ranges the launch's copies touch, kept
    per `g`-byte sector in flat numpy arrays (resident, dirty, last use, in-flight filler) over
    the merged spans of all recorded copies. A copy's sectors are a slice, a strided 2-D view
    or an index array (`_plan`), so one access costs a few numpy calls whatever its size.
    Replacement is LRU by access tick; when full it evicts the oldest sectors down to
    capacity - 1/64 (batched, so a stream over a working set larger than L2 costs one O(sectors)
    pass per 1/64 of capacity)."""

    def __init__(self, model: PipeModel, blocks: list):
        g = max(int(model.l2_line_bytes), 1)
        keys = {(i.gm[0], i.gm[1], i.bytes) for b in blocks for i in b
                if i.gm and i.gm[1] > i.gm[0] and i.path in GM_PATHS}
        spans = sorted({k[:2] for k in keys})
        while sum(hi - lo for lo, hi in spans) // g > 1 << 27:      # cap the arrays' size
            g *= 2
        regions: list = []
        for lo, hi in spans:
            a, b = lo // g * g, -(-hi // g) * g
            if regions and a <= regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], b)
            else:
                regions.append([a, b])
        self.g, self.los, self.bases, off = g, [], [], 0
        for a, b in regions:
            self.los.append(a)
            self.bases.append(off - a // g)           # sector index = addr // g + base
            off += (b - a) // g
        self.plans = {k: self._plan(*k) for k in keys}
        pad = max((p[3] for p in self.plans.values() if p[0] == 1), default=0)
        n = off + pad
        self.resident = np.zeros(n, bool)
        self.dirty = np.zeros(n, bool)
        self.last = np.zeros(n, np.int64)
        self.filler = np.full(n, -1, np.int64)
        self.cap = max(int(model.l2_bytes) // g, 1)
        self.slack = self.cap // 64
        self.n = self.tick = 0
        self.live: dict = {}                          # fill number -> _Op still streaming
        self.hit = self.miss = self.written = self.writeback = 0.0

    def _plan(self, lo: int, hi: int, nbytes: int) -> tuple:
        """(kind, ...) addressing the sectors a copy touches: (0, first, end, count) a slice,
        (1, first, rows, stride, per-row, count) a strided view, (2, indices, count)."""
        g = self.g
        base = self.bases[bisect_right(self.los, lo) - 1]
        r, w, s = rows_of(nbytes, lo, hi)
        first = lo // g + base
        k = (lo + w - 1) // g - lo // g + 1
        if r == 1:
            return 0, first, first + k, k
        if s % g == 0 and k <= s // g:
            return 1, first, r, s // g, k, r * k
        starts = lo + np.arange(r, dtype=np.int64) * s
        f, e = starts // g, (starts + w - 1) // g
        idx = f[:, None] + np.arange(int((e - f).max()) + 1)
        idx = np.unique(idx[idx <= e[:, None]]) + base
        return 2, idx, idx.size

    @staticmethod
    def _view(arr, p):
        if p[0] == 0:
            return arr[p[1]:p[2]]
        if p[0] == 1:
            return arr[p[1]:p[1] + p[2] * p[3]].reshape(p[2], p[3])[:, :p[4]]
        return arr[p[1]]

    def _set(self, arr, p, value, mask=None):
        if p[0] == 2:
            arr[p[1] if mask is None else p[1][mask]] = value
        elif mask is None:
            self._view(arr, p)[...] = value
        else:
            self._view(arr, p)[mask] = value

    def access(self, ins: Instr, write: bool, fill_no: int) -> tuple:
        """Decide a copy at its start: (bytes through HBM, bytes through L2, fill numbers of the
        in-flight copies whose data it hits and must wait for). Reads: resident sectors hit,
        the rest miss (HBM) and are filled now; writes allocate (dirty) and stream into L2;
        dirty sectors evicted to make room are written back through HBM, charged to this copy."""
        p = self.plans[(ins.gm[0], ins.gm[1], ins.bytes)]
        count = p[-1]
        hitmask = self._view(self.resident, p)
        if p[0] != 2:
            hitmask = hitmask.copy()
        h = int(np.count_nonzero(hitmask))
        self.tick += 1
        waits = ()
        if h and self.live:
            f = np.unique(self._view(self.filler, p)[hitmask])
            waits = tuple(int(x) for x in f if int(x) in self.live)
        self._set(self.resident, p, True)
        self._set(self.last, p, self.tick)
        if write:
            self._set(self.dirty, p, True)
            self._set(self.filler, p, fill_no)
        elif h < count:
            self._set(self.filler, p, fill_no, None if h == 0 else ~hitmask)
        self.n += count - h
        wb = self._evict() if self.n > self.cap else 0
        self.writeback += wb
        if write:
            self.written += ins.bytes
            return float(wb), float(ins.bytes), waits
        hit = ins.bytes * h / count if count else 0.0
        self.hit += hit
        self.miss += ins.bytes - hit
        return ins.bytes - hit + wb, hit, waits

    def _evict(self) -> int:
        """Evict the least recently used sectors, never the current copy's (a copy larger than
        L2 stays over capacity until the next access); the bytes of the dirty ones evicted."""
        need = self.n - self.cap + self.slack
        res = np.flatnonzero(self.resident)
        ticks = self.last[res]
        old = ticks < self.tick
        res, ticks = res[old], ticks[old]
        if need >= res.size:
            ev = res
        else:
            ev = res[ticks <= np.partition(ticks, need - 1)[need - 1]]
        wb = int(np.count_nonzero(self.dirty[ev])) * self.g
        self.resident[ev] = False
        self.dirty[ev] = False
        self.filler[ev] = -1
        self.n -= ev.size
        return wb
