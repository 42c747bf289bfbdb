"""Vector primitives: element-wise, tensor-scalar, duplicate, brcb, cast, compare, select.

Every op has a count form (`<op>_count`: the first `count` elements) and a repeat form
(`<op>_rep`: `repeat_times` repeats of 256 bytes, lanes chosen by `mask`, operands addressed with
block and repeat strides in 32-byte blocks), as listed in ascendc/lang/registry.py. Elements are
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
- Bit-mode masks are a 1- or 2-tuple of uint64 words; bits beyond the lane count are an error, as
  are 8-bit elements in a repeat form. Parameter structs are checked against their C field widths.

Compilation: public primitives are `PrimDispatcher`s (cached, nogil, numpy error model) whose calls
from jitted code are typed with non-literal arguments, so constants at call sites do not create
new specialisations. Errors are KernelError templates with runtime values (see errors.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import config
from numba.core.registry import CPUDispatcher
from numba.extending import overload, register_jitable

from .. import core
from ..core import PrimDispatcher, lane_on, mask_words, prim  # noqa: F401
from ..dtypes import (bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits, ld,
                      st)
from ..errors import KernelError

__all__ = [
    "add_count", "add_rep", "sub_count", "sub_rep", "mul_count", "mul_rep", "div_count", "div_rep",
    "max_count", "max_rep", "min_count", "min_rep", "add_relu_count", "add_relu_rep",
    "sub_relu_count", "sub_relu_rep", "bitwise_and_count", "bitwise_and_rep",
    "bitwise_or_count", "bitwise_or_rep",
    "exp_count", "exp_rep", "ln_count", "ln_rep", "sqrt_count", "sqrt_rep", "rsqrt_count",
    "rsqrt_rep", "reciprocal_count", "reciprocal_rep", "abs_count", "abs_rep", "relu_count",
    "relu_rep", "bitwise_not_count", "bitwise_not_rep",
    "adds_count", "adds_rep", "muls_count", "muls_rep", "maxs_count", "maxs_rep", "mins_count",
    "mins_rep", "leaky_relu_count", "leaky_relu_rep", "axpy_count", "axpy_rep",
    "duplicate_count", "duplicate_rep", "brcb", "cast_count", "cast_rep",
    "compare_count", "compare_rep", "compare_scalar_count", "compare_scalar_rep",
    "select_count", "select_rep",
]



# Helpers are `register_jitable` (an @overload typed with non-literal arguments) for the same
# reason: a jitted helper called with constant arguments would compile a literal-typed
# specialisation per api name / constant.
_jit = prim
_rj = register_jitable(nogil=True, error_model="numpy")
# Generic kernels take the element operation as a first-class function: they must be IR-inlined
# (a dispatcher passed as a value to a separately compiled function makes the caller uncacheable).
_inl = njit(nogil=True, cache=True, inline="always", error_model="numpy")

# ---- dtype facts, decided at compile time -------------------------------------------------------


def _kind(t):
    """0 int, 1 float16, 2 bfloat16, 3 float32, 4 float64 (of a numba array or scalar type)."""
    dt = getattr(t, "dtype", t)
    if isinstance(dt, types.Record):
        return 1 if "f16" in dt.fields else 2
    if isinstance(dt, types.Float):
        return 3 if dt.bitwidth == 32 else 4
    return 0


def _name(t):
    k = _kind(t)
    return ("", "float16", "bfloat16")[k] if k in (1, 2) else str(getattr(t, "dtype", t))


def _const1(fn):
    """A stub `f(x)` whose overload returns the constant fn(numba type of x)."""
    def stub(x):
        raise NotImplementedError

    @overload(stub)
    def _ov(x):
        v = fn(x)
        return lambda x: v
    return stub


def _const2(fn):
    def stub(x, y):
        raise NotImplementedError

    @overload(stub)
    def _ov(x, y):
        v = fn(x, y)
        return lambda x, y: v
    return stub


fkind = _const1(_kind)                # fkind(a) -> 0 int, 1 f16, 2 bf16, 3 f32, 4 f64
dtname = _const1(_name)               # dtname(a) -> "float32", "bfloat16", ...
is_arr = _const1(lambda x: isinstance(x, types.Array))
vecable = _const1(lambda a: not isinstance(getattr(a, "dtype", a), types.Record))
same_dtype = _const2(lambda a, b: getattr(a, "dtype", a) == getattr(b, "dtype", b))


def _elem_bytes(t):
    d = getattr(t, "dtype", t)
    return d.size if isinstance(d, types.Record) else max(1, d.bitwidth // 8)


# elements per 32 B block as a compile-time constant: rep loops over whole blocks then have a
# known trip count and vectorise (a runtime `32 // itemsize` made them ~4x slower)
per_block = _const1(lambda a: 32 // _elem_bytes(a))


def zero_of(x):
    """A zero of x's numeric type (so `x if c else zero_of(x)` keeps float32)."""
    raise NotImplementedError


@overload(zero_of)
def _ov_zero_of(x):
    t = x
    return lambda x: t(0)


def as_elem(a, s):
    """Scalar s rounded to tensor a's dtype, returned in a's compute type."""
    raise NotImplementedError


@overload(as_elem)
def _ov_as_elem(a, s):
    k = _kind(a)
    if k == 1:
        return lambda a, s: f16_bits_to_f32(f32_to_f16_bits(np.float32(s)))
    if k == 2:
        return lambda a, s: bf16_bits_to_f32(f32_to_bf16_bits(np.float32(s)))
    t = a.dtype
    return lambda a, s: t(s)


def put_bits(a, i, bits):
    """Store the integer `bits` as the raw bit pattern of element i (Ascend C's index results)."""
    raise NotImplementedError


@overload(put_bits)
def _ov_put_bits(a, i, bits):
    k = _kind(a)
    if k == 1:
        def impl(a, i, bits):
            a[i].f16 = np.uint16(bits)
        return impl
    if k == 2:
        def impl(a, i, bits):
            a[i].bf16 = np.uint16(bits)
        return impl
    if k == 3:
        def impl(a, i, bits):
            a[i] = np.uint32(bits).view(np.float32)
        return impl
    if k == 4:
        def impl(a, i, bits):
            a[i] = np.uint64(bits).view(np.float64)
        return impl
    t = a.dtype

    def impl(a, i, bits):
        a[i] = t(bits)
    return impl


