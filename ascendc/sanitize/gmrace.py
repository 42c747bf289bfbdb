"""racecheck across the instances of one launch: GM bytes one instance (a block, or an AIC / AIV
of a MIX kernel's group) writes and another reads or writes, with nothing ordering the two.

Each instance's pass (analysis.BlockPass) gives its GM accesses and its synchronising calls
(cross_core_set_flag / cross_core_wait_flag, ib_set / ib_wait, sync_all), each with the vector
clock of the pipe that ran it over the instance's own pipes. This module replays the calls of
the launch's instances together with the counting rules of the execution (rt/crossflags.py,
CrossCoreSetFlag on Atlas A2):
  mode 0: once every core of the setter's kind has made its n-th set of the id, each gets a count;
  mode 1: the same over the AIVs of the setter's group;
  mode 2: an AIC's set gives each AIV of its group a count; once every AIV of the group has made
          its n-th set, the group's AIC gets one;
  a wait takes the counts of its id in the order they came;
  a served Matmul's messages (adv/kfc.py, mode 3 in the NPU view): point to point between an AIC
          and an AIV of its group, a set naming the slot of the core it reaches (0 the AIC, 1 + k
          the group's k-th AIV), a wait the slot it waits for; each (sender, receiver) pair is a
          queue taken in order, as the hardware's message queue is;
  ib_set / ib_wait hand one word over
  (a set only once the word's earlier set was taken); the n-th sync_all of every instance that
  calls it is one barrier.
A set carries what its pipe has seen (its clock over its instance's pipes, and what earlier waits
it has seen brought in from other instances); the wait that takes its count brings that in, for
the ops of the wait's pipe issued after it (a wait on the scalar unit, as cross_core_wait_flag's
default PIPE_S, ib_wait and sync_all: every later op). Knowledge is an array (instances x pipes)
of the latest op of each pipe of each instance known complete.

Two accesses of different instances to overlapping bytes, one a write, conflict unless one is
known complete before the other: WAW is the multi-core GM stomp, RAW / WAR a multi-core GM race.
Approximations: a core receiving counts of one flag id from two kinds of set (e.g. mode 1 and
mode 2) takes them in the order the replay met them (one order the hardware could take); waits
the replay cannot release (the launch stopped on a fault) are taken to know everything, so they
cause no report; `sync_all(is_aiv_only)` is a barrier over the instances that call it.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from . import gmscan
from .analysis import LANES
from .report import Finding
from .scan import G_COLS

_NL = len(LANES)
_EVERYTHING = np.iinfo(np.int64).max // 2


@dataclass
class Track:
    """What one instance's pass recorded for this check."""
    label: str                  # aic(0), aiv(1), aiv(3)
    role: str | None            # "AIC" / "AIV" in a MIX-style launch, None for a plain block
    group: int
    gm: np.ndarray              # per GM access: lo, hi, write, lane, line, block, step, lane
    #                             clock (7 columns): analysis.BlockPass.gm
    points: list                # (kind, key, lane, lane clock)
    index: int = 0
    # filled by the replay: per lane, the clock values of its waits and the knowledge brought in
    # by the first k of them (joined)
    wait_t: list = field(default_factory=lambda: [[] for _ in range(_NL)])
    wait_k: list = field(default_factory=lambda: [[] for _ in range(_NL)])


