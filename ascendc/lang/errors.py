"""Errors raised inside kernels (both modes). The launcher turns them into rt.AclError with the
kernel name and `block_idx=i/n:` prefix; GM violations map to CANN's trap codes.

A fault with runtime values is reported in two statements:

    fault("data_copy: count must be >= 0, got count={}", count)
    raise KernelError(FAULT)

`fault` records the template and the values for the calling thread; the argument-free (static)
raise then builds a `KernelError` whose args are the recorded `(template, *values)`, so the
exception is the same as `KernelError(template, *values)` (str, class, pickling). Why not raise
the values directly: Numba allocates a dynamic exception's payload and never frees it (~0.8 KB
per raise), which a long fuzzing or soak run would accumulate. Building strings in
nopython code costs seconds of compile time per call site; a template plus numbers costs nothing.
The template is filled in when the message is read; ``{:level}``, ``{:pos}``, ``{:event}`` and
``{:pipe}`` print a number as a memory level, TPosition, HardEvent or pipe name, ``{:pipes}`` a
mask of PipeID bits as pipe names.

In njit code `fault` reaches the thread's record through C callbacks (native functions from
ccallback.py exported to LLVM under fixed symbol names, so Numba's cache holds no addresses); in
Python (the interpreter's own code, NUMBA_DISABLE_JIT) it writes the record directly.
"""
from __future__ import annotations

import ctypes
import sys
import threading

import llvmlite.binding as _llvm
import numpy as np
from numba import types
from numba.core.extending import overload

from .ccallback import guarded_callback
from .positions import LEVEL_NAMES, POSITION_NAMES

__all__ = ["KernelError", "GMReadError", "GMWriteError", "CompileError", "fault", "FAULT"]


class _Num(int):
    def __format__(self, spec):
        v = int(self)
        if spec == "level":
            return LEVEL_NAMES[v] if 0 <= v < len(LEVEL_NAMES) else "GM"
        if spec == "pos":
            return POSITION_NAMES[v] if 0 <= v < len(POSITION_NAMES) else f"TPosition({v})"
        if spec in ("pipe", "pipes"):
            names = [n for b, n in _PIPE_NAMES if (v == b if spec == "pipe" else v >> b & 1)]
            return ", ".join(names) or ("PipeID({})".format(v) if spec == "pipe" else "none")
        if spec == "event":
            from .enums import HardEvent
            try:
                return HardEvent(v).name
            except ValueError:
                return str(v)
        return format(v, spec)


_PIPE_NAMES = ((0, "S"), (1, "V"), (2, "M"), (3, "MTE1"), (4, "MTE2"), (5, "MTE3"), (10, "FIX"))


def _arg(a):
    try:
        return _Num(a) if int(a) == a else a
    except (TypeError, ValueError, OverflowError):
        return a


# -- the per-thread fault record ------------------------------------------------------------------
FAULT = "<fault recorded by ascendc.lang.errors.fault>"   # the static raise's only argument
_TLS = threading.local()


def fault(template, *args):
    """Record a fault's message template and values for this thread; a `raise KernelError(FAULT)`
    (or GMReadError / GMWriteError) must follow."""
    _TLS.record = (template,) + args


def recorded_fault():
    """The (template, *values) the calling thread's last `fault` recorded (None: none)."""
    return getattr(_TLS, "record", None)


class KernelError(Exception):
    """A rule of the NPU broken by a kernel (queue discipline, capacity, alignment, ...)."""

    def __init__(self, *args):
        # Numba instantiates a static exception twice (once to check it, once to set it), so the
        # record is read, not consumed; the next `fault` of this thread replaces it
        if args == (FAULT,):
            args = recorded_fault() or ("kernel fault (its message was not recorded)",)
        super().__init__(*args)

    def __str__(self):
        if len(self.args) > 1 and isinstance(self.args[0], str):
            try:
                return self.args[0].format(*(_arg(a) for a in self.args[1:]))
            except (IndexError, KeyError, ValueError):
                return " ".join(str(a) for a in self.args)
        return super().__str__()