# ---- checks ----------------------------------------------------------------------------------
# Errors follow errors.py: a constant template plus runtime values, formatted when read (building
# strings in nopython code would cost ~0.5 s of LLVM time in every primitive that links it).


@_rj
def check_range(api, name, v, lo, hi):
    if v < lo or v > hi:
        raise KernelError("{}: {} must be in [{}, {}], got {}={}", api, name, lo, hi, name, v)


@_rj
def _check_n(ctx, api, what, x, n):
    core.check_local(ctx, api, what, x, n)


def check_count(ctx, api, what, x, n):
    """Raise unless tensor x holds n elements (core.check_local's rule); nothing for scalars."""
    raise NotImplementedError


@overload(check_count)
def _ov_check_count(ctx, api, what, x, n):
    if isinstance(x, types.Array):
        return lambda ctx, api, what, x, n: _check_n(ctx, api, what, x, n)
    return lambda ctx, api, what, x, n: None


def require_float(api, what, x):
    """Raise unless tensor x has a float dtype."""
    raise NotImplementedError


def require_int(api, what, x):
    """Raise unless tensor x has an integer dtype."""
    raise NotImplementedError


def _require(want_float):
    def ov(api, what, x):
        if (_kind(x) != 0) == want_float:
            return lambda api, what, x: None
        rule = "a float type" if want_float else "an integer type"
        name = _name(x)

        def impl(api, what, x):
            raise KernelError("{}: {} dtype must be {}, got dtype={}", api, what, rule, name)
        return impl
    return ov


overload(require_float)(_require(True))
overload(require_int)(_require(False))


def require_same(api, what, x, dst):
    """Raise unless tensor x has dst's dtype (Ascend C's single template T)."""
    raise NotImplementedError


@overload(require_same)
def _ov_require_same(api, what, x, dst):
    if getattr(x, "dtype", x) == getattr(dst, "dtype", dst):
        return lambda api, what, x, dst: None
    want, got = _name(dst), _name(x)

    def impl(api, what, x, dst):
        raise KernelError("{}: {} dtype must equal dst's ({}), got dtype={}", api, what, want,
                          got)
    return impl


def vmask(api, mask, elem_bytes):
    """(m0, m1) mask words of a repeat form: an int selects the first `mask` lanes (1..lanes),
    a 1- or 2-tuple gives the words (bits beyond the lane count are an error)."""
    raise NotImplementedError


@_rj
def _check_eb(api, elem_bytes):
    if elem_bytes < 2:
        raise KernelError("{}: the mask/repeat form needs 16-, 32- or 64-bit elements, got "
                          "{}-bit elements (use the count form)", api, elem_bytes * 8)