class _Replay:
    def __init__(self, tracks):
        self.tracks = tracks
        self.n = len(tracks)
        for i, t in enumerate(tracks):
            t.index = i
        self.cursor = [0] * self.n
        self.gains: dict = {}           # (instance, flag) -> deque of knowledge arrays
        self.rounds: dict = {}          # (mode, scope, flag) -> {instance: [exports]}
        self.done_rounds: dict = {}     # (mode, scope, flag) -> rounds completed
        self.words: dict = {}           # ib word -> [pending export or None, last taker's]
        self.syncs: dict = {}           # n-th sync_all -> {instance: export}
        self.sync_parties = {t.index for t in tracks
                             if any(p[0] == "sync_all" for p in t.points)}
        self.slot = {}                  # instance -> its slot in its group (the messages' names)
        self.at_slot = {}               # (group, slot) -> instance
        for g in {t.group for t in tracks}:
            aivs = sorted((t for t in tracks if t.role == "AIV" and t.group == g), key=_block_idx)
            members = [(0, t) for t in tracks if t.role == "AIC" and t.group == g]
            for s, t in members + [(1 + k, t) for k, t in enumerate(aivs)]:
                self.slot[t.index], self.at_slot[(g, s)] = s, t.index
        self._cache: dict = {}

    # -- knowledge --------------------------------------------------------------------------
    def known(self, t: Track, clock) -> np.ndarray | None:
        """What an op of instance `t` whose pipe clock is `clock` knows of the other instances
        (None: nothing)."""
        counts = tuple(bisect_right(t.wait_t[q], clock[q]) for q in range(_NL))
        key = (t.index, counts)
        got = self._cache.get(key, False)
        if got is not False:
            return got
        k = None
        for q, c in enumerate(counts):
            if c:
                imp = t.wait_k[q][c - 1]
                k = imp.copy() if k is None else np.maximum(k, imp, out=k)
        self._cache[key] = k
        return k

    def export(self, t: Track, clock) -> np.ndarray:
        k = self.known(t, clock)
        out = np.zeros((self.n, _NL), np.int64) if k is None else k.copy()
        out[t.index] = np.maximum(out[t.index], clock)
        return out

    def bring_in(self, t: Track, lane: int, tick: int, imp) -> None:
        prev = t.wait_k[lane][-1] if t.wait_k[lane] else None
        if imp is None:
            imp = np.zeros((self.n, _NL), np.int64) if prev is None else prev
        elif prev is not None:
            imp = np.maximum(prev, imp)
        t.wait_t[lane].append(tick)
        t.wait_k[lane].append(imp)
        self._cache = {k: v for k, v in self._cache.items() if k[0] != t.index}

    # -- the replay -------------------------------------------------------------------------
    def run(self):
        progress = True
        while progress:
            progress = False
            for t in self.tracks:
                while self.cursor[t.index] < len(t.points) and self.step(t):
                    self.cursor[t.index] += 1
                    progress = True
        for t in self.tracks:       # stalled (the launch stopped): assume these waits know all
            for kind, _, lane, clock in t.points[self.cursor[t.index]:]:
                if kind != "set":
                    self.bring_in(t, lane, clock[lane],
                                  np.full((self.n, _NL), _EVERYTHING, np.int64))

    def step(self, t: Track) -> bool:
        kind, key, lane, clock = t.points[self.cursor[t.index]]
        tick = clock[lane]
        if kind == "set":
            flag, mode = key
            self.set_flag(t, flag, mode, self.export(t, clock))
            return True
        if kind == "p2p_set":       # a message to the core in slot `key` of the group
            to = self.at_slot.get((t.group, key))
            if to is not None:
                self.gains.setdefault((to, ("p2p", self.slot.get(t.index))), deque()).append(
                    self.export(t, clock))
            return True
        if kind == "wait" or kind == "p2p_wait":
            q = self.gains.get((t.index, key if kind == "wait" else ("p2p", key)))
            if not q:
                return False
            self.bring_in(t, lane, tick, q.popleft())
            return True
        if kind == "ib_set":
            word = self.words.setdefault(key, [None, None])
            if word[0] is not None:
                return False
            self.bring_in(t, lane, tick, word[1])
            word[0] = self.export(t, clock)
            return True
        if kind == "ib_wait":
            word = self.words.get(key)
            if word is None or word[0] is None:
                return False
            self.bring_in(t, lane, tick, word[0])
            word[0], word[1] = None, self.export(t, clock)
            return True
        # sync_all: the key-th barrier of every instance calling it
        got = self.syncs.setdefault(key, {})
        if t.index not in got:
            got[t.index] = self.export(t, clock)
        if len(got) < len(self.sync_parties):
            return False
        imp = None
        for e in got.values():
            imp = e.copy() if imp is None else np.maximum(imp, e, out=imp)
        self.bring_in(t, lane, tick, imp)
        return True

    def set_flag(self, t: Track, flag: int, mode: int, exp) -> None:
        if mode == 2 and t.role == "AIC":
            for r in self.tracks:
                if r.role == "AIV" and r.group == t.group:
                    self.gains.setdefault((r.index, flag), deque()).append(exp)
            return
        if mode == 0:
            parties = [r for r in self.tracks if r.role == t.role]
            receivers, scope = parties, t.role
        else:
            parties = [r for r in self.tracks if r.role == "AIV" and r.group == t.group]
            receivers = parties if mode == 1 else [r for r in self.tracks if r.role == "AIC"
                                                   and r.group == t.group]
            scope = t.group
        rkey = (mode, scope, flag)
        got = self.rounds.setdefault(rkey, {})
        got.setdefault(t.index, []).append(exp)
        n = self.done_rounds.get(rkey, 0)
        while all(len(got.get(r.index, ())) > n for r in parties):
            imp = None
            for r in parties:
                e = got[r.index][n]
                imp = e.copy() if imp is None else np.maximum(imp, e, out=imp)
            for r in receivers:
                self.gains.setdefault((r.index, flag), deque()).append(imp)
            n += 1
        self.done_rounds[rkey] = n


def _block_idx(t: Track) -> int:
    """The block index in an instance's label (aiv(3) -> 3)."""
    return int(t.label[t.label.index("(") + 1:-1])


