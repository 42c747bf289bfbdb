"""AIPP in kernels: `set_aipp_functions` (Ascend C SetAippFunctions) configures the core's AIPP
unit; `load_image_to_local` (LoadImageToLocal) moves an image GM -> L1 (A1/B1) through it. A
plain `data_copy` does not pass through AIPP (so a configured kernel that copies with data_copy
gets its input back unchanged, as pyasc's test_aipp expects).

set_aipp_functions(src0, [src1,] input_format, config) stores in the core's state (CORE_STATE
`aipp_src`, `aipp_cfg`; it persists, like the unit's registers, until the next call): the source
image (src0; src1 = the interleaved UV plane of YUV420SP), its AippInputFormat and the AippParams
(pyasc's structs, ascendc/lang/aipp_params.py). Checked there: the format, src1 for YUV420SP,
GM alignment (YUV420SP src0/src1 2 bytes, XRGB8888 src0 4 bytes), dtype U (int8 / float16), the
field ranges of their C types (uint8 means and biases, int16 matrix), and what is not emulated.

load_image_to_local(dst, LoadImageToLocalParams) for each pixel of the crop window
[vert_start_pos, +vert_size) x [horiz_start_pos, +horiz_size) of a source src_horiz_size pixels
wide, in the hardware's order:
1. read the pixel: RGB888 3 bytes, XRGB8888 4 bytes (the 4th channel is dropped; is_swap_ax
   first moves channel 0 (X) to the end, so XRGB -> RGB), YUV400 1 byte, YUV420SP Y from src0
   and the (U, V) pair of its 2x2 block from src1 (nearest upsampling);
2. swap: is_swap_rb swaps channels 0 and 2 (RGB888 / XRGB8888), is_swap_uv channels 1 and 2
   (YUV420SP);
3. CSC (is_enable_csc, 3-channel formats): v_r = clip(floor(sum_c m[r][c] * (x_c - bias_in_c)
   / 256) + bias_out_r, 0, 255) (the documented `>> 8`; rt/dvpp/aipp.py's formula);
4. DTC: (v_c - dtc_mean_c - dtc_min_c) * dtc_var_c in float32 (min and var rounded to float16 as
   the registers hold them); float16 out: rounded to nearest even; int8 out: rounded to nearest
   even (dtc_round_mode 0, the only mode emulated) and saturated to [-128, 127];
5. layout in dst (row-major pixels, each pixel's channels contiguous): the image surrounded by
   top/bot/left/right_pad_size pixels of padding (padding_mode 0: channel k < 4 of a padding
   pixel is padding_value_chk); each pixel padded to C0 channels (32 bytes: 32 int8 / 16 float16,
   c_padding_mode 0) or to 4 channels (c_padding_mode 1) with c_padding_value.
dst must be an L1 (A1/B1) tensor, 32-byte aligned, of dtype U, holding
(top + vert_size + bot) * (left + horiz_size + right) * channels elements. The write is an MTE2
GM -> L1 copy: deferred to the tensor's deque in checked mode, like data_copy's.

Not emulated ("not supported" errors naming the field): padding_mode 1-3 (row/column copy, block
and mirror padding), is_single_line_copy=True, dtc_round_mode != 0, CSC on YUV400. The ranges of
LoadImageToLocalParams are pyasc's: sizes in [2, 4095], starts in [0, 4095], pads in [0, 32];
horiz_start_pos even, and for YUV420SP vert_start_pos and src_horiz_size even.
"""
from __future__ import annotations

import ctypes

import numpy as np
from numba import carray, types
from numba.extending import overload

from ..core import C_MTE2, L1, prim
from ..dtypes import f16_bits_to_f32, f32_to_f16_bits
from ..errors import FAULT, fault, GMReadError, KernelError
from .. import trace
from .borrow import borrowed
from .memops import voidptr
from .movecore import dtype_name_of, locate, write_target
from .vecbase import check_range
from ..state import MEM, STATE

__all__ = ["set_aipp_functions", "set_aipp_functions_yuv", "load_image_to_local"]

_OP_LOAD = trace.op("load_image_to_local")

YUV420SP, XRGB8888, RGB888, YUV400 = 0, 1, 4, 9
_FMT_NAMES = ("YUV420SP_U8", "XRGB8888_U8", "", "", "RGB888_U8", "", "", "", "", "YUV400_U8")
_SP = "set_aipp_functions"
_LD = "load_image_to_local"

_CSC_NAMES = tuple([f"csc_params.csc_matrix_r{r}_c{c}" for r in range(3) for c in range(3)] +
                   [f"csc_params.csc_bias_{io}_{i}" for io in ("in", "out") for i in range(3)])

