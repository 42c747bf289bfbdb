"""Cross-core and inter-block synchronisation: `cross_core_set_flag` / `cross_core_wait_flag`
(Ascend C CrossCoreSetFlag<modeId, pipe>(flagId) / CrossCoreWaitFlag(flagId)), `ib_set` /
`ib_wait` (IBSet / IBWait through a GM workspace) and `sync_all` in a MIX launch.

Each call reaches the launch's synchronisation state (rt.crossflags: the counting rules of each
mode, deadlock detection) through the bridge in ascendc/lang/crosscore.py. The launcher runs a
kernel that calls them with its instances at once (rt.mixlaunch); a kernel launched otherwise
(the calls were not seen in its source) gets an error naming the call.

Checked here (both modes): flagId in 0..10 (Atlas A2), modeId in 0..2, the set's pipe neither
PIPE_S nor PIPE_ALL, and an ib_set / ib_wait word inside its GM workspace (the word of
(block_idx, event_id) is int32 element `8 * (cores * event_id + block_idx)`, cores = the
launch's cores of the caller's kind).

In a launch whose flags count natively (rt.crossflags: unchecked, flags within groups) a set of
mode 1 or 2 and a wait that finds its counter above 0 are atomic operations on the launch's
counters, with no call into Python (`_native_set`, `_native_wait`); the counting rules are
those of rt.crossflags. A wait that finds its counter at 0 blocks natively where the launch
offers Linux futexes (`_native_block`: FUTEX_WAIT on the instance's blocked word, FUTEX_WAKE from
the set that raises the counter it waits on; in a group pinned to one CPU, that set's
instance when it next sleeps or ends: rt.crossnative's deferred wakes), in slices, checking
between them whether the launch was aborted; after the launch's number of slices (or without
futexes) it blocks in rt.crossflags, which reports deadlocks.
"""
from ..core import prim, FLAG_DEFER, flush_pending
from ..crosscore import (call_xcore, xcore_load, xcore_add, xcore_cas, xcore_store, xcore_syscall,
                         OP_SET, OP_WAIT,
                         OP_IB_SET, OP_IB_WAIT, OP_SYNC_ALL, OP_WAIT_NATIVE, OP_WAKE,
                         OP_GM, OP_GM_ROWS, ROLE_AIV, ROW_BITS, STEP_BITS, ROWS_BITS, STEP_SHIFT,
                         ROWS_SHIFT)
from ..errors import FAULT, fault, KernelError
from ..state import MEM, STATE
from .. import trace
from .ktype import core_kernel_type, MIX_AIC_1_2

__all__ = ["cross_core_set_flag", "cross_core_wait_flag", "ib_set", "ib_wait", "mix_sync_all",
           "gm_order", "gm_order_rows"]

N_FLAG_IDS = 11       # Atlas A2: flagId 0..10
_OP_XSET, _OP_XWAIT, _OP_IB_SET, _OP_IB_WAIT = (
    trace.op("cross_core_set_flag"), trace.op("cross_core_wait_flag"), trace.op("ib_set"),
    trace.op("ib_wait"))


@prim
def _flush(ctx):
    if ctx[STATE][0].options & FLAG_DEFER:
        flush_pending(ctx, 0, ctx[MEM].size)


@prim
def _check_flag(ctx, api, flag_id, mode_id):
    if flag_id < 0 or flag_id >= N_FLAG_IDS:
        fault("{}: flag_id must be in [0, {}] on Atlas A2, got flag_id={}", api,
              N_FLAG_IDS - 1, flag_id)
        raise KernelError(FAULT)
    if mode_id < 0 or mode_id > 2:
        fault("{}: mode_id must be 0, 1 or 2, got mode_id={}", api, mode_id)
        raise KernelError(FAULT)
    if ctx[STATE][0].xcore == 0:
        fault("{}: the launch must run the kernel's cores at once (the kernel was not seen "
              "calling it: call it as asc.{}(...) in the kernel or an @asc.jit helper), got "
              "flag_id={}", api, api[4:], flag_id)
        raise KernelError(FAULT)


@prim
def _status(ctx, r, api):
    if r == 0:
        return
    if r < 0:
        raise KernelError("the launch was aborted because another core of it failed (that "
                          "core's error is the one reported)")
    raise KernelError(FAULT)      # the bridge recorded the message


