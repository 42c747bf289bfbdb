"""The bridge from kernel code to its launch's cross-core synchronisation (rt.crossflags): flags
between the AIC and AIVs of a group (`cross_core_set_flag` / `cross_core_wait_flag`), inter-block
flags (`ib_set` / `ib_wait`) and `sync_all` in a MIX launch.

As for sync_all (ascendc/lang/barrier.py), the compiled kernel holds no Python object: the core's
state stores a key for the instance's port (an `rt.crossflags.Instance`) and the address of
`CALL_ADDR`, a C callback into Python (ccallback.py; `attach_instance`); the primitives call
that address from nopython code (`call_xcore`). The callback takes the GIL, runs the call
(releasing the GIL while blocked) and returns a status: 0 passed, -1 aborted (another core of
the launch failed: that core's error is the one reported), 1 failed (a fault recorded for the
calling thread with `errors.fault`, so the primitive raises it: a deadlock, a counter past its
limit, ...).

The common case needs no callback: in a launch whose flags count natively (rt.crossflags,
`CrossCoreLaunch.native`: unchecked, flags within groups), `st.xcore` is the address of the
instance's control block and the primitives count sets and take waits with atomic operations
on the launch's counters (`xcore_load`, `xcore_add`, `xcore_cas`); only a wait that finds its
counter at 0 blocks natively too where Linux futexes are available (`xcore_syscall`: libc's
`syscall` called through its address, FUTEX_WAIT on the counter, FUTEX_WAKE from the setter);
elsewhere, or after blocking long (deadlock detection), it calls back (OP_WAIT_NATIVE: block
until it is not), and a set whose target is blocked there wakes it (OP_WAKE).
"""
from __future__ import annotations

import ctypes
import functools
import linecache
import os
import sys
import weakref

import numba
from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic

from .ccallback import guarded_callback
from .errors import fault

__all__ = ["attach_instance", "call_xcore", "xcore_load", "xcore_add", "xcore_cas", "xcore_store",
           "xcore_syscall", "CALL_ADDR",
           "OP_SET", "OP_WAIT", "OP_IB_SET", "OP_IB_WAIT", "OP_SYNC_ALL", "OP_WAIT_NATIVE",
           "OP_WAKE", "OP_KFC", "KFC_POST", "KFC_RECV", "KFC_REPLY", "KFC_WAIT",
           "OP_GM", "OP_GM_ROWS", "ROW_BITS",
           "STEP_BITS", "ROWS_BITS", "STEP_SHIFT", "ROWS_SHIFT", "GM_APIS", "ROLE_AIV", "ROLE_AIC"]

OP_SET, OP_WAIT, OP_IB_SET, OP_IB_WAIT, OP_SYNC_ALL, OP_WAIT_NATIVE, OP_WAKE = 1, 2, 3, 4, 5, 6, 7
# the Matmul client/server channel (ascendc/adv/kfc.py): b = KFC_* + 4 * n, a = the address of
# int64 words (post: n words of the message; recv: [sub, n, words...] written, sub -1 when every
# client has ended; wait: the answer written at a) or the answer itself (reply: n = the AIV's sub)
OP_KFC = 8
KFC_POST, KFC_RECV, KFC_REPLY, KFC_WAIT = 0, 1, 2, 3
# a GM access (checked mode, rt.gmorder): op OP_GM + 2 * api + write, a = address, b = bytes;
# api indexes GM_APIS (its first names are prims/movecore.APIS, in order)
OP_GM = 10
# ... and a strided one (rows of b & ROW_MASK bytes, (b >> STEP_SHIFT) & STEP_MASK apart,
# b >> ROWS_SHIFT of them): op OP_GM_ROWS + 2 * api + write
OP_GM_ROWS = 32
ROW_BITS, STEP_BITS, ROWS_BITS = 22, 26, 14
STEP_SHIFT, ROWS_SHIFT = ROW_BITS, ROW_BITS + STEP_BITS
GM_APIS = ("asc.data_copy", "asc.data_copy_pad", "asc.load_data", "asc.mmad", "asc.fixpipe",
           "GlobalTensor.get_value", "GlobalTensor.set_value", "asc.fixpipe (atomic add)")
ROLE_AIV, ROLE_AIC = 1, 2          # CORE_STATE.core_role of an instance of a MIX launch

