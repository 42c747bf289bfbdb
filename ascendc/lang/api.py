"""The kernel language as plain Python objects: what `interpret` mode runs.

Kernel source runs unchanged as Python (print and breakpoints work); every op goes through the
same primitives the compiled mode calls, so the two modes share one semantics. The launcher sets
the current core context (`_state.ctx`) before running each block.
"""
from __future__ import annotations

import enum
import threading

import numpy as np

from . import dtypes as D
from . import params as P
from . import prims
from .core import level_name, level_of
from .errors import KernelError
from .registry import OPS, bind, order

_state = threading.local()


def current_ctx():
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        raise KernelError("asc: kernel-language calls must run inside a launched kernel "
                          "(kernel[block_dim](...)), got a call outside any kernel")
    return ctx


def set_ctx(ctx):
    _state.ctx = ctx


def _unwrap(v):
    if isinstance(v, (LocalTensor, GlobalTensor, GlobalAddress)):
        return v.data
    if isinstance(v, D.DataType):
        return v.storage
    if isinstance(v, enum.IntEnum):
        return int(v)
    if isinstance(v, list):
        return tuple(v)
    return v


def _storage(dtype):
    return D.as_datatype(dtype).storage


class _Tensor:
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    @property
    def dtype(self) -> D.DataType:
        return D.from_numpy(self.data.dtype)

    def get_value(self, i):
        return prims.get_value(current_ctx(), self.data, int(i))

    def set_value(self, i, v):
        prims.set_value(current_ctx(), self.data, int(i), v)

    def get_size(self):
        return self.data.size

    def __getitem__(self, i):
        if isinstance(i, slice):
            if i.stop is not None or i.step is not None:
                raise KernelError(f"{type(self).__name__}[]: only t[i] / t[i:] views are "
                                  f"supported, got a slice with stop={i.stop} step={i.step}")
            i = i.start or 0
        return type(self)(prims.sub_view(current_ctx(), self.data, int(i)))

    def numpy(self) -> np.ndarray:
        """The elements as a numpy array with the logical dtype (a copy; debugging aid)."""
        return D.logical_view(self.data).copy()

    def __repr__(self):
        return f"{type(self).__name__}({self.dtype!r}, size={self.data.size})"


class GlobalAddress(_Tensor):
    """A GM pointer argument; `addr + n` offsets by n elements."""

    def __add__(self, n):
        return GlobalAddress(prims.ga_add(current_ctx(), self.data, int(n)))

    __radd__ = __add__


class GlobalTensor(_Tensor):
    """Mirrors AscendC::GlobalTensor: created empty, bound with `set_global_buffer`."""

    def __init__(self, data=None):
        super().__init__(data)

    def set_global_buffer(self, addr: GlobalAddress, size=None):
        self.data = prims.gt_bind(current_ctx(), addr.data, -1 if size is None else int(size))

    def get_phy_addr(self, offset=0):
        return self.data.ctypes.data + int(offset) * self.data.itemsize


class LocalTensor(_Tensor):
    """Mirrors AscendC::LocalTensor: a view of a core's local memory (UB, L1, L0A/B/C)."""

    def get_length(self):
        return self.data.size * self.data.itemsize

    def reinterpret_cast(self, dtype):
        return LocalTensor(self.data.view(_storage(dtype)))

    def get_position_level(self) -> str:
        return level_name(level_of(current_ctx(), self.data))

    def print(self, n=None):
        print(self.numpy()[:n])


class TPipe:
    """Mirrors AscendC::TPipe (one per kernel): hands out local memory with init_buffer."""

    def __init__(self):
        prims.tpipe_new(current_ctx())

    def init_buffer(self, que, num, len=None):
        if len is None:
            prims.init_buffer_buf(current_ctx(), que.rec, int(num))
        else:
            prims.init_buffer_que(current_ctx(), que.rec, int(num), int(len))


class TQue:
    """Mirrors AscendC::TQue<pos, depth>: alloc_tensor / enque / deque / free_tensor."""

    def __init__(self, pos, depth=1):
        self.rec = prims.tque_new(current_ctx(), int(pos), int(depth))

    def alloc_tensor(self, dtype):
        return LocalTensor(prims.que_alloc_tensor(current_ctx(), self.rec, _storage(dtype)))

    def enque(self, t):
        prims.que_enque(current_ctx(), self.rec, t.data)

    def deque(self, dtype):
        return LocalTensor(prims.que_deque(current_ctx(), self.rec, _storage(dtype)))

    def free_tensor(self, t):
        prims.que_free_tensor(current_ctx(), self.rec, t.data)

    def vacant_in_que(self):
        return bool(prims.que_vacant(current_ctx(), self.rec))

    def has_tensor_in_que(self):
        return bool(prims.que_has_tensor(current_ctx(), self.rec))

    def get_tensor_count_in_que(self):
        return int(prims.que_tensor_count(current_ctx(), self.rec))

    def has_idle_buffer(self):
        return bool(prims.que_has_idle_buffer(current_ctx(), self.rec))


class TBuf:
    """Mirrors AscendC::TBuf<pos>: a scratch buffer without queue semantics."""

    def __init__(self, pos=11):
        self.rec = prims.tbuf_new(current_ctx(), int(pos))

    def get(self, dtype, len=None):
        return LocalTensor(prims.tbuf_get(current_ctx(), self.rec, _storage(dtype),
                                          -1 if len is None else int(len)))

    def get_with_offset(self, size, buf_offset, dtype):
        return LocalTensor(prims.tbuf_get_with_offset(current_ctx(), self.rec, int(size),
                                                      int(buf_offset), _storage(dtype)))


def _make_op(name):
    def f(*args, **kwargs):
        form = bind(name, len(args), kwargs)
        vals = [_unwrap(v) for v in order(form, args, kwargs)]
        r = getattr(prims, form.prim)(current_ctx(), *vals)
        return None if r is None else (r.item() if isinstance(r, np.generic) else r)
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = "asc." + name + ": " + " | ".join(
        f"({', '.join(fm.params)})" for fm in OPS[name])
    return f


OP_FUNCS = {name: _make_op(name) for name in OPS}


def printf(fmt, *args):
    """Mirrors AscendC::printf (C format string)."""
    vals = tuple(a.item() if isinstance(a, np.generic) else a for a in args)
    print(fmt % vals if vals else fmt, end="" if fmt.endswith("\n") else "\n")


def dump_tensor(tensor, desc, dump_size, shape_info=None):
    """Mirrors AscendC::DumpTensor: prints `dump_size` elements with a header."""
    prims.dump_tensor(current_ctx(), tensor.data, int(desc), int(dump_size))


def static_range(*a):
    """Unrolled at compile time in pyasc; a plain range here."""
    return range(*a)


class ConstExpr:
    """Annotation for compile-time parameters: `n: asc.ConstExpr[int]`."""

    def __class_getitem__(cls, item):
        return cls


PARAM_STRUCTS = P.BY_NAME