@_rj
def _vmask_int(api, mask, elem_bytes):
    _check_eb(api, elem_bytes)
    check_range(api, "mask", mask, 1, 256 // elem_bytes)
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    if mask >= 128:
        return full, full
    if mask >= 64:
        return full, (np.uint64(1) << np.uint64(mask - 64)) - np.uint64(1)
    return (np.uint64(1) << np.uint64(mask)) - np.uint64(1), np.uint64(0)


@_rj
def _vmask_words(api, m0, m1, elem_bytes):
    _check_eb(api, elem_bytes)
    lanes = 256 // elem_bytes
    if (lanes <= 64 and m1 != 0) or (lanes < 64 and (m0 >> np.uint64(lanes)) != 0):
        raise KernelError("{}: mask must select lanes below {} for {}-bit elements, got "
                          "mask=[{}, {}]", api, lanes, elem_bytes * 8, m0, m1)
    return m0, m1


@overload(vmask)
def _ov_vmask(api, mask, elem_bytes):
    if isinstance(mask, types.Integer):
        return lambda api, mask, elem_bytes: _vmask_int(api, mask, elem_bytes)
    if isinstance(mask, (types.UniTuple, types.Tuple)) and len(mask) in (1, 2):
        def impl(api, mask, elem_bytes):
            m0, m1 = mask_words(mask, elem_bytes)
            return _vmask_words(api, m0, m1, elem_bytes)
        return impl
    return None


@_rj
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@_rj
def lanes_on(m0, m1, lanes):
    """Number of selected lanes (vmask guarantees no bits beyond `lanes`)."""
    return _popcount(m0) + _popcount(m1)


@_rj
def _log2_pow2(x):
    """Bit index of a power of two x (uint64), from the exponent of float64(x)."""
    return (np.float64(x).view(np.int64) >> 52) - 1023


@_rj
def _hibit(x):
    """Index of the highest set bit of x (uint64), -1 for 0."""
    if x == 0:
        return -1
    n = 0
    for sh in (32, 16, 8, 4, 2, 1):
        if (x >> np.uint64(sh)) != 0:
            x = x >> np.uint64(sh)
            n += sh
    return n


@_rj
def next_lane(w0, w1):
    """(lane, w0, w1): the lowest selected lane of the remaining mask words, which lose it;
    lane -1 when none is left. Rep loops visit only selected lanes with it."""
    if w0 != 0:
        low = w0 & (np.uint64(0) - w0)
        return _log2_pow2(low), w0 ^ low, w1
    if w1 != 0:
        low = w1 & (np.uint64(0) - w1)
        return 64 + _log2_pow2(low), w0, w1 ^ low
    return -1, w0, w1


@_rj
def top_lane(m0, m1):
    """Highest selected lane, -1 if none."""
    return _hibit(m1) + 64 if m1 != 0 else _hibit(m0)


@_rj
def far_offset(m0, m1, pb, blk):
    """Largest in-repeat element offset among the selected lanes (-1 if none)."""
    if blk > 0:  # offsets grow with the lane
        j = top_lane(m0, m1)
        if j < 0:
            return -1
        b = j // pb
        return b * blk * pb + (j - b * pb)
    g = np.uint64(0)  # blk == 0: all 8 blocks overlap; fold them onto one
    w = (np.uint64(1) << np.uint64(pb)) - np.uint64(1)
    for b in range(8):
        start = b * pb
        if start < 64:
            g |= (m0 >> np.uint64(start)) & w
        else:
            g |= (m1 >> np.uint64(start - 64)) & w
    return _hibit(g)


@_rj
def prefix_lanes(m0, m1):
    """n if the mask selects exactly lanes 0..n-1 (the common case: an int mask), else -1.
    Rep loops then walk whole 32 B blocks instead of scanning bits lane by lane."""
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    if m1 == 0:
        if m0 & (m0 + np.uint64(1)) == 0:
            return _popcount(m0)
        return -1
    if m0 == full and (m1 == full or m1 & (m1 + np.uint64(1)) == 0):
        return 64 + _popcount(m1)
    return -1


@_rj
def rep_index(r, j, pb, blk, rep):
    """Element index of lane j of repeat r (pb elements per 32 B block, strides in blocks)."""
    b = j // pb
    return r * rep * pb + b * blk * pb + (j - b * pb)


def asize(x):
    raise NotImplementedError


@overload(asize)
def _ov_asize(x):
    if isinstance(x, types.Array):
        return lambda x: x.size
    return lambda x: np.int64(1) << 62


@_rj
def check_extent(api, what, a, repeat, m0, m1, lanes, pb, blk, rep):
    """Raise unless every element the repeats touch lies inside tensor `a` (scalars pass)."""
    if repeat <= 0:
        return
    off = far_offset(m0, m1, pb, blk)
    if off < 0:
        return
    far = (repeat - 1) * rep * pb + off
    if far >= asize(a):
        raise KernelError("{}: {} must hold every element the repeats touch, got index={} for "
                          "a tensor of {} elements", api, what, far, asize(a))


@_rj
def pb_of(a):
    return 32 // a.itemsize


@_rj
def check_bin_params(api, p):
    """BinaryRepeatParams fields are uint8 in Ascend C."""
    check_range(api, "repeat_params.dst_blk_stride", p.dst_blk_stride, 0, 255)
    check_range(api, "repeat_params.src0_blk_stride", p.src0_blk_stride, 0, 255)
    check_range(api, "repeat_params.src1_blk_stride", p.src1_blk_stride, 0, 255)
    check_range(api, "repeat_params.dst_rep_stride", p.dst_rep_stride, 0, 255)
    check_range(api, "repeat_params.src0_rep_stride", p.src0_rep_stride, 0, 255)
    check_range(api, "repeat_params.src1_rep_stride", p.src1_rep_stride, 0, 255)


@_rj
def check_un_params(api, p):
    """UnaryRepeatParams: block strides uint16, repeat strides uint8."""
    check_range(api, "repeat_params.dst_blk_stride", p.dst_blk_stride, 0, 65535)
    check_range(api, "repeat_params.src_blk_stride", p.src_blk_stride, 0, 65535)
    check_range(api, "repeat_params.dst_rep_stride", p.dst_rep_stride, 0, 255)
    check_range(api, "repeat_params.src_rep_stride", p.src_rep_stride, 0, 255)


# ---- scalar operations (compute type in, compute type out) --------------------------------------

@_jit
def _add(x, y):
    return x + y


@_jit
def _sub(x, y):
    return x - y


@_jit
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


@_jit
def _max(x, y):
    return x if (x > y or x != x) else y


@_jit
def _min(x, y):
    return x if (x < y or x != x) else y


@_jit
def _relu(x):
    return x if (x > 0 or x != x) else zero_of(x)


@_jit
def _add_relu(x, y):
    return _relu(x + y)


@_jit
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


@_rj
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


@_jit
def _ln(x):
    return np.log(x)


@_jit
def _sqrt(x):
    return np.sqrt(x)


@_jit
def _rsqrt(x):
    return np.float32(1) / np.sqrt(x)


@_jit
def _recip(x):
    return np.float32(1) / x


@_jit
def _abs(x):
    return abs(x)


@_jit
def _leaky(x, s):
    return x if x >= 0 else x * s


# ---- generic loops ---------------------------------------------------------------------------

@_inl
def _bin_loop(dst, a, b, n, op):
    for i in range(n):
        st(dst, i, op(ld(a, i), ld(b, i)))


@_inl
def _un_loop(dst, a, n, op):
    for i in range(n):
        st(dst, i, op(ld(a, i)))


@_inl
def _sc_loop(dst, a, s, n, op):
    for i in range(n):
        st(dst, i, op(ld(a, i), s))


@_inl
def binary_count(ctx, api, dst, a, b, n, op):
    # sizes compared inline (a call per check costs ~50 ns of argument passing and reference
    # counting per tile); the failing check is found and reported out of line, as before
    if n < 0 or n > dst.size or n > a.size or n > b.size:
        check_count(ctx, api, "dst", dst, n)
        check_count(ctx, api, "src0", a, n)
        check_count(ctx, api, "src1", b, n)
    require_same(api, "src0", a, dst)
    require_same(api, "src1", b, dst)
    # dst is src0 (in place): pass one array for both so LLVM sees no aliasing and vectorises
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _bin_loop(a, a, b, n, op)
    else:
        _bin_loop(dst, a, b, n, op)
    ctx[2][core.S_COUNTERS + core.C_VEC_OPS] += n   # core.count, inline


@_inl
def binary_rep(ctx, api, dst, a, b, mask, repeat, p, op):
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src0", a, dst)
    require_same(api, "src1", b, dst)
    check_bin_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat, m0, m1, lanes, pb, p.dst_blk_stride, p.dst_rep_stride)
    check_extent(api, "src0", a, repeat, m0, m1, lanes, pb, p.src0_blk_stride,
                 p.src0_rep_stride)
    check_extent(api, "src1", b, repeat, m0, m1, lanes, pb, p.src1_blk_stride,
                 p.src1_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    for r in range(repeat):
        if n_on >= 0:   # lanes 0..n_on-1: block by block, same order as the lane walk
            for blk in range((n_on + kb - 1) // kb):
                ia = (r * p.src0_rep_stride + blk * p.src0_blk_stride) * kb
                ib = (r * p.src1_rep_stride + blk * p.src1_blk_stride) * kb
                idst = (r * p.dst_rep_stride + blk * p.dst_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        st(dst, idst + q, op(ld(a, ia + q), ld(b, ib + q)))
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        st(dst, idst + q, op(ld(a, ia + q), ld(b, ib + q)))
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            va = ld(a, rep_index(r, j, pb, p.src0_blk_stride, p.src0_rep_stride))
            vb = ld(b, rep_index(r, j, pb, p.src1_blk_stride, p.src1_rep_stride))
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), op(va, vb))
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, lanes))