#: ports of running instances by key, each with a function giving its current source line
_PORTS: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()
_WHERE: "weakref.WeakKeyDictionary[object, object]" = weakref.WeakKeyDictionary()
#: ... and (mark(), describe(mark)): a cheap token of the current line, formatted when needed
_MARK: "weakref.WeakKeyDictionary[object, object]" = weakref.WeakKeyDictionary()
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PACKAGE_DIRS = (os.path.join(_ROOT, "ascendc") + os.sep, os.path.join(_ROOT, "rt") + os.sep,
                 os.path.dirname(numba.__file__) + os.sep)


def _python_mark():
    """(file, line) of the innermost frame of kernel code (outside ascendc, rt and numba) on
    this thread: an interpreted kernel's line."""
    f = sys._getframe(2)
    while f is not None:
        file = f.f_code.co_filename
        if not file.startswith(_PACKAGE_DIRS):
            return file, f.f_lineno
        f = f.f_back
    return None


def _python_describe(mark):
    if mark is None:
        return None
    text = linecache.getline(mark[0], mark[1]).strip()
    return f"{mark[0]}:{mark[1]}" + (f" ({text})" if text else "")


def _python_line():
    return _python_describe(_python_mark())


def _here(port):
    """A callable giving the caller's current source line later (for rt.gmorder's records)."""
    m = _MARK.get(port)
    if m is None:
        return functools.partial(_python_describe, _python_mark())
    return functools.partial(m[1], m[0]())


class _GMWord:
    """The int32 GM word at `addr` (an ib_set / ib_wait flag): rt.crossflags reads and writes
    it under the launch's lock; `key` identifies it (its address)."""

    __slots__ = ("key", "_cell")

    def __init__(self, addr):
        self.key = addr
        self._cell = ctypes.c_int32.from_address(addr)

    def read(self) -> int:
        return self._cell.value

    def write(self, v) -> None:
        self._cell.value = v


def _call(key, op, a, b):
    try:
        port = _PORTS.get(key)
        if port is None:
            fault("cross-core call: the instance's launch must be running, got key={}", key)
            return 1
        launch = port.launch
        where = _WHERE.get(port) or _python_line
        if op == OP_SET:
            st = launch.set_flag(port, a, b)
        elif op == OP_WAIT:
            st = launch.wait_flag(port, a, b, where)
        elif op == OP_WAIT_NATIVE:
            st = launch.wait_native(port, a, b, where)
        elif op == OP_WAKE:
            launch.wake(a)
            st = 0
        elif op == OP_IB_SET:
            st = launch.ib_set(port, _GMWord(a), b >> 16, b & 0xFFFF, where)
        elif op == OP_IB_WAIT:
            st = launch.ib_wait(port, _GMWord(a), b >> 16, b & 0xFFFF, where)
        elif op == OP_KFC:
            st = _kfc(launch, port, a, b, where)
        elif op >= OP_GM_ROWS:
            nbytes = b & ((1 << ROW_BITS) - 1)
            step = (b >> STEP_SHIFT) & ((1 << STEP_BITS) - 1)
            st = launch.gm_access(port, a, nbytes, bool((op - OP_GM_ROWS) & 1),
                                  GM_APIS[(op - OP_GM_ROWS) >> 1], _here(port),
                                  b >> ROWS_SHIFT, step)
        elif op >= OP_GM:
            st = launch.gm_access(port, a, b, bool((op - OP_GM) & 1), GM_APIS[(op - OP_GM) >> 1],
                                  _here(port))
        else:
            st = launch.sync_all(port, bool(a), where)
        if st > 0:
            fault(port.error.replace("{", "{{").replace("}", "}}"))
        return st
    except BaseException as e:      # noqa: BLE001 - a C callback must not raise
        fault("cross-core call: {}", f"{type(e).__name__}: {e}")
        return 1


def _kfc(launch, port, a, b, where) -> int:
    kind, n = b & 3, b >> 2
    if kind == KFC_POST:
        return launch.kfc_post(port, (ctypes.c_int64 * n).from_address(a)[:])
    if kind == KFC_REPLY:
        return launch.kfc_reply(port, n, a)
    if kind == KFC_WAIT:
        st, value = launch.kfc_wait(port, where)
        ctypes.c_int64.from_address(a).value = value
        return st
    st, msg = launch.kfc_recv(port, where)
    out = (ctypes.c_int64 * (n + 2)).from_address(a)
    if st == 0 and msg is None:
        out[0] = -1
    elif st == 0:
        sub, words = msg
        out[0], out[1] = sub, len(words)
        out[2:2 + min(n, len(words))] = words[:n]
    return st


