"""Element max/min that LLVM vectorises as reductions (NaN-propagating for floats, like
np.maximum), and the accumulator zero of sums; used by the reduce primitives."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["acc_zero", "vmax", "vmin"]


def _llvm_minmax(name):
    @intrinsic
    def fn(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, signature, args):
            lty = args[0].type
            suffix = "f32" if lty == ir.FloatType() else "f64"
            f = cgutils.get_or_insert_function(builder.module, ir.FunctionType(lty, [lty, lty]),
                                               "llvm." + name + "." + suffix)
            return builder.call(f, args)
        return a(a, b), codegen
    return fn


_fmaximum = _llvm_minmax("maximum")   # IEEE-754 2019 maximum: NaN-propagating, like np.maximum
_fminimum = _llvm_minmax("minimum")


def vmax(a, b):
    raise NotImplementedError


def vmin(a, b):
    raise NotImplementedError


@overload(vmax)
def _ov_vmax(a, b):
    if isinstance(a, types.Float):
        return lambda a, b: _fmaximum(a, b)
    return lambda a, b: max(a, b)


@overload(vmin)
def _ov_vmin(a, b):
    if isinstance(a, types.Float):
        return lambda a, b: _fminimum(a, b)
    return lambda a, b: min(a, b)


def acc_zero(a):
    """Zero of the accumulator type for sums over tensor a (float64 or int64)."""
    raise NotImplementedError


@overload(acc_zero)
def _ov_acc_zero(a):
    if isinstance(a.dtype, types.Integer):
        return lambda a: np.int64(0)
    return lambda a: np.float64(0.0)
