"""Shared machinery of the vector primitives: compile-time dtype facts, argument checks, masks.

Helpers are `register_jitable` (`jitable`: an @overload typed with non-literal arguments): a
jitted helper called with constant arguments would otherwise compile a literal-typed
specialisation per api name / constant. Errors follow errors.py: a constant template plus
runtime values, formatted when read (building strings in nopython code would cost ~0.5 s of
LLVM time in every primitive that links it).
"""
from __future__ import annotations

import warnings

import llvmlite.binding as _llvm
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .. import core
from ..core import lane_on, mask_words  # noqa: F401  (lane_on: for the vector modules)
from ..dtypes import bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits
from ..ccallback import guarded_callback
from ..numba_link import cached_njit
from ..errors import FAULT, fault, KernelError, recorded_fault
from ..state import MEM, STATE
from ..visibility import in_flight, PIPE_V, vis_check_tensor, vis_write
from .borrow import retyped

jitable = register_jitable(nogil=True, error_model="numpy")
# Generic kernels take the element operation as a first-class function: they must be IR-inlined
# (a dispatcher passed as a value to a separately compiled function makes the caller uncacheable).
inline = cached_njit(nogil=True, inline="always", error_model="numpy")

# ---- dtype facts, decided at compile time -------------------------------------------------------


def dtype_kind(t):
    """0 int, 1 float16, 2 bfloat16, 3 float32, 4 float64 (of a numba array or scalar type)."""
    dt = getattr(t, "dtype", t)
    if isinstance(dt, types.Record):
        return 1 if "f16" in dt.fields else 2
    if isinstance(dt, types.Float):
        return 3 if dt.bitwidth == 32 else 4
    return 0


def dtype_label(t):
    k = dtype_kind(t)
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


fkind = _const1(dtype_kind)                # fkind(a) -> 0 int, 1 f16, 2 bf16, 3 f32, 4 f64
dtname = _const1(dtype_label)               # dtname(a) -> "float32", "bfloat16", ...
is_arr = _const1(lambda x: isinstance(x, types.Array))
vecable = _const1(lambda a: not isinstance(getattr(a, "dtype", a), types.Record))
same_dtype = _const2(lambda a, b: getattr(a, "dtype", a) == getattr(b, "dtype", b))