# layout of CORE_STATE.aipp_cfg (state.AIPP_WORDS words)
W_DTYPE = 0                       # 1: int8, 2: float16
W_PAD_MODE, W_PAD_VALUE = 1, 2    # padding_mode, padding_value_ch0..3 (2..5)
W_SWAP_RB, W_SWAP_UV, W_SWAP_AX = 6, 7, 8
W_DTC_MEAN, W_DTC_MIN, W_DTC_VAR = 10, 13, 16   # three channels each
W_CPAD_MODE, W_CPAD_VALUE = 20, 21
W_CSC = 22                        # is_enable_csc
W_CSC_M, W_CSC_BIN, W_CSC_BOUT = 23, 32, 35     # 3x3 matrix (row-major), biases in / out


# ---- dtype facts (compile-time constants in njit code) -----------------------------------------

def _code_of_name(name):
    return {"int8": 1, "float16": 2}.get(name, 0)


def _dtype_info(dt):
    """(code, name) of AippParams' dtype U: code 1 int8, 2 float16, 0 anything else."""
    name = dtype_name_of(np.dtype(getattr(dt, "storage", dt)))
    return _code_of_name(name), name


@overload(_dtype_info)
def _dtype_info_nb(dt):
    if not isinstance(dt, (types.DType, types.NumberClass)):
        return None
    name = dtype_name_of(dt.dtype)
    code = _code_of_name(name)
    return lambda dt: (code, name)


def _elem_info(a):
    """(code, name) of an array's element dtype (as _dtype_info)."""
    name = dtype_name_of(a.dtype)
    return _code_of_name(name), name


@overload(_elem_info)
def _elem_info_nb(a):
    name = dtype_name_of(a.dtype)
    code = _code_of_name(name)
    return lambda a: (code, name)


# ---- the source image: bytes at a GM address stored in the core's state -----------------------

def _gm_bytes(addr, n):
    """The n bytes at device address `addr` (inside a GM argument of the running launch)."""
    if n <= 0:
        return np.zeros(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * int(n)).from_address(int(addr)))


@overload(_gm_bytes)
def _gm_bytes_nb(addr, n):
    return lambda addr, n: carray(voidptr(addr), (n,), np.uint8)


# ---- set_aipp_functions ------------------------------------------------------------------------

@prim
def _unsupported(what, rule, v):
    fault("set_aipp_functions: {} must be {} (the others are not supported by ascend-emu), "
          "got {}={}", what, rule, what, v)
    raise KernelError(FAULT)


@prim
def _f16(v):
    """v as the float16 register holds it."""
    return np.float64(f16_bits_to_f32(f32_to_f16_bits(np.float32(v))))


@prim
def _store_params(st, code, pad, swap, single, dtc, cpad, csc):
    w = st.aipp_cfg
    w[:] = 0.0
    w[W_DTYPE] = code
    check_range(_SP, "padding_params.padding_mode", pad[0], 0, 3)
    if pad[0] != 0:
        _unsupported("padding_params.padding_mode", "0 (constant padding)", pad[0])
    w[W_PAD_MODE] = pad[0]
    w[W_PAD_VALUE] = pad[1]
    w[W_PAD_VALUE + 1] = pad[2]
    w[W_PAD_VALUE + 2] = pad[3]
    w[W_PAD_VALUE + 3] = pad[4]
    w[W_SWAP_RB] = 1.0 if swap[0] else 0.0
    w[W_SWAP_UV] = 1.0 if swap[1] else 0.0
    w[W_SWAP_AX] = 1.0 if swap[2] else 0.0
    if single[0]:
        _unsupported("single_line_params.is_single_line_copy", "False", 1)
    check_range(_SP, "dtc_params.dtc_mean_ch0", dtc[0], 0, 255)
    check_range(_SP, "dtc_params.dtc_mean_ch1", dtc[1], 0, 255)
    check_range(_SP, "dtc_params.dtc_mean_ch2", dtc[2], 0, 255)
    w[W_DTC_MEAN] = dtc[0]
    w[W_DTC_MEAN + 1] = dtc[1]
    w[W_DTC_MEAN + 2] = dtc[2]
    w[W_DTC_MIN] = _f16(dtc[3])
    w[W_DTC_MIN + 1] = _f16(dtc[4])
    w[W_DTC_MIN + 2] = _f16(dtc[5])
    w[W_DTC_VAR] = _f16(dtc[6])
    w[W_DTC_VAR + 1] = _f16(dtc[7])
    w[W_DTC_VAR + 2] = _f16(dtc[8])
    if dtc[9] != 0:
        _unsupported("dtc_params.dtc_round_mode", "0", dtc[9])
    check_range(_SP, "c_padding_params.c_padding_mode", cpad[0], 0, 1)
    w[W_CPAD_MODE] = cpad[0]
    w[W_CPAD_VALUE] = cpad[1]
    w[W_CSC] = 1.0 if csc[0] else 0.0
    _store_csc(w, csc)


