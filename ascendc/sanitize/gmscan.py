"""The compiled side of racecheck across a launch's instances (gmrace.check): the sweep over the
GM access groups in address order and, for each pair of overlapping groups of two instances, the
search for two accesses nothing orders. gmrace.py's docstring says what is checked; the numbers:
- accesses (one row each, grouped by instance, pipe, range and kind, each group in issue order):
  `tick` (the pipe's own time at the access), `line`, `inst`, `counts[i, q]` (how many of its
  instance's waits on pipe q it comes after);
- groups (in the order the check visits them: by lo, then hi, then first access): `g[:, G_*]`
  and the rows [start, end) of their accesses;
- knowledge: `know[woff[t, q] + c - 1]` (instances x pipes) is what instance t's first c waits on
  pipe q brought in (joined), so an access knows the elementwise max over q of its counts' rows.
"""
from __future__ import annotations

import numpy as np

from ..lang.numba_link import cached_njit

NL = 7
# group columns
G_INST, G_LANE, G_LO, G_HI, G_WRITE, G_BLK, G_STEP, G_START, G_END = range(9)


@cached_njit(nogil=True)
def _known(counts, woff, know, acc, inst, other, lane):
    """What access `acc` (of instance `inst`) knows complete of pipe `lane` of instance `other`:
    -1 when its instance's waits brought it nothing yet."""
    m = -1
    for q in range(NL):
        c = counts[acc, q]
        if c > 0:
            v = know[woff[inst, q] + c - 1, other, lane]
            if v > m:
                m = v
    return m


@cached_njit(nogil=True)
def _blocks(g, i):
    lo, hi, blk, step = g[i, G_LO], g[i, G_HI], g[i, G_BLK], g[i, G_STEP]
    if blk:
        return lo, hi, blk, step
    return lo, hi, hi - lo, hi - lo


@cached_njit(nogil=True)
def overlap(g, ia, ib):
    """(True, lo, hi) of the first bytes groups ia and ib both touch, else (False, 0, 0): each
    is blocks of `blk` bytes every `step` bytes from lo, the last one ending at hi."""
    a_lo, a_hi, a_blk, a_step = _blocks(g, ia)
    b_lo, b_hi, b_blk, b_step = _blocks(g, ib)
    if (a_hi - a_lo) // a_step > (b_hi - b_lo) // b_step:      # walk the one with fewer blocks
        a_lo, a_hi, a_blk, a_step, b_lo, b_hi, b_blk, b_step = \
            b_lo, b_hi, b_blk, b_step, a_lo, a_hi, a_blk, a_step
    x = max(a_lo, b_lo - a_blk)
    x = a_lo + (x - a_lo) // a_step * a_step
    while x < min(a_hi, b_hi):
        x_hi = min(x + a_blk, a_hi)
        j = max((x - b_lo) // b_step, 0)          # the blocks of b that may touch [x, x_hi)
        while b_lo + j * b_step < x_hi and b_lo + j * b_step < b_hi:
            y = b_lo + j * b_step
            y_hi = min(y + b_blk, b_hi)
            if y < x_hi and x < y_hi:
                return True, max(x, y), min(x_hi, y_hi)
            j += 1
        x += a_step
    return False, 0, 0


@cached_njit(nogil=True)
def _unordered(g, ga, gb, tick, counts, woff, know):
    """(access of group ga, access of group gb) that nothing orders, or (-1, -1). The accesses
    of a group are in issue order: those known complete before an access b are a prefix, and
    those that know b complete a suffix."""
    ta, la = g[ga, G_INST], g[ga, G_LANE]
    tb, lb = g[gb, G_INST], g[gb, G_LANE]
    a0, a1 = g[ga, G_START], g[ga, G_END]
    for b in range(g[gb, G_START], g[gb, G_END]):
        seen = _known(counts, woff, know, b, tb, ta, la)
        if seen < 0:
            seen = 0
        k = a0 + np.searchsorted(tick[a0:a1], seen, side="right")
        if k == a1:
            continue
        ka = _known(counts, woff, know, k, ta, tb, lb)
        if ka < 0 or ka < tick[b]:
            return k, b
    return -1, -1


@cached_njit(nogil=True)
def _still_open(g, open_, n, lo):
    """Keep the first n entries of open_ whose range ends past lo (in order); their count."""
    k = 0
    for j in range(n):
        if g[open_[j], G_HI] > lo:
            open_[k] = open_[j]
            k += 1
    return k


@cached_njit(nogil=True)
def sweep(g, tick, counts, woff, know):
    """Every pair of overlapping groups of two instances (one a write) with two accesses nothing
    orders: a list of (group a, group b, access a, access b, lo, hi of the first shared bytes),
    in the order the check meets them (the earlier group first)."""
    n = g.shape[0]
    open_w = np.empty(n, np.int64)
    open_r = np.empty(n, np.int64)
    nw = nr = 0
    hits = [(np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0))]
    hits.pop()
    for i in range(n):
        lo = g[i, G_LO]
        nw = _still_open(g, open_w, nw, lo)
        nr = _still_open(g, open_r, nr, lo)
        write = g[i, G_WRITE] != 0
        for j in range(nw + nr if write else nw):
            o = open_w[j] if j < nw else open_r[j - nw]
            if g[o, G_INST] == g[i, G_INST] or (g[o, G_WRITE] == 2 and g[i, G_WRITE] == 2):
                continue        # one instance, or two atomic adds (set_atomic_add)
            ok, both_lo, both_hi = overlap(g, o, i)
            if not ok:          # strided blocks that interleave without touching
                continue
            a, b = _unordered(g, o, i, tick, counts, woff, know)
            if a >= 0:
                hits.append((o, np.int64(i), a, b, both_lo, both_hi))
        if write:
            open_w[nw] = i
            nw += 1
        else:
            open_r[nr] = i
            nr += 1
    return hits


@cached_njit(nogil=True)
def wait_counts(inst, clock, woff, wn, wtick):
    """counts[i, q]: how many waits on pipe q of access i's instance have a tick <= its clock[q]
    (the waits of each instance and pipe are in issue order: their ticks grow)."""
    n = inst.shape[0]
    counts = np.zeros((n, NL), np.int64)
    for i in range(n):
        t = inst[i]
        for q in range(NL):
            c = wn[t, q]
            if c:
                o = woff[t, q]
                counts[i, q] = np.searchsorted(wtick[o:o + c], clock[i, q], side="right")
    return counts


@cached_njit(nogil=True)
def group_ids(keys):
    """Group id of each row of `keys` (equal rows, one group), numbered in the order of their
    first row, and that first row of each group."""
    n = keys.shape[0]
    size = 16
    while size < 2 * n:
        size <<= 1
    table = np.full(size, -1, np.int64)
    first = np.empty(n, np.int64)
    gid = np.empty(n, np.int64)
    ng = 0
    for i in range(n):
        h = 2166136261                  # FNV-1a over 32-bit folds (no overflow in int64)
        for c in range(keys.shape[1]):
            k = keys[i, c]
            h = ((h ^ ((k ^ (k >> 32)) & 0xFFFFFFFF)) * 16777619) & 0xFFFFFFFF
        s = (h ^ (h >> 15)) & (size - 1)
        while True:
            g = table[s]
            if g < 0:
                table[s] = ng
                first[ng] = i
                gid[i] = ng
                ng += 1
                break
            j = first[g]
            same = True
            for c in range(keys.shape[1]):
                if keys[j, c] != keys[i, c]:
                    same = False
                    break
            if same:
                gid[i] = g
                break
            s = (s + 1) & (size - 1)
    return gid, first[:ng].copy()
