"""Cross-core synchronisation of one launch on a separated SoC (Atlas A2): the flags that order an
AI Core group's cube core (AIC) and vector cores (AIV), inter-block flags, SyncAll, and the
detection of waits nothing can release.

One `CrossCoreLaunch` per kernel task; each kernel instance (a core of one group) holds an
`Instance`, the port its code calls through. The rules follow Ascend C's CrossCoreSetFlag /
CrossCoreWaitFlag documentation for Atlas A2:

- every core has a counter per flag id (ids 0..10); `CrossCoreWaitFlag(id)` blocks while its
  own counter is 0, then decrements it (the wait's mode does not change what it waits for);
- `CrossCoreSetFlag<mode>(id)` increments counters, by mode:
  0: once every core of the setter's kind (all AICs, or all AIVs) of the launch has set the id,
     each of them gets +1 (a barrier among cores of one kind);
  1: once every AIV of the setter's group has set it, each of those AIVs gets +1;
  2: an AIC's set gives each AIV of its group +1; once every AIV of a group has set it, the
     group's AIC gets +1;
- a counter holds at most `FLAG_LIMIT` pending sets ("the counter of one flagId can be set at
  most 16 times"); going past it is reported when the launch is checked;
- `ib_set(ws, ub, block_idx, event_id)` / `ib_wait(...)` hand a one-shot flag through a GM
  workspace word, as Ascend C's IBSet / IBWait do (they poll the int32 word of (block_idx,
  event_id) in the workspace): a set waits until the word is 0 and makes it 1, a wait waits
  until it is 1 and makes it 0. The word in GM is the state (read and written under the
  launch's lock), so pairs meet exactly when they name one word of one workspace, and a
  workspace not initialised to 0 behaves as on the NPU (a set on a word left at 1 waits);
- SyncAll: a barrier over the AIVs of the launch (`is_aiv_only`, the default) or over all its
  cores;
- the Matmul client/server channel of a MIX kernel that registers an `asc.adv.Matmul` (Ascend
  C's KfcCommClient / KfcServer): an AIV posts a message (a list of int64 words) to its group's
  AIC (`kfc_post`) and waits for the answer (`kfc_wait`); the AIC takes the messages
  (`kfc_recv`, blocking) from its AIVs in turn, sub-block 0, 1, 0, ... (the next message of the
  AIV whose turn it is; another's only while that one has finished or is blocked: a fixed
  order, so the AIC's recorded stream does not depend on thread timing), and answers one AIV
  (`kfc_reply`); `kfc_recv` returns None once every AIV of the group has finished (the End
  message of each client's kernel end). Each hand-off orders GM as a flag does.

A wait nothing can release is a fault, not a hang: each time an instance blocks or ends, the
instances that could release it are checked (its group's, or the whole launch's when the kernel
synchronises across groups); if every one of them has started and is blocked or finished, every
blocked one is released with the same message naming each instance, what it waits on (flag id
and mode) and its source line.

Counting natively: in a launch that needs no rule only the lock can keep (`native`: no counter
limit, no GM order, no flags between groups), the kernel's primitives count sets and take waits
with atomic operations on the launch's `NativeWords` (rt.crossnative, which also says how a
wait sleeps on a futex); a wait still finding its counter at 0 after its futex slices, or
without futexes, calls `wait_native` and blocks under the lock, and deadlock detection covers
it as any other wait.

Fidelity: matches the counting rules above and the ordering they give (nothing after a released
wait runs before the sets that released it). Approximated: a set counts at once (on hardware when
its pipe has drained, which program order gives here); a wait that blocks costs a thread
hand-off (tens of us; a wake goes to the released instance only).
"""
from __future__ import annotations

import threading
from collections import deque

from .crossnative import CTL_DEFER, NativeWords
from .gmorder import GMOrder, join

__all__ = ["CrossCoreLaunch", "Instance", "FLAG_IDS", "FLAG_LIMIT", "AIC", "AIV",
           "PASSED", "ABORTED", "FAILED"]

AIC, AIV = "AIC", "AIV"
FLAG_IDS = 11          # Atlas A2: flagId 0..10
FLAG_LIMIT = 16        # pending sets one flag counter holds
PASSED, ABORTED, FAILED = 0, -1, 1   # statuses of the blocking calls (FAILED: see .error)

_NEW, _RUN, _BLOCKED, _DONE = range(4)