@_inl
def unary_count(ctx, api, dst, a, n, op):
    check_count(ctx, api, "dst", dst, n)
    check_count(ctx, api, "src", a, n)
    require_same(api, "src", a, dst)
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _un_loop(a, a, n, op)
    else:
        _un_loop(dst, a, n, op)
    core.count(ctx, core.C_VEC_OPS, n)


@_inl
def unary_rep(ctx, api, dst, a, mask, repeat, p, op):
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src", a, dst)
    check_un_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat, m0, m1, lanes, pb, p.dst_blk_stride, p.dst_rep_stride)
    check_extent(api, "src", a, repeat, m0, m1, lanes, pb, p.src_blk_stride, p.src_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    for r in range(repeat):
        if n_on >= 0:   # lanes 0..n_on-1: block by block, same order as the lane walk
            for blk in range((n_on + kb - 1) // kb):
                ia = (r * p.src_rep_stride + blk * p.src_blk_stride) * kb
                idst = (r * p.dst_rep_stride + blk * p.dst_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v))
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v))
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(a, rep_index(r, j, pb, p.src_blk_stride, p.src_rep_stride))
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), op(v))
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, lanes))


@_inl
def scalar_count(ctx, api, dst, a, scalar, n, op):
    check_count(ctx, api, "dst", dst, n)
    check_count(ctx, api, "src", a, n)
    require_same(api, "src", a, dst)
    s = as_elem(a, scalar)
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _sc_loop(a, a, s, n, op)
    else:
        _sc_loop(dst, a, s, n, op)
    core.count(ctx, core.C_VEC_OPS, n)


@_inl
def scalar_rep(ctx, api, dst, a, scalar, mask, repeat, p, op):
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src", a, dst)
    check_un_params(api, p)
    s = as_elem(a, scalar)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat, m0, m1, lanes, pb, p.dst_blk_stride, p.dst_rep_stride)
    check_extent(api, "src", a, repeat, m0, m1, lanes, pb, p.src_blk_stride, p.src_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    for r in range(repeat):
        if n_on >= 0:   # lanes 0..n_on-1: block by block, same order as the lane walk
            for blk in range((n_on + kb - 1) // kb):
                ia = (r * p.src_rep_stride + blk * p.src_blk_stride) * kb
                idst = (r * p.dst_rep_stride + blk * p.dst_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v, s))
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v, s))
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(a, rep_index(r, j, pb, p.src_blk_stride, p.src_rep_stride))
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), op(v, s))
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, lanes))


# ---- binary ops ------------------------------------------------------------------------------

@_jit
def add_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Add` (count form): dst[i] = src0[i] + src1[i]."""
    binary_count(ctx, "add", dst, src0, src1, count, _add)


@_jit
def add_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    """Mirrors `AscendC::Add` (mask + repeat form, BinaryRepeatParams)."""
    binary_rep(ctx, "add", dst, src0, src1, mask, repeat_times, repeat_params, _add)


@_jit
def sub_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Sub`: dst = src0 - src1."""
    binary_count(ctx, "sub", dst, src0, src1, count, _sub)


@_jit
def sub_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "sub", dst, src0, src1, mask, repeat_times, repeat_params, _sub)


@_jit
def mul_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Mul`: dst = src0 * src1."""
    binary_count(ctx, "mul", dst, src0, src1, count, _mul)


@_jit
def mul_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "mul", dst, src0, src1, mask, repeat_times, repeat_params, _mul)


@_jit
def div_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Div`: dst = src0 / src1 (ints: truncating, x/0 = 0)."""
    binary_count(ctx, "div", dst, src0, src1, count, _div)


@_jit
def div_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "div", dst, src0, src1, mask, repeat_times, repeat_params, _div)


@_jit
def max_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Max`: element-wise maximum (NaN propagates)."""
    binary_count(ctx, "max", dst, src0, src1, count, _max)


@_jit
def max_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "max", dst, src0, src1, mask, repeat_times, repeat_params, _max)


@_jit
def min_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Min`: element-wise minimum (NaN propagates)."""
    binary_count(ctx, "min", dst, src0, src1, count, _min)


@_jit
def min_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "min", dst, src0, src1, mask, repeat_times, repeat_params, _min)


@_jit
def add_relu_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::AddRelu`: dst = max(src0 + src1, 0)."""
    binary_count(ctx, "add_relu", dst, src0, src1, count, _add_relu)


@_jit
def add_relu_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "add_relu", dst, src0, src1, mask, repeat_times, repeat_params, _add_relu)


@_jit
def sub_relu_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::SubRelu`: dst = max(src0 - src1, 0)."""
    binary_count(ctx, "sub_relu", dst, src0, src1, count, _sub_relu)


@_jit
def sub_relu_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    binary_rep(ctx, "sub_relu", dst, src0, src1, mask, repeat_times, repeat_params, _sub_relu)


@_jit
def bitwise_and_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::And` (integer dtypes)."""
    require_int("bitwise_and", "dst", dst)
    binary_count(ctx, "bitwise_and", dst, src0, src1, count, _and)


@_jit
def bitwise_and_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    require_int("bitwise_and", "dst", dst)
    binary_rep(ctx, "bitwise_and", dst, src0, src1, mask, repeat_times, repeat_params, _and)


@_jit
def bitwise_or_count(ctx, dst, src0, src1, count):
    """Mirrors `AscendC::Or` (integer dtypes)."""
    require_int("bitwise_or", "dst", dst)
    binary_count(ctx, "bitwise_or", dst, src0, src1, count, _or)


@_jit
def bitwise_or_rep(ctx, dst, src0, src1, mask, repeat_times, repeat_params, is_set_mask):
    require_int("bitwise_or", "dst", dst)
    binary_rep(ctx, "bitwise_or", dst, src0, src1, mask, repeat_times, repeat_params, _or)