# words of an instance's control block (rt.crossnative.CTL_WORDS), as byte offsets
_C_NATIVE, _C_INDEX, _C_CTR, _C_BLK, _C_ARR, _C_REL, _C_BASE, _C_AIC, _C_AIVS, _C_CORES, \
    _C_GROUP, _C_GLOB, _C_SYS, _C_FUTEX, _C_TS, _C_SLICES, _C_SPINS, _C_DEFER, _C_PEND = \
    0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 128, 136, 144, 152
# the launch's shared words (rt.crossnative.GLOB_WORDS): aborted, futex sleeps, futex wakes, waits
# that went on blocking in rt.crossflags, wakes deferred
_G_BROKEN, _G_SLEEPS, _G_WAKES, _G_FALLBACKS, _G_DEFERRED = 0, 8, 16, 24, 32
# an instance's blocked word: 0 running, 1 blocked in rt.crossflags, 2 + f asleep on its futex
# waiting for flag f
_B_PYTHON, _B_FUTEX = 1, 2
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129


@prim
def _native_raise(st, idx, flag, n):
    """Counter `flag` of instance `idx` += n; wake it if it is blocked on that counter."""
    ctl = st.xcore
    xcore_add(xcore_load(ctl + _C_CTR) + (idx * N_FLAG_IDS + flag) * 8, n)
    blk = xcore_load(ctl + _C_BLK) + idx * 8
    b = xcore_load(blk)
    if b == _B_FUTEX + flag:
        if xcore_cas(blk, b, 0) != 0:
            if xcore_load(ctl + _C_DEFER) != 0:     # woken when this instance sleeps or ends
                xcore_add(xcore_load(ctl + _C_GLOB) + _G_DEFERRED, 1)
                pend = xcore_load(ctl + _C_PEND)
                xcore_store(pend, xcore_load(pend) | (1 << (idx - xcore_load(ctl + _C_BASE))))
            else:
                xcore_add(xcore_load(ctl + _C_GLOB) + _G_WAKES, 1)
                xcore_syscall(xcore_load(ctl + _C_SYS), xcore_load(ctl + _C_FUTEX), blk,
                              _FUTEX_WAKE_PRIVATE, 1, 0)
    elif b == _B_PYTHON:
        call_xcore(st.xcore_fn, ctl, OP_WAKE, idx, 0)


@prim
def _native_flush(ctl, sysfn):
    """The futex wakes this instance deferred (rt.crossnative `CTL_DEFER`), now."""
    pend = xcore_load(ctl + _C_PEND)
    p = xcore_load(pend)
    if p == 0:
        return
    xcore_store(pend, 0)
    blk = xcore_load(ctl + _C_BLK) + xcore_load(ctl + _C_BASE) * 8
    for s in range(xcore_load(ctl + _C_CORES)):
        if (p >> s) & 1:
            xcore_add(xcore_load(ctl + _C_GLOB) + _G_WAKES, 1)
            xcore_syscall(sysfn, xcore_load(ctl + _C_FUTEX), blk + s * 8, _FUTEX_WAKE_PRIVATE,
                          1, 0)


@prim
def _native_block(ctl, c, flag, sysfn):
    """Counter `c` (of `flag`) was 0: make the wakes this instance deferred, look at the
    counter the launch's number of spins more, then sleep on this instance's futex for at most
    one slice unless the counter was raised meanwhile. -1 if the launch was aborted, else 0 (the
    caller looks at the counter again)."""
    _native_flush(ctl, sysfn)
    glob = xcore_load(ctl + _C_GLOB)
    if xcore_load(glob + _G_BROKEN) != 0:
        return -1
    for _ in range(xcore_load(ctl + _C_SPINS)):
        if xcore_load(c) > 0:
            return 0
    blk = xcore_load(ctl + _C_BLK) + xcore_load(ctl + _C_INDEX) * 8
    xcore_store(blk, _B_FUTEX + flag)
    # the store above before these reads, a setter's raise before its read of the word: one of
    # the two sees the other's write (both sequentially consistent); a wake that comes first
    # clears the word, and FUTEX_WAIT then returns at once
    if xcore_load(c) == 0 and xcore_load(glob + _G_BROKEN) == 0:
        xcore_add(glob + _G_SLEEPS, 1)
        xcore_syscall(sysfn, xcore_load(ctl + _C_FUTEX), blk, _FUTEX_WAIT_PRIVATE,
                      _B_FUTEX + flag, ctl + _C_TS)
    xcore_store(blk, 0)
    return 0