@prim
def _store_csc(w, csc):
    m = (csc[1], csc[2], csc[3], csc[4], csc[5], csc[6], csc[7], csc[8], csc[9])
    for i in range(9):
        check_range(_SP, _CSC_NAMES[i], m[i], -32768, 32767)
        w[W_CSC_M + i] = m[i]
    b = (csc[10], csc[11], csc[12], csc[13], csc[14], csc[15])
    for i in range(6):
        check_range(_SP, _CSC_NAMES[9 + i], b[i], 0, 255)
        w[W_CSC_BIN + i] = b[i]


@prim
def _set(ctx, a0, n0, a1, n1, has_src1, fmt, config):
    st = ctx[STATE][0]
    if fmt != YUV420SP and fmt != XRGB8888 and fmt != RGB888 and fmt != YUV400:
        fault("set_aipp_functions: input_format must be YUV420SP_U8 (0), XRGB8888_U8 (1), "
              "RGB888_U8 (4) or YUV400_U8 (9), got input_format={}", fmt)
        raise KernelError(FAULT)
    if fmt == YUV420SP and not has_src1:
        fault("set_aipp_functions: src1 (the UV plane) must be given for YUV420SP_U8, got the "
              "form set_aipp_functions(src0, input_format, config)")
        raise KernelError(FAULT)
    align = 2 if fmt == YUV420SP else 4 if fmt == XRGB8888 else 1
    if a0 % align != 0 or (fmt == YUV420SP and a1 % align != 0):
        fault("set_aipp_functions: src0 and src1 of {} must be {}-byte aligned in GM, got "
              "src0 % {}={} src1 % {}={}", _FMT_NAMES[fmt], align, align, a0 % align, align,
              a1 % align if fmt == YUV420SP else 0)
        raise KernelError(FAULT)
    code, name = _dtype_info(config[0])
    if code == 0:
        fault("set_aipp_functions: config dtype must be asc.int8 or asc.float16, got dtype={}",
              name)
        raise KernelError(FAULT)
    csc = config[6]
    if fmt == YUV400 and csc[0]:
        fault("set_aipp_functions: csc_params.is_enable_csc must be False for YUV400_U8 (one "
              "channel; not supported), got is_enable_csc=True")
        raise KernelError(FAULT)
    _store_params(st, code, config[1], config[2], config[3], config[4], config[5], csc)
    st.aipp_src[0] = fmt + 1
    st.aipp_src[1] = a0
    st.aipp_src[2] = n0
    st.aipp_src[3] = a1 if fmt == YUV420SP else 0
    st.aipp_src[4] = n1 if fmt == YUV420SP else 0


@prim
def set_aipp_functions(ctx, src0, input_format, config):
    """Mirrors SetAippFunctions(src0, format, config): configure the core's AIPP unit for the
    image at GM tensor src0 (YUV400, RGB888, XRGB8888)."""
    _set(ctx, np.int64(src0.ctypes.data), np.int64(src0.size * src0.itemsize), np.int64(0),
         np.int64(0), False, np.int64(input_format), config)


@prim
def set_aipp_functions_yuv(ctx, src0, src1, input_format, config):
    """Mirrors SetAippFunctions(src0, src1, format, config): YUV420SP with its Y plane at src0
    and its interleaved UV plane at src1."""
    _set(ctx, np.int64(src0.ctypes.data), np.int64(src0.size * src0.itemsize),
         np.int64(src1.ctypes.data), np.int64(src1.size * src1.itemsize), True,
         np.int64(input_format), config)


# ---- load_image_to_local -----------------------------------------------------------------------

@prim
def _inside_gm(st, a, n):
    """Do bytes [a, a+n) lie inside one GM argument of the running launch?"""
    for k in range(st.ngm):
        b = st.gm_addr[k]
        if b <= a and a + n <= b + st.gm_bytes[k]:
            return True
    return False


@prim
def _gm_read_fail(which, need, have, r0, r1, width):
    fault("load_image_to_local: the image rows must lie inside {} ({} bytes), got {} bytes "
          "needed for rows [{}, {}) of {} pixels", which, have, need, r0, r1, width)
    raise GMReadError(FAULT)