# ---- unary ops -------------------------------------------------------------------------------

@_jit
def exp_count(ctx, dst, src, count):
    """Mirrors `AscendC::Exp` (float dtypes; float32 via a vectorised polynomial)."""
    require_float("exp", "dst", dst)
    unary_count(ctx, "exp", dst, src, count, _exp)


@_jit
def exp_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    require_float("exp", "dst", dst)
    unary_rep(ctx, "exp", dst, src, mask, repeat_times, repeat_params, _exp)


@_jit
def ln_count(ctx, dst, src, count):
    """Mirrors `AscendC::Ln` (float dtypes; ln(x<0) = NaN, ln(0) = -inf)."""
    require_float("ln", "dst", dst)
    unary_count(ctx, "ln", dst, src, count, _ln)


@_jit
def ln_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    require_float("ln", "dst", dst)
    unary_rep(ctx, "ln", dst, src, mask, repeat_times, repeat_params, _ln)


@_jit
def sqrt_count(ctx, dst, src, count):
    """Mirrors `AscendC::Sqrt` (float dtypes)."""
    require_float("sqrt", "dst", dst)
    unary_count(ctx, "sqrt", dst, src, count, _sqrt)


@_jit
def sqrt_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    require_float("sqrt", "dst", dst)
    unary_rep(ctx, "sqrt", dst, src, mask, repeat_times, repeat_params, _sqrt)


@_jit
def rsqrt_count(ctx, dst, src, count):
    """Mirrors `AscendC::Rsqrt`: 1/sqrt(x) (float dtypes)."""
    require_float("rsqrt", "dst", dst)
    unary_count(ctx, "rsqrt", dst, src, count, _rsqrt)


@_jit
def rsqrt_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    require_float("rsqrt", "dst", dst)
    unary_rep(ctx, "rsqrt", dst, src, mask, repeat_times, repeat_params, _rsqrt)


@_jit
def reciprocal_count(ctx, dst, src, count):
    """Mirrors `AscendC::Reciprocal`: 1/x (float dtypes)."""
    require_float("reciprocal", "dst", dst)
    unary_count(ctx, "reciprocal", dst, src, count, _recip)


@_jit
def reciprocal_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    require_float("reciprocal", "dst", dst)
    unary_rep(ctx, "reciprocal", dst, src, mask, repeat_times, repeat_params, _recip)


@_jit
def abs_count(ctx, dst, src, count):
    """Mirrors `AscendC::Abs`."""
    unary_count(ctx, "abs", dst, src, count, _abs)


@_jit
def abs_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    unary_rep(ctx, "abs", dst, src, mask, repeat_times, repeat_params, _abs)


@_jit
def relu_count(ctx, dst, src, count):
    """Mirrors `AscendC::Relu`: max(x, 0) (NaN propagates)."""
    unary_count(ctx, "relu", dst, src, count, _relu)


@_jit
def relu_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    unary_rep(ctx, "relu", dst, src, mask, repeat_times, repeat_params, _relu)


@_jit
def bitwise_not_count(ctx, dst, src, count):
    """Mirrors `AscendC::Not` (integer dtypes)."""
    require_int("bitwise_not", "dst", dst)
    unary_count(ctx, "bitwise_not", dst, src, count, _not)


@_jit
def bitwise_not_rep(ctx, dst, src, mask, repeat_times, repeat_params, is_set_mask):
    require_int("bitwise_not", "dst", dst)
    unary_rep(ctx, "bitwise_not", dst, src, mask, repeat_times, repeat_params, _not)


# ---- tensor-scalar ops (the scalar is first rounded to src's dtype) ------------------------------

@_jit
def adds_count(ctx, dst, src, scalar, count):
    """Mirrors `AscendC::Adds`: dst = src + scalar."""
    scalar_count(ctx, "adds", dst, src, scalar, count, _add)


@_jit
def adds_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    scalar_rep(ctx, "adds", dst, src, scalar, mask, repeat_times, repeat_params, _add)


@_jit
def muls_count(ctx, dst, src, scalar, count):
    """Mirrors `AscendC::Muls`: dst = src * scalar."""
    scalar_count(ctx, "muls", dst, src, scalar, count, _mul)


@_jit
def muls_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    scalar_rep(ctx, "muls", dst, src, scalar, mask, repeat_times, repeat_params, _mul)


@_jit
def maxs_count(ctx, dst, src, scalar, count):
    """Mirrors `AscendC::Maxs`: dst = max(src, scalar)."""
    scalar_count(ctx, "maxs", dst, src, scalar, count, _max)


@_jit
def maxs_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    scalar_rep(ctx, "maxs", dst, src, scalar, mask, repeat_times, repeat_params, _max)


@_jit
def mins_count(ctx, dst, src, scalar, count):
    """Mirrors `AscendC::Mins`: dst = min(src, scalar)."""
    scalar_count(ctx, "mins", dst, src, scalar, count, _min)


@_jit
def mins_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    scalar_rep(ctx, "mins", dst, src, scalar, mask, repeat_times, repeat_params, _min)


@_jit
def leaky_relu_count(ctx, dst, src, scalar, count):
    """Mirrors `AscendC::LeakyRelu`: x if x >= 0 else x * scalar."""
    require_float("leaky_relu", "dst", dst)
    scalar_count(ctx, "leaky_relu", dst, src, scalar, count, _leaky)


@_jit
def leaky_relu_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    require_float("leaky_relu", "dst", dst)
    scalar_rep(ctx, "leaky_relu", dst, src, scalar, mask, repeat_times, repeat_params, _leaky)


@_rj
def _axpy_loop(dst, a, s, n):
    for i in range(n):
        st(dst, i, ld(dst, i) + ld(a, i) * s)


@_jit
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


