"""Vector primitives: element-wise, tensor-scalar, duplicate, brcb, cast, compare, select.

Every op has a count form (`<op>_count`: the first `count` elements) and a repeat form
(`<op>_rep`: `repeat_times` repeats of 256 bytes, lanes chosen by `mask`, operands addressed with
block and repeat strides in 32-byte blocks), as listed in ascendc/lang/surface.py. Elements are
read and written only through `ld`/`st`, so one primitive serves every dtype; arithmetic is done in
the compute type (float32 for float16/bfloat16), integers wrap as numpy does.

Fidelity (what matches Ascend C on Atlas A2, what does not):
- Repeat form: lane j of repeat r of an operand with `pb = 32 // itemsize` elements per block is
  element `r*rep_stride*pb + (j//pb)*blk_stride*pb + j%pb`; lanes whose mask bit is off keep dst.
  `is_set_mask=False` is accepted but the mask argument is still used (there is no mask register).
- Integer `div` truncates toward zero; division by zero gives 0 (hardware has no integer Div).
- `max`/`min`/`relu` propagate NaN like numpy (hardware NaN behaviour is not documented).
- f16/bf16 ops compute in float32 and round once (hardware computes in the narrow type).
- `exp` on float32 is a vectorised polynomial (max relative error ~1e-7, see `_expf`).
- `compare` ignores the mask (a reserved parameter on A2) and writes each repeat's bits
  contiguously; the count form processes only the 256-byte-aligned part of `count`, as hardware
  does.
- `select` modes 1/2 reserve 8 KB of UB on hardware; that reservation is not modelled.
- `cast` saturates out-of-range integers and maps NaN to 0, as hardware's default saturation
  mode; float overflow follows IEEE (inf). Round modes follow Ascend C's precision rules
  (CAST_NONE = RINT when inexact, CAST_ROUND = half away from zero, CAST_ODD = round to odd).
- Bit-mode masks are a 1- or 2-tuple of uint64 words; for 32/64-bit elements mask[1] is ignored
  (as the NPU does; a RuntimeWarning names the api and value), bits of mask[0] beyond the 32
  lanes of 64-bit elements are an error, as are 8-bit elements in a repeat form. Parameter
  structs are checked against their C field widths.

Compilation: public primitives are `PrimDispatcher`s (cached, nogil, numpy error model) whose calls
from jitted code are typed with non-literal arguments, so constants at call sites do not create
new specialisations. Errors are KernelError templates with runtime values (see errors.py).
"""
from __future__ import annotations

import numpy as np
from numba.extending import overload

from .. import core
from .. import surface as S
from ..core import prim
from ..dtypes import ld, st
from .vecbase import *  # noqa: F403  (checks, masks, dtype facts)
from .cast import cast_count, cast_rep
from .compare import (compare_count, compare_rep, compare_scalar_count, compare_scalar_rep,
                      select_count, select_rep)
from .vecloops import (binary_count, binary_rep, scalar_count, scalar_rep, unary_count,
                       unary_rep)
from .. import trace
from ..state import STATE

_OP_AXPY, _OP_DUPLICATE, _OP_BRCB = trace.op("axpy"), trace.op("duplicate"), trace.op("brcb")

# ---- scalar operations (compute type in, compute type out) --------------------------------------

@prim
def _add(x, y):
    return x + y


@prim
def _sub(x, y):
    return x - y


@prim
def _mul(x, y):
    return x * y


def _div(x, y):
    raise NotImplementedError


@overload(_div)
def _ov_div(x, y):
    if isinstance(x, types.Float) or isinstance(y, types.Float):
        return lambda x, y: x / y
    if isinstance(x, types.Integer) and not x.signed:
        return lambda x, y: x // y if y != 0 else x - x

    def impl(x, y):  # C semantics: truncate toward zero; /0 -> 0; MIN/-1 wraps
        if y == 0:
            return x - x
        if y == -1:
            return -x
        q = x // y
        if q < 0 and q * y != x:
            q += 1
        return q
    return impl


@prim
def _max(x, y):
    return x if (x > y or x != x) else y


@prim
def _min(x, y):
    return x if (x < y or x != x) else y


