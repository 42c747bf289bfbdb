"""The kernel language as plain Python objects: what `interpret` mode runs.

Kernel source runs unchanged as Python (print and breakpoints work). Every function, constructor
and method here is generated from its row in `ascendc/lang/surface.py` and calls the same
primitive the compiled mode calls, so the two modes share one semantics. The launcher sets the
current core context (`set_ctx`) before running each block.
"""
from __future__ import annotations

import enum
import sys
import threading

import numpy as np

from . import dtypes as D
from . import prims
from .prims import autotensor
from . import surface as S
from .errors import KernelError
from .record import mark_line
from .state import STATE, TRACE

_state = threading.local()



def current_ctx():
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        raise KernelError("asc: kernel-language calls must run inside a launched kernel "
                          "(kernel[block_dim](...)), got a call outside any kernel")
    return ctx


def in_kernel() -> bool:
    """Is the calling thread running an interpreted kernel?"""
    return getattr(_state, "ctx", None) is not None


def set_ctx(ctx):
    """Make `ctx` the calling thread's core context; returns the previous one."""
    prev = getattr(_state, "ctx", None)
    _state.ctx = ctx
    return prev


def _unwrap(v):
    """A kernel-language value as primitives take it."""
    if isinstance(v, _Handle):
        return v.data
    if isinstance(v, D.DataType):
        return v.storage
    if isinstance(v, enum.IntEnum):
        return int(v)
    if isinstance(v, list):         # e.g. trans_data_to_5hd's lists of 16 LocalTensors
        return tuple(_unwrap(x) for x in v)
    if isinstance(v, slice):
        if v.stop is not None or v.step is not None:
            raise KernelError(f"tensor[]: only t[i] / t[i:] views are supported, got a slice "
                              f"with stop={v.stop} step={v.step}")
        return v.start or 0
    return v


def _result(r):
    return r.item() if isinstance(r, np.generic) else r


class _Handle:
    """A kernel object: `data` is what primitives receive (a storage array view, a queue
    record, or the pipe's number)."""
    __slots__ = ("data",)

    def __init__(self, data=None):
        self.data = data

    def __repr__(self):
        if isinstance(self.data, np.ndarray):
            return (f"{type(self).__name__}({D.from_numpy(self.data.dtype)!r}, "
                    f"size={self.data.size})")
        return f"{type(self).__name__}()"


def wrap(cls, data):
    """A handle of class `cls` around `data`, without running its kernel constructor."""
    obj = cls.__new__(cls)
    obj.data = data
    return obj


def _wrap(returns: str | None, cls, r):
    if returns is None:
        return None
    if returns == "self":
        return wrap(cls, r)
    if returns in _CLASSES:
        return wrap(_CLASSES[returns], r)
    if returns == "bool":
        return bool(r)
    if returns == "int":
        return KernelInt(r)
    return _result(r)


def _make_method(row: S.Method):
    prim = getattr(prims, row.forms[0].prim) if len(row.forms) == 1 and row.forms[0].prim \
        else None

    def method(self, *args, **kwargs):
        form = S.bind(row.api, row.forms, len(args), kwargs)
        fn = prim or getattr(prims, form.prim)
        vals = [_unwrap(v) for v in form.order(args, kwargs)]
        if row.receiver:
            vals.insert(0, self.data)
        ctx = current_ctx()
        if len(ctx[TRACE]) > 1:        # tracing for the NPU view: tell the primitive its line
            mark_line(ctx)
        if row.touches and ctx[STATE][0]["nauto"]:    # LocalTensorAuto: insert_sync's flags
            autotensor.auto_use(ctx, int(row.pipe), self.data, self.data,
                                int(row.touches == "w"))
        r = fn(ctx, *vals)
        if row.rebinds:
            self.data = r
            return None
        return _wrap(row.returns, type(self), r)
    method.__name__ = row.name
    method.__qualname__ = row.api
    method.__doc__ = row.doc or f"{row.api}({', '.join(row.forms[0].params)})"
    return method


_SITES: dict = {}     # (code, instruction) -> allocation site id (surface Handle.site)