@_jit
def axpy_rep(ctx, dst, src, scalar, mask, repeat_times, repeat_params, is_set_mask):
    api = "axpy"
    require_float(api, "dst", dst)
    check_range(api, "repeat_times", repeat_times, 0, 255)
    p = repeat_params
    check_un_params(api, p)
    s = as_elem(src, scalar)
    eb = max(dst.itemsize, src.itemsize)
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pd = pb_of(dst)
    ps = pb_of(src)
    check_extent(api, "dst", dst, repeat_times, m0, m1, lanes, pd, p.dst_blk_stride,
                 p.dst_rep_stride)
    check_extent(api, "src", src, repeat_times, m0, m1, lanes, ps, p.src_blk_stride,
                 p.src_rep_stride)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(src, rep_index(r, j, ps, p.src_blk_stride, p.src_rep_stride))
            k = rep_index(r, j, pd, p.dst_blk_stride, p.dst_rep_stride)
            st(dst, k, ld(dst, k) + v * s)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))


# ---- duplicate, brcb -------------------------------------------------------------------------

@_jit
def duplicate_count(ctx, dst, scalar, count):
    """Mirrors `AscendC::Duplicate` (count form): dst[:count] = scalar."""
    check_count(ctx, "duplicate", "dst", dst, count)
    v = as_elem(dst, scalar)
    for i in range(count):
        st(dst, i, v)
    core.count(ctx, core.C_VEC_OPS, count)


@_jit
def duplicate_rep(ctx, dst, scalar, mask, repeat_times, dst_block_stride, dst_repeat_stride,
                  is_set_mask):
    """Mirrors `AscendC::Duplicate` (mask + repeat form)."""
    api = "duplicate"
    check_range(api, "repeat_times", repeat_times, 0, 255)
    check_range(api, "dst_block_stride", dst_block_stride, 0, 65535)
    check_range(api, "dst_repeat_stride", dst_repeat_stride, 0, 255)
    v = as_elem(dst, scalar)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat_times, m0, m1, lanes, pb, dst_block_stride,
                 dst_repeat_stride)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            st(dst, rep_index(r, j, pb, dst_block_stride, dst_repeat_stride), v)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))


@_jit
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
        raise KernelError("{}: dst must not share src0's address (Ascend C forbids it), got "
                          "the same address for both", api)
    if dbs == 0:
        dbs = 1  # as Ascend C's reference pseudo-code
    check_count(ctx, api, "src0", src0, repeat_times * 8)
    pb = pb_of(dst)
    far = (repeat_times - 1) * drs * pb + 7 * dbs * pb + pb - 1
    if far >= dst.size:
        raise KernelError("{}: dst must hold every element the repeats touch, got index={} for "
                          "a tensor of {} elements", api, far, dst.size)
    for r in range(repeat_times):
        for k in range(8):
            v = ld(src0, r * 8 + k)
            base = r * drs * pb + k * dbs * pb
            for q in range(pb):
                st(dst, base + q, v)
    core.count(ctx, core.C_VEC_OPS, repeat_times * 8 * pb)


# ---- cast ------------------------------------------------------------------------------------
CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD = range(7)


@_rj
def _round_int(v, mode):
    """Round a float to an integral float value with an Ascend C round mode."""
    if mode == CAST_FLOOR:
        return np.floor(v)
    if mode == CAST_CEIL:
        return np.ceil(v)
    if mode == CAST_TRUNC:
        return np.trunc(v)
    if mode == CAST_ROUND:
        t = np.trunc(v)
        return t + np.sign(v) if abs(v - t) >= 0.5 else t
    if mode == CAST_ODD:
        t = np.trunc(v)
        return t if (t == v or np.fmod(t, 2.0) != 0) else t + np.sign(v)
    return np.rint(v)


@_rj
def _rne_to(x, k):
    """x (float64) rounded to nearest-even in float kind k, as a float64 value."""
    if k == 1:
        return np.float64(f16_bits_to_f32(f32_to_f16_bits(np.float32(x))))
    if k == 2:
        return np.float64(bf16_bits_to_f32(f32_to_bf16_bits(np.float32(x))))
    if k == 3:
        return np.float64(np.float32(x))
    return x


@_rj
def _bits_of(v, k):
    """Bit pattern of a value v >= 0 exactly representable in kind k."""
    if k == 1:
        return np.uint64(f32_to_f16_bits(np.float32(v)))
    if k == 2:
        return np.uint64(f32_to_bf16_bits(np.float32(v)))
    if k == 3:
        return np.uint64(np.float32(v).view(np.uint32))
    return np.float64(v).view(np.uint64)


@_rj
def _from_bits(b, k):
    if k == 1:
        return np.float64(f16_bits_to_f32(np.uint16(b)))
    if k == 2:
        return np.float64(bf16_bits_to_f32(np.uint16(b)))
    if k == 3:
        return np.float64(np.uint32(b).view(np.float32))
    return np.uint64(b).view(np.float64)


@_rj
def _narrow(x, mode, k):
    """x (float64) rounded into float kind k with an Ascend C round mode (float64 result)."""
    r = _rne_to(x, k)
    if r == x or x != x or mode == CAST_NONE or mode == CAST_RINT:
        return r
    ax = abs(x)
    ar = abs(r)
    if ar > ax:
        u = ar
        t = _from_bits(_bits_of(ar, k) - np.uint64(1), k)
    else:
        t = ar
        u = _from_bits(_bits_of(ar, k) + np.uint64(1), k)
    neg = x < 0
    if mode == CAST_TRUNC:
        m = t
    elif mode == CAST_FLOOR:
        m = u if neg else t
    elif mode == CAST_CEIL:
        m = t if neg else u
    elif mode == CAST_ROUND:
        m = u if (u - ax) <= (ax - t) else t
    else:  # CAST_ODD
        m = t if (_bits_of(t, k) & np.uint64(1)) != 0 else u
    return -m if neg else m


def int_bounds(a):
    raise NotImplementedError


@overload(int_bounds)
def _ov_int_bounds(a):
    if _kind(a) != 0:
        return lambda a: (0.0, 0.0)
    info = np.iinfo(np.dtype(str(a.dtype)))
    lo, hi = float(info.min), float(info.max)
    return lambda a: (lo, hi)


