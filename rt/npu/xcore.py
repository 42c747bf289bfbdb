"""Synchronisation between the cores of a launch replayed from its instances' own streams (the NPU
view of a MIX kernel: `simulate(..., roles=...)`, rt/npu/sim.py).

Each group of the launch (one AI Core: its AIC and one or two AIVs as `roles` lists them, or one
core of a single-role launch) runs on its own cores, every instance its recorded stream, and the
flags between them are dependencies (`Instr.cross`). The counting rules are those the execution
follows (rt/crossflags.py; Ascend C CrossCoreSetFlag / CrossCoreWaitFlag on Atlas A2): every
instance has a counter per flag id, a wait takes one count (in the order they came), and a set
gives counts by its mode:

- mode 0: once every instance of the setter's kind in the launch has made its n-th set of the id,
  each of them gets a count;
- mode 1: the same over the AIVs of the setter's group;
- mode 2: an AIC's set gives each AIV of its group a count; once every AIV of the group has made
  its n-th set, the group's AIC gets one;
- mode 3 (`P2P`, the emulator's hand-offs of a served Matmul, ascendc/adv/kfc.py): a set gives
  one count to the core of its group whose slot in `roles` it names (`Instr.cross[1]`), kept
  apart per sender; a wait names the slot of the core it waits for;
- `ib_set` / `ib_wait` (block_idx, event_id): a one-word handshake between any cores of the
  launch; a set starts only once every earlier set of the word has been taken by a wait, a wait
  takes the earliest set not taken yet. The word is the GM word the call names (`Instr.gm`: the
  word of (block_idx, event_id) in its workspace, as the execution keys it), or (block_idx,
  event_id) for a stream recorded without it.

A counter holds at most `FLAG_LIMIT` (16) counts not yet taken, as in the execution's checked
mode (rt/crossflags.py, CrossCoreSetFlag's "at most 16 times"): a set that would give a 17th
is a ValueError with the execution's message.

Timing: a count (or a set word) is usable `cross_core_flag_cycles` (docs/npu-model.md §1.6) after
the end of the set that completed it (the last set of its round); the wait cannot start before.
A set runs on its pipe once the pipe's copies have landed, as `set_flag` does; sets and waits
cost `flag_latency_cycles` on their pipe. A MIX launch (an AIC and AIVs per group) pays the MIX
head cost on top of the launch overhead (`launch_cycles`, docs/npu-model.md §1.7).
"""
from __future__ import annotations

from collections import deque

from .instr import AIC, AIV

SETS = ("set", "ib_set")
P2P = 3                  # the point-to-point mode (module doc)
FLAG_LIMIT = 16          # counts one flag counter holds (rt/crossflags.py's FLAG_LIMIT)
MIX_HEAD_US = 7.0        # §1.7 CATLASS headCost: 1 + 7 x usedAIC / coreNum us per MIX launch


def ib_word(ins) -> tuple:
    """The key of an ib_set / ib_wait's word: its GM range, else (block_idx, event_id)."""
    return ins.gm or ins.cross[1:]


def launch_cycles(model, roles: tuple, groups: int, n_cores: int) -> float:
    """The launch overhead of a launch of `groups` groups of `roles` on `n_cores` AI Cores:
    `model.launch_overhead_cycles` (headCost's 1 us), plus for a MIX launch (an AIC and AIVs per
    group) 7 us x usedAIC / coreNum, usedAIC = the AICs the groups occupy (at most n_cores) and
    coreNum = the SoC's AI Cores."""
    base = model.launch_overhead_cycles
    if AIC not in roles or AIV not in roles or not model.aic_cores:
        return base
    used = min(groups, n_cores)
    return base + round(MIX_HEAD_US * 1e-6 * model.clock_hz * used / model.aic_cores)


def instance_name(roles: tuple, group: int, slot: int) -> str:
    """An instance as the execution names it (rt/crossflags.Instance.name)."""
    role = roles[slot]
    n_aiv = roles.count(AIV)
    if role == AIC or len(roles) == 1:
        return f"{role} {group}"
    sub = roles[:slot].count(AIV)
    if n_aiv == 1:
        return f"AIV {group} (group {group})"
    return f"AIV {group * n_aiv + sub} (group {group}, sub-block {sub})"