def _make_init(h: S.Handle):
    def __init__(self, *args, **kwargs):
        form = S.bind(f"asc.{h.name}", (h.ctor,), len(args), kwargs)
        vals = [_unwrap(v) for v in form.order(args, kwargs)]
        if h.site and h.site not in kwargs:    # the allocation site: the caller's file:line:col
            f = sys._getframe(1)
            key = (f.f_code, f.f_lasti)
            site = _SITES.get(key)
            if site is None:
                pos = list(f.f_code.co_positions())[f.f_lasti // 2]
                site = _SITES[key] = autotensor.site_id(f.f_code.co_filename, pos[0] or 0,
                                                        pos[2] or 0)
            vals[[p for p in form.params if p not in form.ignored].index(h.site)] = site
        self.data = getattr(prims, form.prim)(current_ctx(), *vals) if form.prim else None
    __init__.__qualname__ = f"{h.name}.__init__"
    return __init__


def _dtype(self) -> D.DataType:
    return D.from_numpy(self.data.dtype)


def _numpy(self) -> np.ndarray:
    """The elements as a numpy array with the logical dtype (a copy; debugging aid)."""
    return D.logical_view(self.data).copy()


def _print(self, n=None):
    """Prints the first n elements (debugging aid)."""
    print(self.numpy()[:n])


# what interpret mode runs for the rows marked `native` / `interpret_only`
_BY_HAND = {"dtype": property(_dtype), "numpy": _numpy, "print": _print}


def _make_class(h: S.Handle) -> type:
    body = {"__doc__": h.doc, "__slots__": ()}
    if h.ctor is not None:
        body["__init__"] = _make_init(h)
    for row in S.methods_of(h.name):
        body[row.name] = _BY_HAND[row.name] if row.native or row.interpret_only \
            else _make_method(row)
    return type(h.name, (_CLASSES[h.base] if h.base else _Handle,), body)


_CLASSES: dict = {}
for _name, _h in S.HANDLES.items():
    if _name != "DataType":
        _CLASSES[_name] = _make_class(_h)
GlobalAddress = _CLASSES["GlobalAddress"]
GlobalTensor = _CLASSES["GlobalTensor"]
LocalTensor = _CLASSES["LocalTensor"]
LocalTensorAuto = _CLASSES["LocalTensorAuto"]
TPipe = _CLASSES["TPipe"]
TQue = _CLASSES["TQue"]
TBuf = _CLASSES["TBuf"]
GlobalAddress.__radd__ = GlobalAddress.__add__


def _make_function(row: S.Function):
    def f(*args, **kwargs):
        form = S.bind(f"asc.{row.name}", row.forms, len(args), kwargs)
        vals = [_unwrap(v) for v in form.order(args, kwargs)]
        ctx = current_ctx()
        if len(ctx[TRACE]) > 1:
            mark_line(ctx)
        if ctx[STATE][0]["nauto"]:      # LocalTensorAuto regions: the flags insert_sync adds
            autotensor.interp_args(ctx, row.pipe, [p for p in form.params if p not in form.ignored],
                              vals)
        r = getattr(prims, form.prim)(ctx, *vals)
        return _wrap(row.returns, None, r)
    f.__name__ = f.__qualname__ = row.name
    f.__doc__ = f"asc.{row.name}: " + " | ".join(f"({', '.join(fm.params)})" for fm in row.forms)
    if row.doc:
        f.__doc__ += f"\n{row.doc}"
    return f


def printf(fmt, *args):
    """Mirrors AscendC::printf (C format string)."""
    vals = tuple(_result(a) for a in args)
    print(fmt % vals if vals else fmt, end="" if fmt.endswith("\n") else "\n")


def _range(*a):
    return range(*a)


def ceildiv(x, y):
    """pyasc's `asc.ceildiv(x, y)` (host and kernels) and `x.ceildiv(y)` on kernel integers:
    integer division rounding towards +infinity (arith.ceildivsi; (x + y - 1) // y for y > 0)."""
    for v, n in ((x, "x"), (y, "y")):
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise TypeError(f"asc.ceildiv: {n} must be an integer, got {n}={v!r}")
    r = -(-int(x) // int(y))
    return KernelInt(r) if in_kernel() else r


class KernelInt(int):
    """An integer inside an interpreted kernel (scalar arguments, tiling fields, system values):
    a Python int with the methods of pyasc's PlainValue (`n.ceildiv(d)`); arithmetic keeps the
    type, so `(a * b).ceildiv(c)` works as in pyasc."""
    __slots__ = ()

    def ceildiv(self, other):
        return KernelInt(ceildiv(self, other))


def _int_op(name):
    base = getattr(int, name)

    def op(self, *a):
        r = base(self, *a)
        return KernelInt(r) if type(r) is int else r
    op.__name__ = name
    return op


for _n in ("add", "sub", "mul", "floordiv", "mod", "lshift", "rshift", "and", "or", "xor",
           "pow"):
    for _p in ("", "r"):
        setattr(KernelInt, f"__{_p}{_n}__", _int_op(f"__{_p}{_n}__"))
for _n in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(KernelInt, _n, _int_op(_n))


def kernel_value(v):
    """A launch argument as an interpreted kernel sees it: integers (numpy scalars, tiling
    fields) as KernelInt, tiling records with KernelInt fields; anything else unchanged."""
    if isinstance(v, (bool, np.bool_)):
        return v
    if isinstance(v, (int, np.integer)):
        return KernelInt(v)
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        # a record whose kernel form is mutable (asc.adv.TCubeTiling: pyasc kernels write
        # tiling fields); else a record of KernelInts
        as_object = getattr(type(v), "_kernel_object", None)
        if as_object is not None:
            return as_object(v)
        return type(v)(*(kernel_value(x) for x in v))
    return v


class Property:
    """pyasc's platform constant (`asc.TOTAL_L1_SIZE`, ...), read with `asc.property(p)`."""
    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"asc.{self.name.rsplit(':', 1)[1]}"


DEFAULT_C0_SIZE = Property("::AscendC::DEFAULT_C0_SIZE", D.int32)
ONE_BLK_SIZE = Property("::AscendC::ONE_BLK_SIZE", D.int16)
TOTAL_L1_SIZE = Property("::AscendC::TOTAL_L1_SIZE", D.int32)
TOTAL_L0C_SIZE = Property("::AscendC::TOTAL_L0C_SIZE", D.int32)
PROPERTIES = (DEFAULT_C0_SIZE, ONE_BLK_SIZE, TOTAL_L1_SIZE, TOTAL_L0C_SIZE)


def property_value(prop, soc) -> int:
    """The value of platform constant `prop` on SoC profile `soc` (Ascend C's constants:
    DEFAULT_C0_SIZE = 32 bytes of a C0 block, ONE_BLK_SIZE = the 32-byte data block,
    TOTAL_L1_SIZE / TOTAL_L0C_SIZE = the L1 / L0C capacity)."""
    if not isinstance(prop, Property) or prop not in PROPERTIES:
        raise TypeError(f"asc.property: prop must be one of asc.DEFAULT_C0_SIZE, "
                        f"asc.ONE_BLK_SIZE, asc.TOTAL_L1_SIZE, asc.TOTAL_L0C_SIZE, got {prop!r}")
    return {DEFAULT_C0_SIZE: 32, ONE_BLK_SIZE: soc.block_bytes, TOTAL_L1_SIZE: soc.l1_bytes,
            TOTAL_L0C_SIZE: soc.l0c_bytes}[prop]


def set_launch_soc(soc):
    """The SoC profile of the interpreted launch the calling thread runs (None: none)."""
    prev = getattr(_state, "soc", None)
    _state.soc = soc
    return prev


def _property(prop):
    """pyasc's `asc.property(p)`: platform constant `p` of the launch's SoC (outside a kernel:
    of the current device's SoC, rt.get_soc())."""
    soc = getattr(_state, "soc", None) if in_kernel() else None
    if soc is None:
        import rt
        soc = rt.get_soc()
    v = property_value(prop, soc)
    return KernelInt(v) if in_kernel() else v


_SPECIALS = {"print_format": printf, "loop": _range, "ceil_div": ceildiv,
             "platform_constant": _property}

FUNCTIONS = {name: _SPECIALS[row.special] if row.special else _make_function(row)
             for name, row in S.FUNCTIONS.items()}


class ConstExpr:
    """Annotation for compile-time parameters: `n: asc.ConstExpr[int]`."""

    def __class_getitem__(cls, item):
        return cls