# a native function calling _call (ccallback.py: a pending runtime stop answers 1, a fault)
CALL_ADDR = guarded_callback(_call, "i64", ("i64", "i64", "i64", "i64"), on_stop=1)


def attach_instance(st, port, where=None, mix_role=True, mark=None, kfc=False) -> None:
    """Make the core whose state is `st` the instance `port` (an rt.crossflags.Instance, or None
    for a launch whose cores do not synchronise with each other): the callback its primitives
    call and, with `mix_role` (a MIX kernel), its role and sub-block. `where()` gives the
    instance's current kernel source line (compiled kernels); `mark` = (token(), describe(token))
    the same, split into a cheap token now and its text later (the GM-order records); `kfc`:
    the kernel registers a Matmul, served by the AIC for its AIVs (ascendc/adv/kfc.py)."""
    if port is None:
        st.core_role = 0
        st.sub_idx = 0
        st.xcore = 0
        st.xcore_fn = 0
        st.kfc = 0
        return
    key = port.ctl.ctypes.data      # its control block (rt.crossflags: native flags)
    _PORTS[key] = port
    if where is not None:
        _WHERE[port] = where
    if mark is not None:
        _MARK[port] = mark
    st.core_role = 0 if not mix_role else ROLE_AIC if port.role == "AIC" else ROLE_AIV
    st.sub_idx = port.sub
    st.xcore = key
    st.xcore_fn = CALL_ADDR
    st.kfc = 0 if not (kfc and mix_role) else 2 if port.role == "AIC" else 1


if config.DISABLE_JIT:
    def call_xcore(fnptr, key, op, a, b):
        return _call(key, op, a, b)

    def xcore_load(addr):
        """Without Numba the primitives read only a control block's first word: 0 (no native
        flags: every call goes to the launch)."""
        return 0

    def xcore_add(addr, v):
        raise AssertionError("native flags need Numba")

    xcore_cas = xcore_store = xcore_syscall = xcore_add
else:
    @intrinsic
    def call_xcore(typingctx, fnptr, key, op, a, b):
        """`fnptr(key, op, a, b)` for the address of a C function `int64 f(int64 x4)`."""
        sig = types.int64(types.int64, types.int64, types.int64, types.int64, types.int64)

        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            fn = builder.inttoptr(args[0], ir.FunctionType(i64, [i64] * 4).as_pointer())
            return builder.call(fn, list(args[1:]))
        return sig, codegen

    @intrinsic
    def xcore_load(typingctx, addr):
        """The int64 at `addr`, read atomically (sequentially consistent)."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            return builder.load_atomic(ptr, "seq_cst", 8)
        return types.int64(types.int64), codegen

    @intrinsic
    def xcore_add(typingctx, addr, v):
        """Add `v` to the int64 at `addr` atomically (sequentially consistent): the old value."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            return builder.atomic_rmw("add", ptr, args[1], "seq_cst")
        return types.int64(types.int64, types.int64), codegen

    @intrinsic
    def xcore_cas(typingctx, addr, old, new):
        """Store `new` at `addr` if the int64 there is `old`, atomically: 1 if it did, else 0."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            pair = builder.cmpxchg(ptr, args[1], args[2], "seq_cst", "seq_cst")
            return builder.zext(builder.extract_value(pair, 1), ir.IntType(64))
        return types.int64(types.int64, types.int64, types.int64), codegen

    @intrinsic
    def xcore_store(typingctx, addr, v):
        """Store `v` in the int64 at `addr` atomically (sequentially consistent)."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            builder.atomic_rmw("xchg", ptr, args[1], "seq_cst")
            return context.get_dummy_value()
        return types.void(types.int64, types.int64), codegen

    @intrinsic
    def xcore_syscall(typingctx, fnptr, nr, a, b, c, d):
        """`fnptr(nr, a, b, c, d)` for the address of libc's variadic `long syscall(long, ...)`
        (called as variadic, so the vector-register count is set as the ABI wants)."""
        sig = types.int64(*([types.int64] * 6))

        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            fn = builder.inttoptr(args[0], ir.FunctionType(i64, [i64], var_arg=True).as_pointer())
            return builder.call(fn, list(args[1:]))
        return sig, codegen
