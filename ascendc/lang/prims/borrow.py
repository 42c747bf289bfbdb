"""`borrowed(a)`: an array (or a tuple of them, such as ctx) passed on inside a primitive without
its reference count (shared by the cube, data_copy, vector and reduce primitives)."""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["borrowed"]


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