@_rj
def _cast_one(dst, i, v, mode, dk, sk, lo, hi):
    if dk == 0:
        if sk == 0:  # int -> int: saturate
            if v < lo:
                st(dst, i, lo)
            elif v > hi:
                st(dst, i, hi)
            else:
                st(dst, i, v)
        else:        # float -> int: round, saturate, NaN -> 0
            f = np.float64(v)
            if f != f:
                st(dst, i, 0)
            else:
                rr = _round_int(f, mode)
                if rr >= hi:
                    st(dst, i, hi)
                elif rr <= lo:
                    st(dst, i, lo)
                else:
                    st(dst, i, np.int64(rr))
    elif sk == dk:   # same float type: CAST_NONE copies, other modes round to integral
        if mode == CAST_NONE:
            st(dst, i, v)
        else:
            st(dst, i, _round_int(v, mode))
    elif sk != 0 and (dk == 4 or (dk == 3 and sk < 3)):  # widening float: exact
        st(dst, i, v)
    else:            # int -> float, narrowing float, f16 <-> bf16
        st(dst, i, _narrow(np.float64(v), mode, dk))


@_rj
def _cast_setup(api, dst, src, round_mode):
    check_range(api, "round_mode", round_mode, 0, 6)
    lo, hi = int_bounds(dst)
    return fkind(dst), fkind(src), lo, hi


@_jit
def cast_count(ctx, dst, src, round_mode, count):
    """Mirrors `AscendC::Cast` (count form) with RoundMode `round_mode`."""
    api = "cast"
    check_count(ctx, api, "dst", dst, count)
    check_count(ctx, api, "src", src, count)
    dk, sk, lo, hi = _cast_setup(api, dst, src, round_mode)
    for i in range(count):
        _cast_one(dst, i, ld(src, i), round_mode, dk, sk, lo, hi)
    core.count(ctx, core.C_VEC_OPS, count)


@_jit
def cast_rep(ctx, dst, src, round_mode, mask, repeat_times, repeat_params, is_set_mask):
    """Mirrors `AscendC::Cast` (mask + repeat form): lanes and mask follow the wider dtype,
    each operand's blocks are 32 bytes of its own dtype."""
    api = "cast"
    check_range(api, "repeat_times", repeat_times, 0, 255)
    p = repeat_params
    check_un_params(api, p)
    dk, sk, lo, hi = _cast_setup(api, dst, src, round_mode)
    eb = max(dst.itemsize, src.itemsize)
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pd = pb_of(dst)
    ps = pb_of(src)
    check_extent(api, "dst", dst, repeat_times, m0, m1, lanes, pd, p.dst_blk_stride,
                 p.dst_rep_stride)
    check_extent(api, "src", src, repeat_times, m0, m1, lanes, ps, p.src_blk_stride,
                 p.src_rep_stride)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(src, rep_index(r, j, ps, p.src_blk_stride, p.src_rep_stride))
            _cast_one(dst, rep_index(r, j, pd, p.dst_blk_stride, p.dst_rep_stride), v,
                      round_mode, dk, sk, lo, hi)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))


# ---- compare / select ------------------------------------------------------------------------
LT, GT, EQ, LE, GE, NE = range(6)


@_rj
def _cmp(x, y, mode):
    if mode == LT:
        return x < y
    if mode == GT:
        return x > y
    if mode == EQ:
        return x == y
    if mode == LE:
        return x <= y
    if mode == GE:
        return x >= y
    return x != y


def ld_or(x, i, s):
    """ld(x, i) for a tensor x; the prepared scalar s otherwise."""
    raise NotImplementedError


@overload(ld_or)
def _ov_ld_or(x, i, s):
    if isinstance(x, types.Array):
        return lambda x, i, s: ld(x, i)
    return lambda x, i, s: s


def scalar_or_zero(a, x):
    """x rounded to a's dtype when x is a scalar; a zero of a's compute type for a tensor x."""
    raise NotImplementedError


@overload(scalar_or_zero)
def _ov_scalar_or_zero(a, x):
    if isinstance(x, types.Array):
        return lambda a, x: as_elem(a, 0)
    return lambda a, x: as_elem(a, x)


@_rj
def _cmp_setup(ctx, api, dst, src0, src1, cmp_mode):
    check_range(api, "cmp_mode", cmp_mode, 0, 5)
    if dst.itemsize != 1:
        raise KernelError("{}: dst dtype must be uint8 or int8 (one bit per element), got "
                          "dtype={}", api, dtname(dst))
    require_int(api, "dst", dst)
    if is_arr(src1):
        require_same(api, "src1", src1, src0)