@prim
def _relu(x):
    return x if (x > 0 or x != x) else zero_of(x)


@prim
def _add_relu(x, y):
    return _relu(x + y)


@prim
def _sub_relu(x, y):
    return _relu(x - y)


def _and(x, y):
    raise NotImplementedError


def _or(x, y):
    raise NotImplementedError


def _not(x):
    raise NotImplementedError


@overload(_and)
def _ov_and(x, y):
    if isinstance(x, types.Integer):
        return lambda x, y: x & y
    return lambda x, y: x  # unreachable: require(..., "int") raised


@overload(_or)
def _ov_or(x, y):
    if isinstance(x, types.Integer):
        return lambda x, y: x | y
    return lambda x, y: x


@overload(_not)
def _ov_not(x):
    if isinstance(x, types.Integer):
        return lambda x: ~x
    return lambda x: x


@jitable
def _expf(x):
    """float32 exp: x*log2(e) = n + f (Cody-Waite), degree-6 polynomial, 2**n via exponent bits.

    Vectorises (no libm call); relative error <= 1e-7 on normal results; -inf -> 0,
    large -> inf, NaN -> NaN, subnormal results are produced (2**n is applied in two halves)."""
    xc = min(max(x, np.float32(-104.0)), np.float32(88.8))
    n = np.floor(xc * np.float32(1.4426950408889634) + np.float32(0.5))
    r = xc - n * np.float32(0.693359375)
    r = r - n * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    y = p * r * r + r + np.float32(1.0)
    ni = np.int32(n)
    n1 = ni >> 1
    s1 = np.int32((n1 + 127) << 23).view(np.float32)
    s2 = np.int32((ni - n1 + 127) << 23).view(np.float32)
    y = y * s1 * s2
    return x if x != x else y


def _exp(x):
    raise NotImplementedError


@overload(_exp)
def _ov_exp(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: _expf(x)
    return lambda x: np.exp(np.float64(x))


@prim
def _ln(x):
    return np.log(x)


@prim
def _sqrt(x):
    return np.sqrt(x)


@prim
def _rsqrt(x):
    return np.float32(1) / np.sqrt(x)


@prim
def _recip(x):
    return np.float32(1) / x


@prim
def _abs(x):
    return abs(x)


@prim
def _leaky(x, s):
    return x if x >= 0 else x * s




# ---- the binary, unary and tensor-scalar families, one pair of primitives per surface row -----
# (count form and repeat form; names, parameters and docs come from ascendc/lang/surface.py)

@jitable
def _any_dtype(api, what, x):
    pass


_ELEMENT_OPS = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "max": _max, "min": _min,
    "add_relu": _add_relu, "sub_relu": _sub_relu, "bitwise_and": _and, "bitwise_or": _or,
    "exp": _exp, "ln": _ln, "sqrt": _sqrt, "rsqrt": _rsqrt, "reciprocal": _recip, "abs": _abs,
    "relu": _relu, "bitwise_not": _not,
    "adds": _add, "muls": _mul, "maxs": _max, "mins": _min, "leaky_relu": _leaky,
}
_DTYPE_RULE = {"bitwise_and": require_int, "bitwise_or": require_int, "bitwise_not": require_int,
               "exp": require_float, "ln": require_float, "sqrt": require_float,
               "rsqrt": require_float, "reciprocal": require_float,
               "leaky_relu": require_float}


