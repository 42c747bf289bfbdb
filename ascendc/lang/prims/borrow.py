"""`borrowed(a)`: an array (or a tuple of them, such as ctx) passed on inside a primitive without
its reference count (shared by the cube, data_copy, vector and reduce primitives); `retyped(a,
dtype)`: `a.view(dtype)` of a 1-D contiguous array as an inlined cast."""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload

__all__ = ["borrowed", "retyped"]


def borrowed(a):
    """`a` (an array, or a tuple such as ctx whose arrays are) without its reference: the same
    data, shape and strides with a NULL meminfo. Why: every array a primitive passes on or views
    costs an atomic incref/decref pair (lock-prefixed, ~90% of a zero-repeat load_data), which
    LLVM cannot prune across calls. Only for views that die before the primitive returns (the
    caller holds the reference); Python (interpret mode) gets `a` itself."""
    return a


def _borrow_value(context, builder, ty, val):
    if isinstance(ty, types.Array):
        ary = context.make_array(ty)(context, builder, val)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()
    if isinstance(ty, types.BaseTuple):
        out = val
        for i, t in enumerate(ty.types):
            out = builder.insert_value(out, _borrow_value(context, builder, t,
                                                          builder.extract_value(val, i)), i)
        return out
    return val


@intrinsic
def _borrowed(typingctx, a):
    def codegen(context, builder, sig, args):
        return _borrow_value(context, builder, sig.args[0], args[0])
    return a(a), codegen


@overload(borrowed)
def _borrowed_ov(a):
    return lambda a: _borrowed(a)


def retyped(a, dtype):
    """`a.view(dtype)` for a 1-D contiguous array whose byte length is a multiple of dtype's
    size: in njit code one inlined pointer cast, where Numba's `view` calls its out-of-line
    `_change_dtype` helper (two to four per primitive call: 1.6 % of the FlashAttention
    forward's CPU). Keeps a's reference (a borrowed array stays borrowed)."""
    return a.view(dtype)


def _dtype_of(dt):
    if isinstance(dt, types.NumberClass):
        return dt.instance_type
    if isinstance(dt, types.DType):
        return dt.dtype
    return None


@intrinsic
def _retyped(typingctx, a, dt):
    nt = _dtype_of(dt)
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C") or nt is None:
        return None
    rt = a.copy(dtype=nt)

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(sig.return_type)(context, builder)
        isz = context.get_abi_sizeof(context.get_data_type(nt))
        i64 = context.get_value_type(types.intp)
        nbytes = builder.mul(builder.extract_value(src.shape, 0), src.itemsize)
        n = builder.udiv(nbytes, i64(isz))
        context.populate_array(out, data=builder.bitcast(src.data, out.data.type),
                               shape=cgutils.pack_array(builder, [n]),
                               strides=cgutils.pack_array(builder, [i64(isz)]),
                               itemsize=i64(isz), meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())
    return rt(a, dt), codegen


@overload(retyped)
def _retyped_ov(a, dtype):
    nt = _dtype_of(dtype)
    if nt is None:
        return None
    isz = nt.bitwidth // 8 if hasattr(nt, "bitwidth") else nt.size

    def impl(a, dtype):
        if a.size * a.itemsize % isz != 0:       # Numba's view: the same check, the same words
            raise ValueError("When changing to a larger dtype, its size must be a divisor of "
                             "the total size in bytes of the last axis of the array.")
        return _retyped(a, dtype)
    return impl