class KernelReturn(Exception):
    """Raised by an interpreted kernel's call to leave the kernel there (the AIC of a MIX kernel
    after serving its AIVs' Matmul, ascendc/adv/kfc.py); the launcher ends the block normally."""


class GMReadError(KernelError):
    """A global-memory read outside the argument's allocation (ACL 507042 TRAP_READ_OVERFLOW)."""


class GMWriteError(KernelError):
    """A global-memory write outside the argument's allocation (ACL 507043 TRAP_WRITE_OVERFLOW)."""


class CompileError(SyntaxError):
    """Unsupported Python in a kernel: file:line, the source line and a caret."""


# -- njit side: C callbacks under fixed symbol names ----------------------------------------------
_BYTEORDER = "le" if sys.byteorder == "little" else "be"
_ENCODING = {1: "latin-1", 2: f"utf-16-{_BYTEORDER}", 4: f"utf-32-{_BYTEORDER}"}
_PENDING = threading.local()     # values of a record being written by njit code


def _cb_begin():
    _PENDING.values = []


def _cb_end():
    vals = getattr(_PENDING, "values", [])
    _PENDING.values = []
    fault(*vals)


def _cb_int(v):
    _PENDING.values.append(int(v))


def _cb_float(v):
    _PENDING.values.append(float(v))


def _cb_str(data, kind, length):
    # a Numba unicode string: `length` code points of `kind` bytes each (as CPython's PEP 393)
    _PENDING.values.append(ctypes.string_at(data, kind * length).decode(_ENCODING[kind]))


_CALLBACKS = (   # (symbol, argument kinds, Python function, Numba signature)
    ("ascend_emu_fault_begin", (), _cb_begin, types.void()),
    ("ascend_emu_fault_end", (), _cb_end, types.void()),
    ("ascend_emu_fault_int", ("i64",), _cb_int, types.void(types.int64)),
    ("ascend_emu_fault_uint", ("u64",), _cb_int, types.void(types.uint64)),
    ("ascend_emu_fault_float", ("f64",), _cb_float, types.void(types.float64)),
    ("ascend_emu_fault_str", ("ptr", "i64", "i64"), _cb_str,
     types.void(types.voidptr, types.int64, types.int64)),
)
_EXT = {}
for _sym, _kinds, _fn, _sig in _CALLBACKS:
    # native functions calling the Python ones (ccallback.py: a runtime stop pending when compiled
    # code records a fault is cleared there, not printed as an unraisable ctypes error)
    _llvm.add_symbol(_sym, guarded_callback(_fn, "void", _kinds))
    _EXT[_sym] = types.ExternalFunction(_sym, _sig)
_c_begin, _c_end = _EXT["ascend_emu_fault_begin"], _EXT["ascend_emu_fault_end"]
_c_int, _c_uint = _EXT["ascend_emu_fault_int"], _EXT["ascend_emu_fault_uint"]
_c_float, _c_str = _EXT["ascend_emu_fault_float"], _EXT["ascend_emu_fault_str"]


def _put(v):
    _PENDING.values.append(v)


@overload(_put, jit_options={"nogil": True})
def _put_nb(v):
    if isinstance(v, (types.UnicodeType, types.StringLiteral)):
        def put_str(v):
            s = str(v)
            _c_str(s._data, s._kind, s._length)
        return put_str
    if isinstance(v, types.Boolean):
        return lambda v: _c_int(np.int64(v))
    if isinstance(v, types.Integer):
        if v.signed:
            return lambda v: _c_int(np.int64(v))
        return lambda v: _c_uint(np.uint64(v))
    if isinstance(v, types.Float):
        return lambda v: _c_float(np.float64(v))
    return None     # any other type: a typing error at the fault(...) call


@overload(fault, jit_options={"nogil": True})
def _fault_nb(template, *args):
    # one store per value: the tuple is heterogeneous, so the calls are written out per arity
    src = ("def impl(template, *args):\n    _c_begin()\n    _put(template)\n" +
           "".join(f"    _put(args[{i}])\n" for i in range(len(args))) + "    _c_end()\n")
    ns = {"_c_begin": _c_begin, "_c_end": _c_end, "_put": _put}
    exec(src, ns)       # noqa: S102 - generated from an arity only
    return ns["impl"]