def _binary(api, op, rule):
    code = trace.op(api)

    def count_form(ctx, dst, src0, src1, count):
        rule(api, "dst", dst)
        binary_count(ctx, api, dst, src0, src1, count, op)
        trace.vec(ctx, code, dst.itemsize, count, False)
        trace.tensor_access(ctx, code, src0, count * src0.itemsize, 0)
        trace.tensor_access(ctx, code, src1, count * src1.itemsize, 0)
        trace.tensor_access(ctx, code, dst, count * dst.itemsize, 1)

    def rep_form(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
        rule(api, "dst", dst)
        binary_rep(ctx, api, dst, src0, src1, mask, repeat_times, repeat_params, op)
        trace.vec(ctx, code, dst.itemsize, repeat_times, True)
        trace.tensor_access(ctx, code, dst, dst.size * dst.itemsize, 1)   # (its reach, at most)
    return count_form, rep_form


def _unary(api, op, rule):
    code = trace.op(api)

    def count_form(ctx, dst, src, count):
        rule(api, "dst", dst)
        unary_count(ctx, api, dst, src, count, op)
        trace.vec(ctx, code, dst.itemsize, count, False)
        trace.tensor_access(ctx, code, src, count * src.itemsize, 0)
        trace.tensor_access(ctx, code, dst, count * dst.itemsize, 1)

    def rep_form(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
        rule(api, "dst", dst)
        unary_rep(ctx, api, dst, src, mask, repeat_times, repeat_params, op)
        trace.vec(ctx, code, dst.itemsize, repeat_times, True)
        trace.tensor_access(ctx, code, dst, dst.size * dst.itemsize, 1)
    return count_form, rep_form


def _tensor_scalar(api, op, rule):
    code = trace.op(api)

    def count_form(ctx, dst, src, scalar, count):
        rule(api, "dst", dst)
        scalar_count(ctx, api, dst, src, scalar, count, op)
        trace.vec(ctx, code, dst.itemsize, count, False)
        trace.tensor_access(ctx, code, src, count * src.itemsize, 0)
        trace.tensor_access(ctx, code, dst, count * dst.itemsize, 1)

    def rep_form(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
        rule(api, "dst", dst)
        scalar_rep(ctx, api, dst, src, scalar, mask, repeat_times, repeat_params, op)
        trace.vec(ctx, code, dst.itemsize, repeat_times, True)
        trace.tensor_access(ctx, code, dst, dst.size * dst.itemsize, 1)
    return count_form, rep_form


def _family(names, make):
    out = {}
    for api in names:
        if api not in _ELEMENT_OPS:
            continue                      # written by hand below (axpy)
        row = S.FUNCTIONS[api]
        forms = make(api, _ELEMENT_OPS[api], _DTYPE_RULE.get(api, _any_dtype))
        for form, fn in zip(row.forms, forms):
            fn.__name__ = fn.__qualname__ = form.prim   # distinct Numba cache entries
            camel = "".join(w.capitalize() for w in api.split("_"))
            fn.__doc__ = f"Mirrors `AscendC::{camel}` ({form.prim}): {row.doc}."
            out[form.prim] = prim(fn)
    return out


_GENERATED = {**_family(S.BINARY, _binary), **_family(S.UNARY, _unary),
              **_family(S.SCALAR, _tensor_scalar)}
globals().update(_GENERATED)

@jitable
def _axpy_loop(dst, a, s, n):
    for i in range(n):
        st(dst, i, ld(dst, i) + ld(a, i) * s)


@prim
def axpy_count(ctx, dst, src, scalar, count):
    """Mirrors `AscendC::Axpy`: dst += src * scalar (dst may be float32 with a float16 src)."""
    api = "axpy"
    require_float(api, "dst", dst)
    check_count(ctx, api, "dst", dst, count)
    check_count(ctx, api, "src", src, count)
    s = as_elem(src, scalar)
    if same_dtype(dst, src) and vecable(dst) and dst.ctypes.data == src.ctypes.data:
        _axpy_loop(src, src, s, count)
    else:
        _axpy_loop(dst, src, s, count)
    core.count(ctx, core.C_VEC_OPS, count)
    trace.vec(ctx, _OP_AXPY, max(dst.itemsize, src.itemsize), count, False)


@prim
def axpy_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    api = "axpy"
    require_float(api, "dst", dst)
    check_range(api, "repeat_times", repeat_times, 0, 255)
    p = repeat_params
    check_un_params(api, p)
    s = as_elem(src, scalar)
    eb = max(dst.itemsize, src.itemsize)
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pd = pb_of(dst)
    ps = pb_of(src)
    # past an operand's end but inside UB: runs as on the NPU (vecbase.ub_reach)
    dst = ub_reach(ctx, api, "dst", dst, repeat_times, m0, m1, pd, p.dst_blk_stride,
                   p.dst_rep_stride)
    src = ub_reach(ctx, api, "src", src, repeat_times, m0, m1, ps, p.src_blk_stride,
                   p.src_rep_stride)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(src, rep_index(r, j, ps, p.src_blk_stride, p.src_rep_stride))
            k = rep_index(r, j, pd, p.dst_blk_stride, p.dst_rep_stride)
            st(dst, k, ld(dst, k) + v * s)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))
    trace.vec(ctx, _OP_AXPY, max(dst.itemsize, src.itemsize), repeat_times, True)


# ---- duplicate, brcb -------------------------------------------------------------------------

@prim
def duplicate_count(ctx, dst, scalar, count):
    """Mirrors `AscendC::Duplicate` (count form): dst[:count] = scalar."""
    if count < 0 or count > dst.size:     # inline: the causal mask calls this once per row
        check_count(ctx, "duplicate", "dst", dst, count)
    if in_flight(ctx):
        vector_reads(ctx, "duplicate", "dst", dst, count)
    v = as_elem(dst, scalar)
    for i in range(count):
        st(dst, i, v)
    ctx[STATE][0].counters[core.C_VEC_OPS] += count
    trace.vec(ctx, _OP_DUPLICATE, dst.itemsize, count, False)
    trace.tensor_access(ctx, _OP_DUPLICATE, dst, count * dst.itemsize, 1)


@prim
def duplicate_rep(ctx, dst, scalar, mask, repeat_times, dst_block_stride, dst_repeat_stride,
                  is_set_mask):
    """Mirrors `AscendC::Duplicate` (mask + repeat form)."""
    api = "duplicate"
    check_range(api, "repeat_times", repeat_times, 0, 255)
    check_range(api, "dst_block_stride", dst_block_stride, 0, 65535)
    check_range(api, "dst_repeat_stride", dst_repeat_stride, 0, 255)
    v = as_elem(dst, scalar)
    eb = dst.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    dst = ub_reach(ctx, api, "dst", dst, repeat_times, m0, m1, pb, dst_block_stride,
                   dst_repeat_stride)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            st(dst, rep_index(r, j, pb, dst_block_stride, dst_repeat_stride), v)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))
    trace.vec(ctx, _OP_DUPLICATE, dst.itemsize, repeat_times, True)