@prim
def _put(t8, t16, isz, i, v):
    """Element i of the output (int8 or float16 bits) = v."""
    if isz == 2:
        t16[i] = f32_to_f16_bits(np.float32(v))
    else:
        r = np.rint(v)
        r = -128.0 if r < -128.0 else 127.0 if r > 127.0 else r
        t8[i] = np.uint8(np.int64(r) & 0xFF)


@prim
def _pixel(s0, s1, fmt, w, y, x, width):
    """The pixel's channels (up to 3, int64) after the swaps, and their number."""
    c0, c1, c2, nch = np.int64(0), np.int64(0), np.int64(0), 1
    if fmt == YUV400:
        c0 = np.int64(s0[y * width + x])
    elif fmt == YUV420SP:
        uv = (y // 2) * width + (x // 2) * 2
        c0, c1, c2, nch = np.int64(s0[y * width + x]), np.int64(s1[uv]), np.int64(s1[uv + 1]), 3
        if w[W_SWAP_UV] != 0:
            c1, c2 = c2, c1
    else:
        bpp = 3 if fmt == RGB888 else 4
        b = (y * width + x) * bpp
        first = 1 if fmt == XRGB8888 and w[W_SWAP_AX] != 0 else 0
        c0, c1, c2, nch = (np.int64(s0[b + first]), np.int64(s0[b + first + 1]),
                           np.int64(s0[b + first + 2]), 3)
        if w[W_SWAP_RB] != 0:
            c0, c2 = c2, c0
    return c0, c1, c2, nch


@prim
def _csc(w, c0, c1, c2):
    d0 = c0 - np.int64(w[W_CSC_BIN])
    d1 = c1 - np.int64(w[W_CSC_BIN + 1])
    d2 = c2 - np.int64(w[W_CSC_BIN + 2])
    out = np.zeros(3, np.int64)
    for r in range(3):
        m = W_CSC_M + 3 * r
        v = (np.int64(w[m]) * d0 + np.int64(w[m + 1]) * d1 + np.int64(w[m + 2]) * d2) // 256 \
            + np.int64(w[W_CSC_BOUT + r])
        out[r] = 0 if v < 0 else 255 if v > 255 else v
    return out[0], out[1], out[2]


@prim
def _dtc(w, k, v):
    return (np.float32(v) - np.float32(w[W_DTC_MEAN + k]) - np.float32(w[W_DTC_MIN + k])) \
        * np.float32(w[W_DTC_VAR + k])


@prim
def _check_params(fmt, hsz, vsz, hs, vs, width, top, bot, left, right):
    check_range(_LD, "horiz_size", hsz, 2, 4095)
    check_range(_LD, "vert_size", vsz, 2, 4095)
    check_range(_LD, "horiz_start_pos", hs, 0, 4095)
    check_range(_LD, "vert_start_pos", vs, 0, 4095)
    check_range(_LD, "src_horiz_size", width, 2, 4095)
    check_range(_LD, "top_pad_size", top, 0, 32)
    check_range(_LD, "bot_pad_size", bot, 0, 32)
    check_range(_LD, "left_pad_size", left, 0, 32)
    check_range(_LD, "right_pad_size", right, 0, 32)
    if hs % 2 != 0:
        fault("load_image_to_local: horiz_start_pos must be even, got horiz_start_pos={}", hs)
        raise KernelError(FAULT)
    if fmt == YUV420SP and (vs % 2 != 0 or width % 2 != 0):
        fault("load_image_to_local: vert_start_pos and src_horiz_size must be even for "
              "YUV420SP_U8, got vert_start_pos={} src_horiz_size={}", vs, width)
        raise KernelError(FAULT)
    if hs + hsz > width:
        fault("load_image_to_local: horiz_start_pos + horiz_size must be <= src_horiz_size "
              "({}), got horiz_start_pos + horiz_size={}", width, hs + hsz)
        raise KernelError(FAULT)


@prim
def _load(ctx, d, code, dname, hsz, vsz, hs, vs, width, top, bot, left, right):
    st = ctx[STATE][0]
    if st.aipp_src[0] == 0:
        fault("load_image_to_local: set_aipp_functions must configure the AIPP unit first, "
              "got no configuration on this core")
        raise KernelError(FAULT)
    fmt = st.aipp_src[0] - 1
    w = st.aipp_cfg
    if code == 0 or code != np.int64(w[W_DTYPE]):
        fault("load_image_to_local: dst dtype must be the AippParams dtype ({}), got dst={}",
              "int8" if w[W_DTYPE] == 1 else "float16", dname)
        raise KernelError(FAULT)
    mem = ctx[MEM]
    loc = locate(st, np.int64(mem.ctypes.data), mem.size, np.int64(d.ctypes.data), d.size)
    if loc[0] != L1:
        fault("load_image_to_local: dst must be an A1/B1 tensor (L1), got a tensor in {:level}",
              loc[0])
        raise KernelError(FAULT)
    if loc[1] % 32 != 0:
        fault("load_image_to_local: dst address in L1 must be 32-byte aligned, got byte "
              "offset={}", loc[1])
        raise KernelError(FAULT)
    _check_params(fmt, hsz, vsz, hs, vs, width, top, bot, left, right)
    isz = 2 if code == 2 else 1
    nchan = (32 // isz) if w[W_CPAD_MODE] == 0 else 4
    ho, wo = top + vsz + bot, left + hsz + right
    nbytes = ho * wo * nchan * isz
    if nbytes > d.size:
        fault("load_image_to_local: dst must hold (top_pad_size + vert_size + bot_pad_size) x "
              "(left_pad_size + horiz_size + right_pad_size) x {} channels = {} elements, got "
              "a tensor of {} elements in {:level}", nchan, nbytes // isz, d.size // isz, L1)
        raise KernelError(FAULT)
    a0, n0, a1, n1 = st.aipp_src[1], st.aipp_src[2], st.aipp_src[3], st.aipp_src[4]
    bpp = 3 if fmt == RGB888 else 4 if fmt == XRGB8888 else 1
    need0 = ((vs + vsz - 1) * width + hs + hsz) * bpp
    if need0 > n0:
        _gm_read_fail("src0", need0, n0, vs, vs + vsz, width)
    need1 = 0
    if fmt == YUV420SP:
        need1 = ((vs + vsz - 1) // 2) * width + hs + hsz
        if need1 > n1:
            _gm_read_fail("src1 (UV plane)", need1, n1, vs // 2, (vs + vsz + 1) // 2, width)
    if not _inside_gm(st, a0, n0) or (fmt == YUV420SP and not _inside_gm(st, a1, n1)):
        fault("load_image_to_local: the AIPP source image must be a GM argument of this "
              "launch (call set_aipp_functions in the kernel), got an address outside them")
        raise KernelError(FAULT)
    s0 = _gm_bytes(a0, need0)
    s1 = _gm_bytes(a1, need1)
    t8 = write_target(ctx, d, nbytes, True)
    t16 = t8.view(np.uint16)
    csc = w[W_CSC] != 0
    cpv = w[W_CPAD_VALUE]
    for ro in range(ho):
        for co in range(wo):
            base = (ro * wo + co) * nchan
            if ro < top or ro >= top + vsz or co < left or co >= left + hsz:
                for k in range(nchan):
                    _put(t8, t16, isz, base + k, w[W_PAD_VALUE + k] if k < 4 else cpv)
                continue
            c0, c1, c2, nch = _pixel(s0, s1, fmt, w, vs + ro - top, hs + co - left, width)
            if csc:
                c0, c1, c2 = _csc(w, c0, c1, c2)
            _put(t8, t16, isz, base, _dtc(w, 0, c0))
            if nch == 3:
                _put(t8, t16, isz, base + 1, _dtc(w, 1, c1))
                _put(t8, t16, isz, base + 2, _dtc(w, 2, c2))
            for k in range(nch, nchan):
                _put(t8, t16, isz, base + k, cpv)
    st.counters[C_MTE2] += vsz * hsz * bpp + (vsz * hsz // 2 if fmt == YUV420SP else 0)
    if trace.on(ctx):
        trace.copy(ctx, _OP_LOAD, -1, L1, nbytes, isz, a0, need0)
        # the sanitizer's records (FLAG_SANITIZE): the L1 bytes written, the image bytes read
        trace.access(ctx, _OP_LOAD, np.int64(d.ctypes.data), nbytes, 1)
        trace.access(ctx, _OP_LOAD, a0, need0, 0)
        trace.access(ctx, _OP_LOAD, a1, need1, 0)


@prim
def load_image_to_local(ctx, dst, load_data_params):
    """Mirrors LoadImageToLocal(dst, loadDataParams): the configured image's crop window GM ->
    L1 through the AIPP unit (see the module docstring for each step)."""
    p = load_data_params
    code, dname = _elem_info(dst)
    _load(borrowed(ctx), borrowed(dst).view(np.uint8), code, dname, np.int64(p[0]),
          np.int64(p[1]), np.int64(p[2]), np.int64(p[3]), np.int64(p[4]), np.int64(p[5]),
          np.int64(p[6]), np.int64(p[7]), np.int64(p[8]))