class Instance:
    """One kernel instance of a launch (a core of one group): what its synchronising calls go
    through (rt hands it to `run_blocks` as `barrier`)."""

    __slots__ = ("launch", "group", "role", "sub", "block_idx", "index", "state", "counters",
                 "waiting", "error", "ready", "vc", "pending", "cv", "ctl", "__weakref__")

    def __init__(self, launch, group: int, role: str, sub: int, block_idx: int):
        self.launch, self.group, self.role, self.sub = launch, group, role, sub
        self.block_idx = block_idx      # GetBlockIdx as the NPU numbers this core
        self.index = len(launch.instances)   # in the launch: group * cores per group + slot
        self.state = _NEW
        self.counters = launch.nat.ctr[self.index]   # a row of the launch's counters
        self.waiting = ""               # what it is blocked on, with its source line
        self.error = ""                 # the message of a FAILED status
        self.ready = None               # while blocked: does its wait pass now?
        self.vc = None                  # tracking GM order: its vector clock (rt.gmorder) ...
        self.pending = None             # ... and per flag id the clocks of its pending sets
        self.cv = None                  # made when it first blocks: it alone waits on it
        self.ctl = None                 # its control block (rt.crossnative; set by the launch)

    @property
    def name(self) -> str:
        if self.role == AIC or len(self.launch.roles) == 1:
            return f"{self.role} {self.block_idx}"
        if self.launch.n_aiv == 1:
            return f"AIV {self.block_idx} (group {self.group})"
        return f"AIV {self.block_idx} (group {self.group}, sub-block {self.sub})"

    # the BlockBarrier face rt's range runner uses
    @property
    def broken(self) -> bool:
        return self.launch.broken

    @property
    def fail_lock(self):
        return self.launch.fail_lock

    def begin(self) -> bool:
        """The instance starts running; False if the launch has failed (skip it)."""
        return self.launch.begin(self)

    def leave(self) -> None:
        self.launch.finished(self)

    def abort(self) -> None:
        self.launch.abort()

    def wait(self, aiv_only: bool = True, where=None) -> int:
        """SyncAll."""
        return self.launch.sync_all(self, aiv_only, where)


class _KeyedWord:
    """An ib word with no GM behind it: an entry of its launch's table (0 until set)."""

    __slots__ = ("key", "_table")

    def __init__(self, table, key):
        self.key, self._table = key, table

    def read(self) -> int:
        return self._table.get(self.key, 0)

    def write(self, v) -> None:
        self._table[self.key] = v