@prim
def _native_set(st, flag, mode):
    """CrossCoreSetFlag counted natively (mode 2 from the AIC: +1 on each AIV of the group;
    mode 2 from an AIV / mode 1: a round is complete once every AIV of the group has set the
    id, then the AIC / each AIV gets +1 per round). 1: not handled here (mode 0, or a mode
    the caller may not use: the launch reports it)."""
    ctl = st.xcore
    me = xcore_load(ctl + _C_INDEX)
    base = xcore_load(ctl + _C_BASE)
    aic = xcore_load(ctl + _C_AIC)
    aivs = xcore_load(ctl + _C_AIVS)
    cores = xcore_load(ctl + _C_CORES)
    is_aiv = (aivs >> (me - base)) & 1
    if mode == 2:
        if aic < 0 or aivs == 0:
            return 1
        if is_aiv == 0:
            for s in range(cores):
                if (aivs >> s) & 1:
                    _native_raise(st, base + s, flag, 1)
            return 0
        scope = 1
    elif mode == 1 and is_aiv != 0:
        scope = 0
    else:
        return 1
    arr = xcore_load(ctl + _C_ARR)
    xcore_add(arr + ((me * 2 + scope) * N_FLAG_IDS + flag) * 8, 1)
    done = -1
    for s in range(cores):
        if (aivs >> s) & 1:
            a = xcore_load(arr + (((base + s) * 2 + scope) * N_FLAG_IDS + flag) * 8)
            if done < 0 or a < done:
                done = a
    rel = xcore_load(ctl + _C_REL) + ((xcore_load(ctl + _C_GROUP) * 2 + scope) * N_FLAG_IDS +
                                      flag) * 8
    while True:         # the rounds now complete are released once, by whoever counts them
        r = xcore_load(rel)
        if done <= r:
            return 0
        if xcore_cas(rel, r, done) != 0:
            for s in range(cores):
                if (scope == 1 and s == aic) or (scope == 0 and (aivs >> s) & 1):
                    _native_raise(st, base + s, flag, done - r)
            return 0


@prim
def _native_wait(st, flag, mode):
    """CrossCoreWaitFlag counted natively: take one from the counter, blocking while it is 0
    (natively for the launch's futex slices, then in the launch). The launch's status (0
    passed)."""
    ctl = st.xcore
    c = xcore_load(ctl + _C_CTR) + (xcore_load(ctl + _C_INDEX) * N_FLAG_IDS + flag) * 8
    sysfn = xcore_load(ctl + _C_SYS)
    slices = xcore_load(ctl + _C_SLICES) if sysfn != 0 else 0
    while True:
        v = xcore_load(c)
        if v > 0:
            if xcore_cas(c, v, v - 1) != 0:
                return 0
        elif slices > 0:
            slices -= 1
            if _native_block(ctl, c, flag, sysfn) != 0:
                return -1
        else:
            xcore_add(xcore_load(ctl + _C_GLOB) + _G_FALLBACKS, 1)
            r = call_xcore(st.xcore_fn, ctl, OP_WAIT_NATIVE, flag, mode)
            if r != 0:
                return r


@prim
def cross_core_set_flag(ctx, flag_id, mode_id, pipe):
    """CrossCoreSetFlag<mode_id, pipe>(flag_id): count a set on the cores `mode_id` covers."""
    _check_flag(ctx, "asc.cross_core_set_flag", flag_id, mode_id)
    if pipe == 0 or pipe == 6:
        fault("asc.cross_core_set_flag: pipe must not be PIPE_S or PIPE_ALL, got pipe={}", pipe)
        raise KernelError(FAULT)
    _flush(ctx)
    st = ctx[STATE][0]
    trace.event(ctx, _OP_XSET, trace.K_OP, flag_id, mode_id, pipe)
    if xcore_load(st.xcore) != 0 and _native_set(st, flag_id, mode_id) == 0:
        return
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_SET, flag_id, mode_id),
            "asc.cross_core_set_flag")


@prim
def cross_core_wait_flag(ctx, flag_id, mode_id, pipe):
    """CrossCoreWaitFlag(flag_id): block while this core's counter of flag_id is 0, then take
    one."""
    _check_flag(ctx, "asc.cross_core_wait_flag", flag_id, mode_id)
    st = ctx[STATE][0]
    trace.event(ctx, _OP_XWAIT, trace.K_OP, flag_id, mode_id, pipe)
    if xcore_load(st.xcore) != 0:
        r = _native_wait(st, flag_id, mode_id)
    else:
        r = call_xcore(st.xcore_fn, st.xcore, OP_WAIT, flag_id, mode_id)
    _status(ctx, r, "asc.cross_core_wait_flag")
    _flush(ctx)