def elem_bytes_of(t):
    d = getattr(t, "dtype", t)
    return d.size if isinstance(d, types.Record) else max(1, d.bitwidth // 8)


# elements per 32 B block as a compile-time constant: rep loops over whole blocks then have a
# known trip count and vectorise (a runtime `32 // itemsize` made them ~4x slower)
per_block = _const1(lambda a: 32 // elem_bytes_of(a))


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
    k = dtype_kind(a)
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
    k = dtype_kind(a)
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


@jitable
def check_range(api, name, v, lo, hi):
    if v < lo or v > hi:
        fault("{}: {} must be in [{}, {}], got {}={}", api, name, lo, hi, name, v)
        raise KernelError(FAULT)


@jitable
def _check_n(ctx, api, what, x, n):
    core.check_local(ctx, api, what, x, n)
    if in_flight(ctx):
        vector_reads(ctx, api, what, x, n)


@jitable
def vector_reads(ctx, api, what, x, n):
    """Checked mode, after `in_flight`: the vector pipe must see elements [0, n) of source
    operand `x`; for `dst`, the vector pipe wrote them (lang/visibility.py)."""
    if what == "dst":
        vis_write(ctx, PIPE_V, x, n * x.itemsize)
    elif n > 0:
        vis_check_tensor(ctx, api, what, PIPE_V, x, n * x.itemsize)


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
        if (dtype_kind(x) != 0) == want_float:
            return lambda api, what, x: None
        rule = "a float type" if want_float else "an integer type"
        name = dtype_label(x)

        def impl(api, what, x):
            fault("{}: {} dtype must be {}, got dtype={}", api, what, rule, name)
            raise KernelError(FAULT)
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
    want, got = dtype_label(dst), dtype_label(x)

    def impl(api, what, x, dst):
        fault("{}: {} dtype must equal dst's ({}), got dtype={}", api, what, want,
              got)
        raise KernelError(FAULT)
    return impl


def vmask(ctx, api, mask, elem_bytes):
    """(m0, m1) mask words of a repeat form: an int selects the first `mask` lanes (1..lanes),
    a 1- or 2-tuple gives the words. For 32- and 64-bit elements (<= 64 lanes) the NPU ignores
    mask[1] (in checked mode a warning names the api and the value; unchecked runs are
    silent, as the NPU); bits of mask[0] beyond 32 lanes (64-bit elements) are an error."""
    raise NotImplementedError


# -- warnings from kernels: a `fault` record turned into a RuntimeWarning instead of a raise ------
_WARNED = set()     # records already warned about (each is reported once per process)


def _warn_recorded():
    """Warn (once per distinct message) with the calling thread's last `fault` record."""
    rec = recorded_fault()
    if rec is None or rec in _WARNED:
        return
    _WARNED.add(rec)
    warnings.warn(str(KernelError(*rec)), RuntimeWarning, stacklevel=2)


_WARN_SYM = "ascend_emu_warn_recorded"
_llvm.add_symbol(_WARN_SYM, guarded_callback(_warn_recorded, "void"))    # ccallback.py
_c_warn = types.ExternalFunction(_WARN_SYM, types.void())


def warn_recorded():
    """Kernel code: `fault(template, *values)` then `warn_recorded()` warns instead of trapping
    (hardware runs on; the emulator says what it tolerated)."""
    _warn_recorded()


@overload(warn_recorded, jit_options={"nogil": True})
def _ov_warn_recorded():
    return lambda: _c_warn()


_CHECKED_BITS = core.FLAG_NAN_FILL | core.FLAG_DEFER | core.FLAG_REPORT_ROUNDING


@jitable
def is_checked(ctx):
    """Whether the core runs in checked mode (warnings of tolerated behaviour are its own)."""
    return (ctx[STATE][0].options & _CHECKED_BITS) != 0


@jitable
def _check_eb(api, elem_bytes):
    if elem_bytes < 2:
        fault("{}: the mask/repeat form needs 16-, 32- or 64-bit elements, got "
              "{}-bit elements (use the count form)", api, elem_bytes * 8)
        raise KernelError(FAULT)


@jitable
def _vmask_int(api, mask, elem_bytes):
    _check_eb(api, elem_bytes)
    check_range(api, "mask", mask, 1, 256 // elem_bytes)
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    if mask >= 128:
        return full, full
    if mask >= 64:
        return full, (np.uint64(1) << np.uint64(mask - 64)) - np.uint64(1)
    return (np.uint64(1) << np.uint64(mask)) - np.uint64(1), np.uint64(0)


@jitable
def _vmask_words(api, m0, m1, elem_bytes, checked):
    _check_eb(api, elem_bytes)
    lanes = 256 // elem_bytes
    if lanes < 64 and (m0 >> np.uint64(lanes)) != 0:
        fault("{}: mask must select lanes below {} for {}-bit elements, got "
              "mask=[{}, {}]", api, lanes, elem_bytes * 8, m0, m1)
        raise KernelError(FAULT)
    if lanes <= 64 and m1 != 0:
        # Ascend C asks for mask[1] == 0 with b32/b64 operands; the NPU reads only mask[0]
        # (pyasc's test_vadd_bits passes [2**64-1, 2**64-1] for float32 and int32); a
        # warning of tolerated behaviour: checked mode only
        if checked:
            fault("{}: mask[1] is ignored for {}-bit elements ({} lanes), got mask[1]={}", api,
                  elem_bytes * 8, lanes, m1)
            warn_recorded()
        m1 = np.uint64(0)
    return m0, m1


@overload(vmask)
def _ov_vmask(ctx, api, mask, elem_bytes):
    if isinstance(mask, types.Integer):
        return lambda ctx, api, mask, elem_bytes: _vmask_int(api, mask, elem_bytes)
    if isinstance(mask, (types.UniTuple, types.Tuple)) and len(mask) in (1, 2):
        def impl(ctx, api, mask, elem_bytes):
            m0, m1 = mask_words(mask, elem_bytes)
            return _vmask_words(api, m0, m1, elem_bytes, is_checked(ctx))
        return impl
    return None


@jitable
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@jitable
def lanes_on(m0, m1, lanes):
    """Number of selected lanes (vmask guarantees no bits beyond `lanes`)."""
    return _popcount(m0) + _popcount(m1)


@jitable
def _log2_pow2(x):
    """Bit index of a power of two x (uint64), from the exponent of float64(x)."""
    return (np.float64(x).view(np.int64) >> 52) - 1023


@jitable
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


@jitable
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


@jitable
def top_lane(m0, m1):
    """Highest selected lane, -1 if none."""
    return _hibit(m1) + 64 if m1 != 0 else _hibit(m0)


@jitable
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


@jitable
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


@jitable
def rep_index(r, j, pb, blk, rep):
    """Element index of lane j of repeat r (pb elements per 32 B block, strides in blocks)."""
    b = j // pb
    return r * rep * pb + b * blk * pb + (j - b * pb)


# ---- reach of the repeat forms: UB's capacity is the bound, as on the NPU ------------------------
# A repeat form (mask + repeat_times + strides) addresses UB directly: the NPU bounds it by UB's
# capacity only (past it: "ub address out of bounds", 507015); a LocalTensor's size is no
# hardware bound (pyasc's test_vadd_bits adds 128 float16 lanes over 64-element tiles). So an
# operand reached past its last element is a view of the core's UB from the tensor to the
# farthest element touched: reads see UB's contents as they are (a neighbouring buffer, or the
# NaN fill of checked mode), writes land there (and may clobber a neighbour, as on the NPU).
# Checked mode warns naming the api, the operand and how far it reached; past UB it is an error.


@jitable
def rep_far(repeat, m0, m1, pb, blk, rep):
    """Index of the farthest element the repeats touch (pb elements per 32 B block, strides in
    blocks), -1 when they touch none."""
    if repeat <= 0:
        return -1
    off = far_offset(m0, m1, pb, blk)
    if off < 0:
        return -1
    return (repeat - 1) * rep * pb + off


@jitable
def _ub_view(ctx, api, what, a, far):
    """The slow path of reach_to (far >= a.size): a view of UB from `a` through element far."""
    base = core.local_offset(ctx, a)
    st = ctx[STATE][0]
    end = st.level_base[core.UB] + st.level_size[core.UB]
    need = (far + 1) * a.itemsize
    if base < 0 or base + need > end:
        fault("{}: {} must stay inside UB, got index={} for a tensor at UB byte {} ({} bytes "
              "of UB)", api, what, far, base - st.level_base[core.UB], st.level_size[core.UB])
        raise KernelError(FAULT)
    if is_checked(ctx):
        fault("{}: {} is read/written past its {} elements (up to index={}, UB byte {}); "
              "allowed inside UB as on the NPU", api, what, a.size, far,
              base - st.level_base[core.UB] + need)
        warn_recorded()
    return retyped(ctx[MEM][base:base + need], a.dtype)


def reach_to(ctx, api, what, a, far):
    """`a` when element `far` lies inside it (or a is a scalar), else a view of UB from `a`
    through element far (an error past UB's end; a warning in checked mode). Inlined: the
    common case costs one comparison and the tensor never crosses a call."""
    raise NotImplementedError


@overload(reach_to, inline="always")
def _ov_reach_to(ctx, api, what, a, far):
    if not isinstance(a, types.Array):
        return lambda ctx, api, what, a, far: a

    def impl(ctx, api, what, a, far):
        if in_flight(ctx):
            vector_reads(ctx, api, what, a, far + 1)
        if far < a.size:
            return a
        return _ub_view(ctx, api, what, a, far)
    return impl


def ub_reach(ctx, api, what, a, repeat, m0, m1, pb, blk, rep):
    """The operand a repeat form reaches through (see reach_to): `a`, or, when the repeats reach
    past its last element, a view of the core's UB from `a` to the farthest element touched."""
    raise NotImplementedError


@overload(ub_reach, inline="always")
def _ov_ub_reach(ctx, api, what, a, repeat, m0, m1, pb, blk, rep):
    if not isinstance(a, types.Array):
        return lambda ctx, api, what, a, repeat, m0, m1, pb, blk, rep: a

    def impl(ctx, api, what, a, repeat, m0, m1, pb, blk, rep):
        return reach_to(ctx, api, what, a, rep_far(repeat, m0, m1, pb, blk, rep))
    return impl


@jitable
def spans_overlap(x, x_elems, y, y_elems):
    """Whether elements [0, x_elems) of x and [0, y_elems) of y share a byte (fast paths that
    read ahead of the lane walk's order use them only when the spans are apart)."""
    x0 = np.int64(x.ctypes.data)
    y0 = np.int64(y.ctypes.data)
    return x0 < y0 + y_elems * y.itemsize and y0 < x0 + x_elems * x.itemsize


@jitable
def pb_of(a):
    return 32 // a.itemsize


@jitable
def check_bin_params(api, p):
    """BinaryRepeatParams fields are uint8 in Ascend C."""
    check_range(api, "repeat_params.dst_blk_stride", p.dst_blk_stride, 0, 255)
    check_range(api, "repeat_params.src0_blk_stride", p.src0_blk_stride, 0, 255)
    check_range(api, "repeat_params.src1_blk_stride", p.src1_blk_stride, 0, 255)
    check_range(api, "repeat_params.dst_rep_stride", p.dst_rep_stride, 0, 255)
    check_range(api, "repeat_params.src0_rep_stride", p.src0_rep_stride, 0, 255)
    check_range(api, "repeat_params.src1_rep_stride", p.src1_rep_stride, 0, 255)


@jitable
def check_un_params(api, p):
    """UnaryRepeatParams: block strides uint16, repeat strides uint8."""
    check_range(api, "repeat_params.dst_blk_stride", p.dst_blk_stride, 0, 65535)
    check_range(api, "repeat_params.src_blk_stride", p.src_blk_stride, 0, 65535)
    check_range(api, "repeat_params.dst_rep_stride", p.dst_rep_stride, 0, 255)
    check_range(api, "repeat_params.src_rep_stride", p.src_rep_stride, 0, 255)