@_rj
def _cmp_count(ctx, api, dst, src0, src1, cmp_mode, count):
    _cmp_setup(ctx, api, dst, src0, src1, cmp_mode)
    check_count(ctx, api, "src0", src0, count)
    check_count(ctx, api, "src1", src1, count)
    eb = src0.itemsize
    n = (count * eb // 256) * 256 // eb  # hardware skips the tail that is not 256 B aligned
    if n // 8 > dst.size:
        raise KernelError("{}: dst must hold one bit per compared element ({} bytes), got "
                          "size={}", api, n // 8, dst.size)
    s = scalar_or_zero(src0, src1)
    for k in range(n // 8):
        w = 0
        for b in range(8):
            i = k * 8 + b
            if _cmp(ld(src0, i), ld_or(src1, i, s), cmp_mode):
                w |= 1 << b
        st(dst, k, w)
    core.count(ctx, core.C_VEC_OPS, n)


@_rj
def _cmp_rep(ctx, api, dst, src0, src1, cmp_mode, repeat, s0b, s0r, s1b, s1r):
    _cmp_setup(ctx, api, dst, src0, src1, cmp_mode)
    check_range(api, "repeat_times", repeat, 0, 255)
    eb = src0.itemsize
    lanes = 256 // eb
    pb = 32 // eb
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    m1 = full if lanes > 64 else np.uint64(0)
    m0 = full if lanes >= 64 else (np.uint64(1) << np.uint64(lanes)) - np.uint64(1)
    check_extent(api, "src0", src0, repeat, m0, m1, lanes, pb, s0b, s0r)
    check_extent(api, "src1", src1, repeat, m0, m1, lanes, pb, s1b, s1r)
    if repeat * lanes // 8 > dst.size:
        raise KernelError("{}: dst must hold one bit per compared element ({} bytes), got "
                          "size={}", api, repeat * lanes // 8, dst.size)
    s = scalar_or_zero(src0, src1)
    for r in range(repeat):
        for k in range(lanes // 8):
            w = 0
            for b in range(8):
                j = k * 8 + b
                v0 = ld(src0, rep_index(r, j, pb, s0b, s0r))
                v1 = ld_or(src1, rep_index(r, j, pb, s1b, s1r), s)
                if _cmp(v0, v1, cmp_mode):
                    w |= 1 << b
            st(dst, r * (lanes // 8) + k, w)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes)


@_jit
def compare_count(ctx, dst, src0, src1, cmp_mode, count):
    """Mirrors `AscendC::Compare` (count form): bit i of dst (uint8, little-endian bit order) is
    `src0[i] <cmp_mode> src1[i]`; only the 256-byte-aligned part of `count` is compared."""
    _cmp_count(ctx, "compare", dst, src0, src1, cmp_mode, count)


@_jit
def compare_rep(ctx, dst, src0, src1, cmp_mode, mask, repeat_times, repeat_params, is_set_mask):
    """Mirrors `AscendC::Compare` (repeat form, BinaryRepeatParams). On A2 the mask is a
    reserved parameter: every lane is compared; repeat r writes bits [r*lanes, (r+1)*lanes)."""
    p = repeat_params
    check_bin_params("compare", p)
    _cmp_rep(ctx, "compare", dst, src0, src1, cmp_mode, repeat_times, p.src0_blk_stride,
             p.src0_rep_stride, p.src1_blk_stride, p.src1_rep_stride)


@_jit
def compare_scalar_count(ctx, dst, src0, src1, cmp_mode, count):
    """Mirrors `AscendC::CompareScalar` (count form): bit i = `src0[i] <cmp_mode> src1`."""
    _cmp_count(ctx, "compare_scalar", dst, src0, src1, cmp_mode, count)


@_jit
def compare_scalar_rep(ctx, dst, src0, src1, cmp_mode, mask, repeat_times, repeat_params,
                       is_set_mask):
    """Mirrors `AscendC::CompareScalar` (repeat form, UnaryRepeatParams; mask reserved)."""
    p = repeat_params
    check_un_params("compare_scalar", p)
    _cmp_rep(ctx, "compare_scalar", dst, src0, src1, cmp_mode, repeat_times, p.src_blk_stride,
             p.src_rep_stride, 0, 0)


@_rj
def _sel_bit(sel, i, nb):
    return (np.uint64(ld(sel, i // nb)) >> np.uint64(i % nb)) & np.uint64(1)


@_rj
def _sel_setup(api, dst, sel_mask, src0, src1, sel_mode):
    check_range(api, "sel_mode", sel_mode, 0, 2)
    require_int(api, "sel_mask", sel_mask)
    require_same(api, "src0", src0, dst)
    if is_arr(src1):
        require_same(api, "src1", src1, dst)
        if sel_mode == 1:
            raise KernelError("{}: src1 must be a scalar in sel_mode 1 (VSEL_TENSOR_SCALAR_MODE)"
                              ", got a tensor with sel_mode=1", api)
    elif sel_mode != 1:
        raise KernelError("{}: src1 must be a tensor in sel_mode 0 and 2, got a scalar with "
                          "sel_mode={}", api, sel_mode)


@_rj
def _sel_need(api, sel_mask, nbits):
    if nbits > sel_mask.size * sel_mask.itemsize * 8:
        raise KernelError("{}: sel_mask must hold {} bits, got size={} ({} bits)", api, nbits,
                          sel_mask.size, sel_mask.size * sel_mask.itemsize * 8)


@_jit
def select_count(ctx, dst, sel_mask, src0, src1, sel_mode, count):
    """Mirrors `AscendC::Select` (count form): dst[i] = src0[i] if bit else src1 (tensor or,
    in mode 1, scalar). Mode 0 reuses the first 256/sizeof(T) bits for every repeat."""
    api = "select"
    _sel_setup(api, dst, sel_mask, src0, src1, sel_mode)
    check_count(ctx, api, "dst", dst, count)
    check_count(ctx, api, "src0", src0, count)
    check_count(ctx, api, "src1", src1, count)
    lanes = 256 // dst.itemsize
    nb = sel_mask.itemsize * 8
    _sel_need(api, sel_mask, min(count, lanes) if sel_mode == 0 else count)
    s = scalar_or_zero(dst, src1)
    for i in range(count):
        bit = _sel_bit(sel_mask, i % lanes if sel_mode == 0 else i, nb)
        st(dst, i, ld(src0, i) if bit != 0 else ld_or(src1, i, s))
    core.count(ctx, core.C_VEC_OPS, count)


@_jit
def select_rep(ctx, dst, sel_mask, src0, src1, sel_mode, mask, repeat_times, repeat_params,
               is_set_mask):
    """Mirrors `AscendC::Select` (mask + repeat form): masked-off lanes keep dst; modes 1/2
    consume 256/sizeof(T) bits of sel_mask per repeat, mode 0 reuses the first ones."""
    api = "select"
    _sel_setup(api, dst, sel_mask, src0, src1, sel_mode)
    check_range(api, "repeat_times", repeat_times, 0, 255)
    p = repeat_params
    check_bin_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat_times, m0, m1, lanes, pb, p.dst_blk_stride,
                 p.dst_rep_stride)
    check_extent(api, "src0", src0, repeat_times, m0, m1, lanes, pb, p.src0_blk_stride,
                 p.src0_rep_stride)
    check_extent(api, "src1", src1, repeat_times, m0, m1, lanes, pb, p.src1_blk_stride,
                 p.src1_rep_stride)
    jmax = top_lane(m0, m1)
    if repeat_times > 0 and jmax >= 0:
        _sel_need(api, sel_mask, jmax + 1 if sel_mode == 0 else (repeat_times - 1) * lanes
                  + jmax + 1)
    nb = sel_mask.itemsize * 8
    s = scalar_or_zero(dst, src1)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            bit = _sel_bit(sel_mask, j if sel_mode == 0 else r * lanes + j, nb)
            k0 = rep_index(r, j, pb, p.src0_blk_stride, p.src0_rep_stride)
            k1 = rep_index(r, j, pb, p.src1_blk_stride, p.src1_rep_stride)
            v = ld(src0, k0) if bit != 0 else ld_or(src1, k1, s)
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), v)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))
