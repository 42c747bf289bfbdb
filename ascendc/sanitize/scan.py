"""The per-byte scans of racecheck (analysis.BlockPass), compiled: one pass over an access's
bytes that stops at the first hazard, instead of several numpy passes and temporaries each."""
from __future__ import annotations

from ..lang.numba_link import cached_njit


@cached_njit(nogil=True)
def first_unseen_write(w_pipe, w_time, lo, hi, seen):
    """First byte in [lo, hi) whose last write is later than `seen[its writer's code]` (codes
    are w_pipe & 15: -1, none, is 15), or -1."""
    for i in range(lo, hi):
        if w_time[i] > seen[w_pipe[i] & 15]:
            return i
    return -1


@cached_njit(nogil=True)
def first_above(row, lo, hi, bar):
    """First byte in [lo, hi) with row[i] > bar, or -1 (by chunks: a max the compiler
    vectorises, then a search only in a chunk that has one)."""
    i = lo
    while i < hi:
        e = min(i + 2048, hi)
        m = row[i]
        for j in range(i, e):
            m = max(m, row[j])
        if m > bar:
            for j in range(i, e):
                if row[j] > bar:
                    return j
        i = e
    return -1


@cached_njit(nogil=True)
def first_in_flight(w_pipe, w_time, lo, hi, pipe, done, now):
    """First byte in [lo, hi) last written by `pipe` (not by a reach) at a time in (done, now),
    or -1."""
    for i in range(lo, hi):
        if w_pipe[i] == pipe:
            t = w_time[i]
            if t > done and t < now:
                return i
    return -1


@cached_njit(nogil=True)
def any_set(flags, lo, hi):
    """Is any byte of flags[lo:hi] (uint8) non-zero? (by chunks the compiler vectorises)"""
    i = lo
    while i < hi:
        e = min(i + 4096, hi)
        m = 0
        for j in range(i, e):
            m |= flags[j]
        if m:
            return True
        i = e
    return False