@prim
def brcb(ctx, dst, src0, repeat_times, repeat_params):
    """Mirrors `AscendC::Brcb`: per repeat, 8 consecutive src0 elements each fill one 32 B block."""
    api = "brcb"
    check_range(api, "repeat_times", repeat_times, 0, 255)
    dbs = repeat_params.dst_blk_stride
    drs = repeat_params.dst_rep_stride
    check_range(api, "repeat_params.dst_blk_stride", dbs, 0, 65535)
    check_range(api, "repeat_params.dst_rep_stride", drs, 0, 65535)
    require_same(api, "src0", src0, dst)
    if repeat_times == 0:
        return
    if dst.ctypes.data == src0.ctypes.data:
        fault("{}: dst must not share src0's address (Ascend C forbids it), got "
              "the same address for both", api)
        raise KernelError(FAULT)
    if dbs == 0:
        dbs = 1  # as Ascend C's reference pseudo-code
    if repeat_times * 8 > src0.size:
        check_count(ctx, api, "src0", src0, repeat_times * 8)
    pb = pb_of(dst)
    # past dst's end but inside UB: runs as on the NPU (vecbase.reach_to)
    dst = reach_to(ctx, api, "dst", dst, (repeat_times - 1) * drs * pb + 7 * dbs * pb + pb - 1)
    for r in range(repeat_times):
        for k in range(8):
            v = ld(src0, r * 8 + k)
            base = r * drs * pb + k * dbs * pb
            for q in range(pb):
                st(dst, base + q, v)
    ctx[STATE][0].counters[core.C_VEC_OPS] += repeat_times * 8 * pb
    trace.vec(ctx, _OP_BRCB, dst.itemsize, repeat_times, True)




__all__ = sorted(_GENERATED) + ["axpy_count", "axpy_rep", "duplicate_count", "duplicate_rep",
                                "brcb", "cast_count", "cast_rep", "compare_count", "compare_rep",
                                "compare_scalar_count", "compare_scalar_rep", "select_count",
                                "select_rep"]