def check(kernel: str, tracks: list, where, gm_name) -> list:
    """Findings of the GM accesses of `tracks` (one launch's instances) no synchronisation
    orders; where(line id) -> (file, line); gm_name(address) -> (argument name, offset). The
    sweep over the accesses and the search of each overlapping pair are compiled (gmscan.py)."""
    if len(tracks) < 2 or not any(len(t.gm) for t in tracks):
        return []
    rp = _Replay(tracks)
    rp.run()
    g, line, tick, counts, woff, know = _groups(tracks)
    found, seen = [], set()
    for o, i, a, b, lo, hi in gmscan.sweep(g, tick, counts, woff, know):
        acc_a = (int(g[o, 0]), int(g[o, 1]), bool(g[o, 4]), int(line[a]))
        acc_b = (int(g[i, 0]), int(g[i, 1]), bool(g[i, 4]), int(line[b]))
        # one report per pair of instances and lines (not per address)
        sig = tuple(sorted(((acc_a[0], acc_a[2], acc_a[3]), (acc_b[0], acc_b[2], acc_b[3]))))
        if sig not in seen:
            seen.add(sig)
            found.append(_finding(kernel, tracks, acc_a, acc_b, where, gm_name,
                                  (int(lo), int(hi))))
    return found


def _groups(tracks):
    """The launch's GM accesses for gmscan.sweep: grouped by (instance, pipe, lo, hi, write,
    block, step), each group in issue order, the groups in the order the check visits them
    (by lo, then hi, then first access); with each access's line, tick and wait counts, and the
    knowledge the replay gave each instance's waits."""
    n = len(tracks)
    woff = np.zeros((n, _NL), np.int64)
    wn = np.zeros((n, _NL), np.int64)
    ticks, know = [], []
    for t in tracks:
        for q in range(_NL):
            woff[t.index, q], wn[t.index, q] = len(ticks), len(t.wait_t[q])
            ticks += t.wait_t[q]
            know += t.wait_k[q]
    know = np.stack(know) if know else np.zeros((1, n, _NL), np.int64)
    acc = np.concatenate([np.asarray(t.gm, np.int64).reshape(-1, G_COLS) for t in tracks])
    inst = np.repeat(np.array([t.index for t in tracks], np.int64), [len(t.gm) for t in tracks])
    keep = acc[:, 1] > acc[:, 0]
    if not keep.all():
        acc, inst = acc[keep], inst[keep]
    keys = np.ascontiguousarray(np.stack((inst, acc[:, 3], acc[:, 0], acc[:, 1], acc[:, 2],
                                          acc[:, 5], acc[:, 6]), axis=1))
    gid, first = gmscan.group_ids(keys)         # numbered in the order of their first access
    visit = np.lexsort((np.arange(len(first)), acc[first, 1], acc[first, 0]))
    rank = np.empty(len(first), np.int64)
    rank[visit] = np.arange(len(first))
    order = np.argsort(rank[gid], kind="stable")        # by group rank, then issue order
    bounds = np.zeros(len(first) + 1, np.int64)
    np.cumsum(np.bincount(gid, minlength=len(first))[visit], out=bounds[1:])
    acc, inst = acc[order], inst[order]
    g = np.empty((len(first), 9), np.int64)
    g[:, :7] = keys[first[visit]]
    g[:, 7], g[:, 8] = bounds[:-1], bounds[1:]
    clock = np.ascontiguousarray(acc[:, 7:])
    tick = clock[np.arange(len(acc)), acc[:, 3]].copy()
    counts = gmscan.wait_counts(inst, clock, woff, wn, np.array(ticks, np.int64))
    return g, acc[:, 4].copy(), tick, counts, woff, know


def _finding(kernel, tracks, acc_a, acc_b, where, gm_name, both):
    """The report of two accesses (instance, pipe, write, line) nothing orders."""
    ia, la, wa, line_a = acc_a
    ib, lb, wb, line_b = acc_b
    lo, hi = both
    size = hi - lo
    name, off = gm_name(lo)
    address = f"GM argument {name!r} offset {off}" if name else f"GM address {lo:#x}"
    la_name, lb_name = tracks[ia].label, tracks[ib].label
    if wa and wb:
        return Finding("Stomp", f"write of size {size} to GM bytes another block writes",
                       kernel, lb_name, where(line_b), address,
                       other=(f"block {la_name} ({LANES[la]}) wrote at", where(line_a)),
                       detail=f"nothing orders the two blocks' writes: {_HOW}")
    # name the writer first (which of the two ran first is what nothing decides)
    (iw, lw, w), (ir, lr, r) = ((ia, la, line_a), (ib, lb, line_b)) if wa else \
        ((ib, lb, line_b), (ia, la, line_a))
    return Finding("GMRace", f"potential RAW/WAR hazard on GM between {tracks[iw].label} and "
                   f"{tracks[ir].label}", kernel, tracks[ir].label, where(r), address,
                   other=(f"{tracks[iw].label} ({LANES[lw]}) wrote at", where(w)),
                   detail=f"{tracks[ir].label} ({LANES[lr]}) reads {size} bytes "
                          f"{tracks[iw].label} writes and nothing orders the two: {_HOW}")


_HOW = ("a cross_core_set_flag on the writing pipe after the write and a cross_core_wait_flag "
        "on the other side's pipe before its access (or ib_set -> ib_wait, sync_all) orders them")