@prim
def _ib_word(ctx, api, gm, block_idx, event_id):
    st = ctx[STATE][0]
    cores = st.block_num
    if core_kernel_type(ctx) == MIX_AIC_1_2 and st.core_role == ROLE_AIV:
        cores = 2 * st.block_num
    if block_idx < 0 or block_idx >= cores or event_id < 0 or event_id > 0xFFFF:
        fault("{}: block_idx must be in [0, {}) and event_id >= 0, got block_idx={}, "
              "event_id={}", api, cores, block_idx, event_id)
        raise KernelError(FAULT)
    i = 8 * (cores * event_id + block_idx)
    if i >= gm.size:
        fault("{}: gm_workspace must hold the word of (block_idx, event_id) at int32 element "
              "{}, got a workspace of {} elements", api, i, gm.size)
        raise KernelError(FAULT)
    if st.xcore == 0:
        fault("{}: the launch must run all its blocks at once (the kernel was not seen calling "
              "it: call it as asc.{}(...) in the kernel or an @asc.jit helper), got "
              "block_idx={}", api, api[4:], block_idx)
        raise KernelError(FAULT)
    return i


@prim
def ib_set(ctx, gm, ub, block_idx, event_id):
    """IBSet: wait until the GM word of (block_idx, event_id) is 0, then make it 1."""
    i = _ib_word(ctx, "asc.ib_set", gm, block_idx, event_id)
    _flush(ctx)
    st = ctx[STATE][0]
    word = gm.ctypes.data + i * 4
    trace.event_gm(ctx, _OP_IB_SET, trace.K_OP, block_idx, event_id, word, word + 4)
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_IB_SET, word,
                            (block_idx << 16) | event_id), "asc.ib_set")
    ub[0] = 1          # the launch wrote the GM word under its lock (ascendc/lang/crosscore.py)


@prim
def ib_wait(ctx, gm, ub, block_idx, event_id):
    """IBWait: wait until the GM word of (block_idx, event_id) is 1, then make it 0."""
    i = _ib_word(ctx, "asc.ib_wait", gm, block_idx, event_id)
    st = ctx[STATE][0]
    word = gm.ctypes.data + i * 4
    trace.event_gm(ctx, _OP_IB_WAIT, trace.K_OP, block_idx, event_id, word, word + 4)
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_IB_WAIT, word,
                            (block_idx << 16) | event_id), "asc.ib_wait")
    ub[0] = 0
    _flush(ctx)


@prim
def mix_sync_all(ctx, is_aiv_only):
    """SyncAll in a MIX launch: over its AIVs (is_aiv_only) or all its cores."""
    st = ctx[STATE][0]
    _status(ctx, call_xcore(st.xcore_fn, st.xcore, OP_SYNC_ALL, 1 if is_aiv_only else 0, 0),
            "asc.sync_all")


@prim
def _gm_call(st, op, a, b):
    """One GM-order call through the bridge: a fault (its message recorded by the bridge,
    rt.gmorder) or the launch aborted raise."""
    r = call_xcore(st.xcore_fn, st.xcore, op, a, b)
    if r > 0:
        raise KernelError(FAULT)   # the bridge recorded the message
    if r < 0:
        raise KernelError("the launch was aborted because another core of it failed (that "
                          "core's error is the one reported)")


@prim
def gm_order(st, api, addr, nbytes, write):
    """Checked mode, a core of a launch whose cores synchronise (st.xcore set): this core reads
    (`write` 0) or writes GM bytes [addr, addr + nbytes) in `api` (an index of
    crosscore.GM_APIS); a fault when another core's access of them is not ordered by a flag."""
    _gm_call(st, OP_GM + 2 * api + write, addr, nbytes)


@prim
def gm_order_rows(st, api, addr, nbytes, step, rows, write):
    """gm_order for `rows` rows of `nbytes` bytes, each `step` bytes after the previous (a
    strided copy: the bytes between its rows are not accessed), in one call when the numbers
    fit the packed form, else a call per row."""
    if rows <= 1:
        gm_order(st, api, addr, nbytes, write)
    elif 0 <= nbytes < (1 << ROW_BITS) and 0 <= step < (1 << STEP_BITS) and \
            rows < (1 << ROWS_BITS):
        _gm_call(st, OP_GM_ROWS + 2 * api + write, addr,
                 nbytes | (step << STEP_SHIFT) | (rows << ROWS_SHIFT))
    else:
        for i in range(rows):
            gm_order(st, api, addr + i * step, nbytes, write)


# the Matmul client / server primitives (ascendc/adv/kfc.py) hand off as the flags above do
flush_deferred = _flush
call_status = _status