def group_layout(roles: tuple, n_cores: int) -> tuple:
    """(core kinds, slots) of a launch of groups of `roles` on `n_cores` AI Cores (or cores of a
    single-role launch): the AICs of every slot first, then the AIVs (slot s: AIC s, AIVs
    k*s .. k*s + k - 1 for k AIVs per group); slots[s] lists the core indices in `roles` order."""
    n_aic, n_aiv = roles.count(AIC), roles.count(AIV)
    kinds = [AIC] * (n_cores * n_aic) + [AIV] * (n_cores * n_aiv)
    slots = []
    for s in range(n_cores):
        aic, aiv, slot = n_aic * s, n_cores * n_aic + n_aiv * s, []
        for r in roles:
            if r == AIC:
                slot.append(aic)
                aic += 1
            else:
                slot.append(aiv)
                aiv += 1
        slots.append(tuple(slot))
    return kinds, slots


def needs_all_resident(blocks: list) -> bool:
    """Whether a launch synchronises across groups: a mode-0 set or an ib_set / ib_wait."""
    return any(i.cross and (i.cross[0].startswith("ib_") or (i.cross[0] == "set" and
                                                            i.cross[2] == 0))
               for b in blocks for i in b)


def plan_streams(blocks: list, model, n_cores: int, roles: tuple) -> tuple:
    """rt.npu.sim.plan_launch for a launch of groups of `roles` replayed from their own
    streams: block g * len(roles) + k is instance k of group g (module doc)."""
    if set(roles) - {AIC, AIV} or (len(roles) > 1 and roles.count(AIC) != 1):
        raise ValueError(f"simulate: roles must be one AIC and its AIVs, or one core kind, "
                         f"got roles={roles!r}")
    mix = len(roles) > 1
    if mix and not model.separated:
        raise ValueError(f"simulate: a MIX launch needs a separated SoC (AIC + AIV cores), got "
                         f"{model.soc} with separated=False")
    if mix and n_cores > model.aic_cores:
        raise ValueError(f"simulate: a MIX launch places each group on one AI Core, so n_cores "
                         f"must be <= {model.aic_cores} (the AICs of {model.soc}), got "
                         f"n_cores={n_cores}")
    if len(blocks) % len(roles):
        raise ValueError(f"simulate: the streams must be whole groups of roles={roles!r}, got "
                         f"{len(blocks)} streams")
    r = len(roles)
    work = [tuple((blocks[g * r + k], {}) for k in range(r)) for g in range(len(blocks) // r)]
    counts = [sum(1 for i in sub if i.barrier == "SYNC_ALL") for parts in work
              for sub, _ in parts]
    n_sync = set(counts) - {0}
    if len(n_sync) > 1:
        raise ValueError(f"simulate: every instance calling sync_all must call it the same "
                         f"number of times, got {sorted(n_sync)} calls")
    if (n_sync or needs_all_resident(blocks)) and len(work) > n_cores:
        raise ValueError(f"simulate: sync_all, cross_core_set_flag mode 0 and ib_set / ib_wait "
                         f"need every group resident at once, got {len(work)} groups on "
                         f"n_cores={n_cores}: the first wave would wait for groups that never "
                         f"start (deadlock)")
    kinds, slots = group_layout(roles, n_cores)
    return mix, kinds, work, sum(1 for n in counts if n), slots


class CrossFlags:
    """The flag state of one launch of `groups` groups of `roles` (module doc). Instances are
    (group, slot in roles); `core_of` maps each loaded instance to its core. `touch_all` is
    called when a wait took an ib word (a set of the word on any core may start now)."""

    def __init__(self, roles: tuple, groups: int, latency: float, touch_all):
        self.roles, self.groups, self.lat, self.touch_all = roles, groups, latency, touch_all
        self.aivs = [k for k, r in enumerate(roles) if r == AIV]
        self.aics = [k for k, r in enumerate(roles) if r == AIC]
        self.credits: dict = {}         # (instance, flag) -> deque of (usable at, set records)
        self.arrivals: dict = {}        # (scope, flag) -> {instance: [(end, record), ...]}
        self.released: dict = {}        # (scope, flag) -> rounds completed
        self.ib: dict = {}              # ib word (ib_word) -> [sets started, deque]
        self.ib_taken: dict = {}        # ib word -> sets taken by waits
        self.core_of: dict = {}
        self.woken = ()

    def load(self, group: int, cores: tuple) -> None:
        for k, c in enumerate(cores):
            self.core_of[(group, k)] = c

    def _members(self, inst, mode):
        g, k = inst
        if mode == 0:
            kind = self.roles[k]
            return [(h, j) for h in range(self.groups) for j, r in enumerate(self.roles)
                    if r == kind]
        return [(g, j) for j in self.aivs]

    def may_set(self, inst, ins) -> bool:
        """A set may start (its pipe's copies have landed: the caller checks)."""
        if ins.cross[0] == "ib_set":
            key = ib_word(ins)
            word = self.ib.get(key)
            return word is None or word[0] == self.ib_taken.get(key, 0)
        return True

    def due(self, inst, ins):
        """When wait `ins` of instance `inst` may start, or None if nothing released it yet."""
        if ins.cross[0] == "ib_wait":
            word = self.ib.get(ib_word(ins))
            q = word[1] if word is not None else None
        else:
            q = self.credits.get((inst, self._flag(ins)))
        return q[0][0] if q else None

    @staticmethod
    def _flag(ins):
        """A wait's counter: its flag id, or ("p2p", the slot it waits for)."""
        return ("p2p", ins.cross[1]) if ins.cross[2] == P2P else ins.cross[1]

    def take(self, inst, ins):
        """`ins` starts: a wait takes its count (returns the set records that released it)."""
        kind, a, b = ins.cross
        if kind == "ib_set":
            self.ib.setdefault(ib_word(ins), [0, deque()])[0] += 1
            return None
        if kind == "set":
            return None
        if kind == "ib_wait":
            key = ib_word(ins)
            rec = self.ib[key][1].popleft()[1]
            self.ib_taken[key] = self.ib_taken.get(key, 0) + 1
            self.touch_all()
            return rec
        return self.credits[(inst, self._flag(ins))].popleft()[1]

    def fired(self, inst, ins, t: float, rec: int) -> None:
        """Set `ins` of `inst` ended at `t` as record `rec`: count it; `woken` are the cores
        that got counts."""
        kind, a, mode = ins.cross
        if kind == "ib_set":
            self.ib[ib_word(ins)][1].append((t + self.lat, (rec,)))
            self.woken = tuple(self.core_of.values())
            return
        g, k = inst
        if mode == P2P:
            got = [((g, a), t + self.lat, (rec,))]
            a = ("p2p", k)
        elif mode == 2 and self.roles[k] == AIC:
            got = [((g, j), t + self.lat, (rec,)) for j in self.aivs]
        else:
            members = self._members(inst, mode)
            scope = ("aic", g) if mode == 2 else (mode, g if mode else self.roles[k])
            arr = self.arrivals.setdefault((scope, a), {})
            arr.setdefault(inst, []).append((t, rec))
            done = min(len(arr.get(m, ())) for m in members)
            got = []
            for n in range(self.released.get((scope, a), 0), done):
                rnd = [arr[m][n] for m in members]
                at, recs = max(e for e, _ in rnd) + self.lat, tuple(r for _, r in rnd)
                targets = [(g, j) for j in self.aics] if mode == 2 else members
                got += [(m, at, recs) for m in targets]
            self.released[(scope, a)] = max(done, self.released.get((scope, a), 0))
        for m, at, recs in got:
            q = self.credits.setdefault((m, a), deque())
            q.append((at, recs))
            if len(q) > FLAG_LIMIT:
                raise ValueError(f"simulate: asc.cross_core_set_flag: a flag's counter must "
                                 f"hold at most {FLAG_LIMIT} pending sets (CrossCoreSetFlag's "
                                 f"limit), got flag_id={a} of {instance_name(self.roles, *m)} "
                                 f"at {len(q)}")
        self.woken = tuple(self.core_of[m] for m, _, _ in got if m in self.core_of)