class CrossCoreLaunch:
    """The synchronisation state of one launch: `groups` groups of the cores in `roles` (e.g.
    ("AIC", "AIV", "AIV") for MIX_AIC_1_2, ("AIV",) for a vector-only kernel); `across_groups`:
    the kernel synchronises between groups (all of them are resident; deadlocks are judged over
    the launch, else per group); `check_limit`: exceeding FLAG_LIMIT is an error; `track_gm`:
    GM read / written by different instances must be ordered by the flags (rt.gmorder)."""

    def __init__(self, groups: int, roles, across_groups: bool, check_limit: bool = True,
                 track_gm: bool = False):
        self.groups, self.roles = groups, tuple(roles)
        self.n_aiv = sum(r == AIV for r in self.roles)
        self.across_groups = across_groups
        self.check_limit = check_limit
        self.lock = threading.Lock()     # guards the state below; each instance blocks on its cv
        self.fail_lock = threading.Lock()
        self.broken = False
        # flags counted in native code (the kernel's primitives, atomically, without the GIL)
        # unless a rule needs the lock: the counter limit and GM order (checked mode), flags
        # between groups (mode 0, ib words, SyncAll)
        self.native = not (check_limit or track_gm or across_groups)
        self.nat = NativeWords(groups, len(self.roles), FLAG_IDS, self.native)
        self.instances = []
        for g in range(groups):
            sub = 0
            for r in self.roles:
                if r == AIC:
                    idx = g
                else:
                    idx = g * self.n_aiv + sub if self.n_aiv else g
                self.instances.append(Instance(self, g, r, sub if r == AIV else 0, idx))
                sub += r == AIV
        aic_slot = self.roles.index(AIC) if AIC in self.roles else -1
        aiv_mask = sum(1 << s for s, r in enumerate(self.roles) if r == AIV)
        ctl = self._ctl = self.nat.control_blocks(aic_slot, aiv_mask)
        for i in self.instances:
            i.ctl = ctl[i.index]         # a row: contiguous, its own address
        self._kind = {AIC: [i for i in self.instances if i.role == AIC],
                      AIV: [i for i in self.instances if i.role == AIV]}
        self._arrivals = {}      # (scope, flag) -> {instance: sets}
        self._released = {}      # (scope, flag) -> sets every member has made
        self._words = {}         # ib words given by key alone (no GM behind them): key -> 0/1
        self._sync = {}          # aiv_only -> [arrived, generation]
        self._kfc = {}           # (group, sub) -> deque of (words, clock): messages to the AIC
        self._kfc_turn = {}      # group -> the sub-block whose message its AIC takes next
        self._kfc_ans = {}       # AIV instance -> deque of (value, clock): the AIC's answers
        self.unstarted = len(self.instances)
        # what the binary makes once per launch for all its instances (ascendc: the flattened
        # arguments); the core pool drops it when the launch ends (CorePool._done)
        self.binary_data = None
        self._cancel_taken = False
        self.gm = GMOrder() if track_gm else None
        if track_gm:
            n = len(self.instances)
            for i in self.instances:
                i.vc = [0] * n
                i.vc[i.index] = 1
                i.pending = [deque() for _ in range(FLAG_IDS)]
            self._arrival_vcs = {}   # (scope, flag) -> {instance: clocks of its unreleased sets}
            self._ib_vc = {}         # GM word -> clock of its last set / wait

    def instance(self, group: int, slot: int) -> Instance:
        return self.instances[group * len(self.roles) + slot]

    def defer_wakes(self) -> bool:
        """Native sets defer their futex wakes until their instance sleeps or ends
        (rt.crossnative: for groups whose threads share one CPU); before any instance starts.
        False where flags are not counted natively or there are no futexes."""
        if not self.native or not self.nat.futexes:
            return False
        self._ctl[:, CTL_DEFER] = 1         # every instance's row (their `ctl` views)
        return True

    # ---- scheduling hooks ------------------------------------------------------------------
    def claim(self) -> bool:
        """A runner is about to start one more instance; False once a cancel took the rest."""
        with self.lock:
            if self._cancel_taken:
                return False
            self.unstarted -= 1
            return True

    def take_unstarted(self) -> int:
        """On cancel: the instances no runner will start (they count as done)."""
        with self.lock:
            n, self.unstarted, self._cancel_taken = self.unstarted, 0, True
            self._abort_locked()
            return n

    def begin(self, inst: Instance) -> bool:
        with self.lock:
            inst.state = _RUN
            return not self.broken

    def finished(self, inst: Instance) -> None:
        self.nat.flush(inst.index)
        with self.lock:
            inst.state = _DONE
            # a wait may hinge on its peers ending (a Matmul server on its clients)
            base = inst.group * len(self.roles)
            for i in self.instances[base:base + len(self.roles)]:
                if i.state == _BLOCKED and i.ready():
                    i.cv.notify()
            self._check_stuck(inst)

    def abort(self) -> None:
        with self.lock:
            self._abort_locked()

    def _wake_all(self) -> None:
        """Wake every blocked instance to re-check its wait (lock held). A flag set wakes only
        the instances whose counters it raised (`_bump`)."""
        for i in self.instances:
            if i.state == _BLOCKED:
                i.cv.notify()

    def _abort_locked(self) -> None:
        if not self.broken:
            self.broken = True
            self._wake_all()
            self.nat.wake_sleepers()

    # ---- cross-core flags ------------------------------------------------------------------
    def _needs_across(self, inst, what) -> bool:
        """A call synchronising groups in a launch not started for it: records the error."""
        if self.across_groups or self.groups == 1:
            return False
        inst.error = (f"{what}: the launch must run all its groups at once (the kernel was not "
                      f"seen synchronising across groups: call it as asc.{what[4:]}(...) in the "
                      f"kernel or an @asc.jit helper, with mode_id a literal 0 for "
                      f"cross_core_set_flag), got {inst.name} calling it")
        return True

    def set_flag(self, inst: Instance, flag: int, mode: int) -> int:
        with self.lock:
            if mode == 0 and self._needs_across(inst, "asc.cross_core_set_flag"):
                return FAILED
            bad = self._mode_error(inst, mode)
            if bad:
                inst.error = f"asc.cross_core_set_flag: {bad}"
                return FAILED
            vc = self._release(inst)
            if mode == 0:
                self._arrive(inst, ("kind", inst.role), flag, self._kind[inst.role], vc)
            elif mode == 1:
                aivs = self._group(inst.group, AIV)
                self._arrive(inst, ("aivs", inst.group), flag, aivs, vc)
            elif inst.role == AIC:
                for v in self._group(inst.group, AIV):
                    self._bump(v, flag, 1, inst, [vc])
            else:
                aivs = self._group(inst.group, AIV)
                rounds = self._arrive(inst, ("to_aic", inst.group), flag, aivs, vc, bump=False)
                for c in self._group(inst.group, AIC):
                    self._bump(c, flag, len(rounds), inst, rounds)
            if inst.error:
                return FAILED
            return PASSED

    def _mode_error(self, inst, mode) -> str:
        roles = "+".join(self.roles)
        if mode == 1 and inst.role != AIV:
            return (f"mode_id=1 must be set by an AIV (it syncs the AIVs of a group), got "
                    f"{inst.name} setting it")
        if mode == 2 and (AIC not in self.roles or AIV not in self.roles):
            return (f"mode_id=2 (AIC <-> AIV of one group) must be used in a MIX kernel "
                    f"(kernel_type MIX_AIC_1_1 or MIX_AIC_1_2), got a launch of {roles} cores")
        return ""

    def _group(self, g, role):
        base = g * len(self.roles)
        return [i for i in self.instances[base:base + len(self.roles)] if i.role == role]

    def _arrive(self, inst, scope, flag, members, vc, bump=True) -> list:
        """`inst` has set `flag` (its clock `vc`) in a collective over `members`; returns one
        entry per round every member has now completed (the joined clocks of its sets when GM
        order is tracked) and, with `bump`, adds those to each member's counter."""
        key = (scope, flag)
        arr = self._arrivals.setdefault(key, {})
        arr[inst] = arr.get(inst, 0) + 1
        if vc is not None:
            self._arrival_vcs.setdefault(key, {}).setdefault(inst, deque()).append(vc)
        done = min(arr.get(m, 0) for m in members) if members else 0
        n = done - self._released.get(key, 0)
        rounds = []
        if n > 0:
            self._released[key] = done
            for _ in range(n):
                rounds.append(self._round_clock(key, members) if vc is not None else None)
            if bump:
                for m in members:
                    self._bump(m, flag, n, inst, rounds)
        return rounds

    def _round_clock(self, key, members) -> list:
        """The joined clocks of the oldest unreleased set of each of `members`."""
        per = self._arrival_vcs[key]
        out = [0] * len(self.instances)
        for m in members:
            join(out, per[m].popleft())
        return out

    def _release(self, inst):
        """Tracking GM order: a copy of `inst`'s clock for what it releases, then a tick."""
        if inst.vc is None:
            return None
        vc = list(inst.vc)
        inst.vc[inst.index] += 1
        return vc

    def _bump(self, target, flag, n=1, setter=None, clocks=None) -> None:
        if target.pending is not None and clocks:
            target.pending[flag].extend(clocks)
        target.counters[flag] += n
        if target.state == _BLOCKED:
            target.cv.notify()
        if self.check_limit and target.counters[flag] > FLAG_LIMIT and not setter.error:
            setter.error = (f"asc.cross_core_set_flag: a flag's counter must hold at most "
                            f"{FLAG_LIMIT} pending sets (CrossCoreSetFlag's limit), got "
                            f"flag_id={flag} of {target.name} at {target.counters[flag]}")

    def wait_flag(self, inst: Instance, flag: int, mode: int, where=None) -> int:
        with self.lock:
            if inst.counters[flag] == 0:
                st = self._block(inst, lambda: inst.counters[flag] > 0,
                                 f"cross_core_wait_flag(flag_id={flag}, mode_id={mode})", where)
                if st != PASSED:
                    return st
            inst.counters[flag] -= 1
            if inst.pending is not None and inst.pending[flag]:
                join(inst.vc, inst.pending[flag].popleft())
            return PASSED

    def wait_native(self, inst: Instance, flag: int, mode: int, where=None) -> int:
        """A native wait found its counter at 0: block until it is not (the caller takes the
        count itself, atomically); PASSED, ABORTED or FAILED. Another core's native set raises
        the counter without the lock, then wakes this one (`wake`) if its blocked word is 1."""
        with self.lock:
            self.nat.mark_blocked(inst.index)
            st = self._block(inst, lambda: inst.counters[flag] > 0,
                             f"cross_core_wait_flag(flag_id={flag}, mode_id={mode})", where)
            self.nat.blk[inst.index] = 0
            return st

    def wake(self, index: int) -> None:
        """A native set raised the counter of instance `index`, which was blocked."""
        with self.lock:
            t = self.instances[index]
            if t.state == _BLOCKED:
                t.cv.notify()

    # ---- inter-block flags (ib_set / ib_wait) ----------------------------------------------
    def ib_set(self, inst: Instance, word, block_idx: int, event_id: int, where=None) -> int:
        """IBSet on `word` (an object with `key`, `read()` and `write(v)`: the int32 GM word of
        (block_idx, event_id) in the caller's workspace)."""
        return self._ib_step(inst, "asc.ib_set", word, 0, block_idx, event_id, where,
                             " (the word is 1: its previous set not yet waited for, or the "
                             "workspace not initialised to 0)")

    def ib_wait(self, inst: Instance, word, block_idx: int, event_id: int, where=None) -> int:
        """IBWait on `word` (see ib_set)."""
        return self._ib_step(inst, "asc.ib_wait", word, 1, block_idx, event_id, where, "")

    def _ib_step(self, inst, api, word, want, block_idx, event_id, where, why) -> int:
        """Wait until the word holds `want`, then store 1 - want. A `word` given as a plain key
        is a word of this launch starting at 0."""
        if not hasattr(word, "read"):
            word = _KeyedWord(self._words, word)
        with self.lock:
            if self._needs_across(inst, api):
                return FAILED
            st = self._block(inst, lambda: word.read() == want,
                             f"{api[4:]}(block_idx={block_idx}, event_id={event_id}){why}",
                             where)
            if st == PASSED:
                word.write(1 - want)
                self._ib_order(inst, word.key)
                self._wake_all()
            return st

    def _ib_order(self, inst, word) -> None:
        """The sets and waits of one ib word take turns: each is ordered after the previous."""
        if inst.vc is not None:
            join(inst.vc, self._ib_vc.get(word))
            self._ib_vc[word] = self._release(inst)

    # ---- SyncAll ---------------------------------------------------------------------------
    def sync_all(self, inst: Instance, aiv_only: bool = True, where=None) -> int:
        with self.lock:
            if self._needs_across(inst, "asc.sync_all"):
                return FAILED
            parties = self._kind[AIV] if aiv_only and self.n_aiv else self.instances
            if inst not in parties:
                inst.error = (f"asc.sync_all: a core taking part must call it, got {inst.name} "
                              f"calling sync_all(is_aiv_only=True) (an AIC takes part with "
                              f"is_aiv_only=False)")
                return FAILED
            # [arrived, generation, joined clocks of the arrivals, those of the last barrier]
            s = self._sync.setdefault(aiv_only, [0, 0, None, None])
            s[0] += 1
            vc = self._release(inst)
            if vc is not None:
                s[2] = vc if s[2] is None else (join(s[2], vc) or s[2])
            if s[0] == len(parties):
                s[0] = 0
                s[1] += 1
                s[2], s[3] = None, s[2]
                if vc is not None:
                    join(inst.vc, s[3])
                self._wake_all()
                return PASSED
            gen = s[1]
            st = self._block(inst, lambda: s[1] != gen, "sync_all()", where)
            if st == PASSED and vc is not None:
                join(inst.vc, s[3])
            return st

    # ---- the Matmul client/server channel (module doc) ---------------------------------------
    def kfc_post(self, inst: Instance, words) -> int:
        """AIV `inst` posts message `words` to its group's AIC."""
        with self.lock:
            if inst.role != AIV or AIC not in self.roles:
                inst.error = (f"asc.adv.Matmul: a Matmul client must be an AIV of a MIX kernel, "
                              f"got {inst.name} posting a message")
                return FAILED
            self._kfc.setdefault((inst.group, inst.sub), deque()).append(
                (list(words), self._release(inst)))
            self._wake_all()
            return PASSED

    def kfc_recv(self, inst: Instance, where=None):
        """The AIC `inst` takes its group's oldest message: (PASSED, (sub, words)), (PASSED,
        None) once every AIV of the group has finished with none left, or (status, None)."""
        with self.lock:
            aivs = self._group(inst.group, AIV)
            qs = [self._kfc.setdefault((inst.group, v.sub), deque()) for v in aivs]
            turn = self._kfc_turn.get(inst.group, 0)

            def pick():
                if qs[turn]:
                    return turn
                v = aivs[turn]       # finished, or blocked on a wait nothing has released yet
                if v.state == _DONE or (v.state == _BLOCKED and not v.ready()):
                    for j in range(1, len(qs)):
                        if qs[(turn + j) % len(qs)]:
                            return (turn + j) % len(qs)
                return None
            st = self._block(inst, lambda: pick() is not None or
                             all(v.state == _DONE for v in aivs),
                             "the Matmul server's next message (KfcServer)", where)
            sub = pick() if st == PASSED else None
            if sub is None:
                return st, None
            words, vc = qs[sub].popleft()
            self._kfc_turn[inst.group] = (sub + 1) % len(qs)
            if inst.vc is not None:
                join(inst.vc, vc)
            return PASSED, (sub, words)

    def kfc_reply(self, inst: Instance, sub: int, value: int) -> int:
        """The AIC `inst` answers AIV `sub` of its group with `value`."""
        with self.lock:
            aiv = self._group(inst.group, AIV)[sub]
            self._kfc_ans.setdefault(aiv, deque()).append((value, self._release(inst)))
            self._wake_all()
            return PASSED

    def kfc_wait(self, inst: Instance, where=None):
        """AIV `inst` waits for its AIC's answer: (status, value)."""
        with self.lock:
            q = self._kfc_ans.setdefault(inst, deque())
            st = self._block(inst, lambda: bool(q), "the Matmul server's answer (KfcCommClient)",
                             where)
            if st != PASSED:
                return st, 0
            value, vc = q.popleft()
            if inst.vc is not None:
                join(inst.vc, vc)
            return PASSED, value

    # ---- GM order (checked mode) -----------------------------------------------------------
    def gm_access(self, inst: Instance, addr: int, nbytes: int, write: bool, api: str,
                  where=None, rows: int = 1, step: int = 0) -> int:
        """Instance `inst` reads (writes) GM bytes [addr, addr + nbytes) (and `rows` - 1 more
        rows, `step` bytes apart): FAILED with `inst.error` when another instance's access of
        them is not ordered by the flags."""
        if self.gm is None:
            return PASSED
        with self.lock:
            msg = self.gm.access(inst, addr, nbytes, write, api, where, rows, step)
        if msg:
            inst.error = msg
            return FAILED
        return PASSED

    # ---- blocking and deadlock detection ---------------------------------------------------
    def _block(self, inst, ready, what, where) -> int:
        """Wait (lock held) until `ready()`; PASSED, ABORTED, or FAILED with `inst.error`."""
        if ready():
            return PASSED
        inst.state = _BLOCKED
        inst.ready = ready
        if inst.cv is None:
            inst.cv = threading.Condition(self.lock)
        loc = where() if where is not None else None
        inst.waiting = what + (f" at {loc}" if loc else "")
        self._check_stuck(inst)
        while not ready() and not self.broken and not inst.error:
            inst.cv.wait()
        inst.state = _RUN
        inst.waiting = ""
        if ready() and not self.broken and not inst.error:
            return PASSED
        return FAILED if inst.error else ABORTED

    def _check_stuck(self, inst) -> None:
        """After `inst` blocked or ended: if every instance that could release a blocked one is
        blocked or finished, fail them all with one message."""
        if self.broken or inst.error:
            return
        if self.across_groups:
            scope, what = self.instances, "launch"
        else:
            base = inst.group * len(self.roles)
            scope, what = self.instances[base:base + len(self.roles)], f"group {inst.group}"
        blocked = [i for i in scope if i.state == _BLOCKED and not i.error]
        if not blocked or any(i.state in (_NEW, _RUN) for i in scope):
            return
        if any(i.ready() for i in blocked):
            # a blocked core whose wait passes now can still run: wake it (an ib word may have
            # been written by a plain copy, which notifies nobody)
            self._wake_all()
            return
        if self.across_groups and self.unstarted:
            return
        lines = [f"{i.name} waits on {i.waiting}" for i in blocked]
        ended = [i.name for i in scope if i.state == _DONE]
        if ended:
            lines.append(f"ended: {', '.join(ended[:8])}" +
                         (f" and {len(ended) - 8} more" if len(ended) > 8 else ""))
        msg = (f"cross-core deadlock: a wait must be released by a core that can still run "
               f"(the NPU would hang), got every core of the {what} blocked or finished:\n    " +
               "\n    ".join(lines))
        for i in blocked:       # they fail; rt then aborts the launch (after recording the fault)
            i.error = msg
        self._wake_all()
