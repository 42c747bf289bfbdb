"""AIPP in kernels (brief E; pyasc's generalization/basic/test_aipp.py): set_aipp_functions
configures the core's AIPP unit and a plain data_copy still copies bit for bit; load_image_to_local
(GM -> L1 through AIPP) against a numpy reference built on rt.dvpp.aipp (crop, swaps, CSC, DTC)
plus the L1 layout (padding, C0 channel padding), in both modes; the refusals by message."""
import numpy as np
import pytest

import ascendc as asc
import rt
from rt.dvpp.aipp import apply as aipp_apply

# the parameter vector a launch reads (float32 GM): one compiled kernel serves every case
(P_FMT, P_HSZ, P_VSZ, P_HS, P_VS, P_W, P_TOP, P_BOT, P_LEFT, P_RIGHT, P_RB, P_UV, P_AX,
 P_SINGLE) = range(14)
P_MEAN, P_MIN, P_VAR, P_ROUND, P_CPAD_MODE, P_CPAD_VALUE, P_PAD_MODE, P_PADV = \
    14, 17, 20, 23, 24, 25, 26, 27
P_CSC, P_M, P_BIN, P_BOUT, P_UB, P_NO_DEQUE = 31, 32, 41, 44, 47, 48
NP = 49
OUT_MAX = 2048          # elements of the L1 / UB buffer


@asc.jit
def aipp_kernel(img: asc.GlobalAddress, uv: asc.GlobalAddress, prm: asc.GlobalAddress,
                z: asc.GlobalAddress, n: int, yuv: asc.ConstExpr[int]):
    """Configure AIPP from the parameter vector, load the image into an A1 tensor (a VECIN one
    when prm[P_UB] != 0), and copy its first n elements to z element by element."""
    ig = asc.GlobalTensor()
    ig.set_global_buffer(img)
    ug = asc.GlobalTensor()
    ug.set_global_buffer(uv)
    pg = asc.GlobalTensor()
    pg.set_global_buffer(prm)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q1 = asc.TQue(asc.TPosition.A1, 1)
    qu = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(que=q1, num=1, len=OUT_MAX * z.dtype.sizeof())
    pipe.init_buffer(que=qu, num=1, len=OUT_MAX * z.dtype.sizeof())
    cfg = asc.AippParams(
        dtype=z.dtype,
        padding_params=asc.AippPaddingParams(
            pg.get_value(26), pg.get_value(27), pg.get_value(28), pg.get_value(29),
            pg.get_value(30)),
        swap_params=asc.AippSwapParams(is_swap_rb=pg.get_value(10) != 0,
                                       is_swap_uv=pg.get_value(11) != 0,
                                       is_swap_ax=pg.get_value(12) != 0),
        single_line_params=asc.AippSingleLineParams(pg.get_value(13) != 0),
        dtc_params=asc.AippDataTypeConvParams(
            pg.get_value(14), pg.get_value(15), pg.get_value(16), pg.get_value(17),
            pg.get_value(18), pg.get_value(19), pg.get_value(20), pg.get_value(21),
            pg.get_value(22), pg.get_value(23)),
        c_padding_params=asc.AippChannelPaddingParams(c_padding_mode=pg.get_value(24),
                                                      c_padding_value=pg.get_value(25)),
        csc_params=asc.AippColorSpaceConvParams(
            pg.get_value(31) != 0, pg.get_value(32), pg.get_value(33), pg.get_value(34),
            pg.get_value(35), pg.get_value(36), pg.get_value(37), pg.get_value(38),
            pg.get_value(39), pg.get_value(40), pg.get_value(41), pg.get_value(42),
            pg.get_value(43), pg.get_value(44), pg.get_value(45), pg.get_value(46)))
    fmt = pg.get_value(0)
    if yuv:
        asc.set_aipp_functions(ig, ug, fmt, cfg)
    else:
        asc.set_aipp_functions(ig, fmt, cfg)
    params = asc.LoadImageToLocalParams(
        horiz_size=pg.get_value(1), vert_size=pg.get_value(2), horiz_start_pos=pg.get_value(3),
        vert_start_pos=pg.get_value(4), src_horiz_size=pg.get_value(5),
        top_pad_size=pg.get_value(6), bot_pad_size=pg.get_value(7),
        left_pad_size=pg.get_value(8), right_pad_size=pg.get_value(9))
    if pg.get_value(47) != 0:
        t = qu.alloc_tensor(z.dtype)
        asc.load_image_to_local(t, params)
        qu.free_tensor(t)
    else:
        t = q1.alloc_tensor(z.dtype)
        asc.load_image_to_local(t, params)
        if pg.get_value(48) == 0:          # prm[P_NO_DEQUE]: read it without the hand-off
            q1.enque(t)
            t = q1.deque(z.dtype)          # orders MTE2 before MTE1; the scalar reads need:
            asc.set_flag(asc.HardEvent.MTE2_S, 0)
            asc.wait_flag(asc.HardEvent.MTE2_S, 0)
        for i in range(n):
            zg.set_value(i, t.get_value(i))
        q1.free_tensor(t)


@asc.jit
def copy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """pyasc's test_aipp: configure AIPP, then a plain GM -> UB -> GM data_copy."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(que=q, num=1, len=n * x.dtype.sizeof())
    cfg = asc.AippParams(dtype=asc.int8, swap_params=asc.AippSwapParams(is_swap_rb=True))
    asc.set_aipp_functions(xg, asc.AippInputFormat.RGB888_U8, cfg)
    t = q.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, count=n)
    q.enque(t)
    t = q.deque(x.dtype)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)      # a VECIN deque orders V only
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, t, count=n)
    q.free_tensor(t)


def params(fmt, crop=(2, 2, 6, 4), width=10, pads=(1, 0, 2, 1), rb=0, uv=0, ax=0,
           mean=(10, 20, 30), mn=(0.25, 0.5, 0.0), var=(0.5, 0.25, 1.0), cpad=(0, -3),
           padv=(7, 8, 9, 11), csc=None, **over):
    p = np.zeros(NP, np.float32)
    hs, vs, hsz, vsz = crop
    p[[P_FMT, P_HSZ, P_VSZ, P_HS, P_VS, P_W]] = [fmt, hsz, vsz, hs, vs, width]
    p[[P_TOP, P_BOT, P_LEFT, P_RIGHT]] = pads
    p[[P_RB, P_UV, P_AX]] = [rb, uv, ax]
    p[P_MEAN:P_MEAN + 3], p[P_MIN:P_MIN + 3], p[P_VAR:P_VAR + 3] = mean, mn, var
    p[[P_CPAD_MODE, P_CPAD_VALUE]] = cpad
    p[P_PADV:P_PADV + 4] = padv
    if csc is not None:
        m, bi, bo = csc
        p[P_CSC] = 1
        p[P_M:P_M + 9] = np.ravel(m)
        p[P_BIN:P_BIN + 3], p[P_BOUT:P_BOUT + 3] = bi, bo
    for k, v in over.items():
        p[globals()[k]] = v
    return p


def reference(fmt_name, image, p, dtype, rows):
    """The expected L1 contents (ho, wo, C) for parameter vector p (rt.dvpp.aipp does the crop,
    swap, CSC and DTC arithmetic; the layout is the kernel AIPP's)."""
    hsz, vsz, hs, vs, w = (int(p[k]) for k in (P_HSZ, P_VSZ, P_HS, P_VS, P_W))
    top, bot, left, right = (int(p[k]) for k in (P_TOP, P_BOT, P_LEFT, P_RIGHT))
    if fmt_name == "XRGB8888_U8":           # drop the 4th channel (after the AX swap)
        px = image.reshape(rows, w, 4)
        image = px[..., 1:] if p[P_AX] else px[..., :3]
        fmt_name = "RGB888_U8"
    nch = 1 if fmt_name == "YUV400_U8" else 3
    m = p[P_M:P_M + 9].reshape(3, 3).astype(int).tolist()
    attrs = dict(input_format=fmt_name, src_w=w, src_h=rows, crop_x=hs, crop_y=vs, crop_w=hsz,
                 crop_h=vsz, csc=bool(p[P_CSC]), matrix=m,
                 input_bias=p[P_BIN:P_BIN + 3].astype(int).tolist(),
                 output_bias=p[P_BOUT:P_BOUT + 3].astype(int).tolist(),
                 rbuv_swap=bool(p[P_UV] if fmt_name == "YUV420SP_U8" else p[P_RB]),
                 sub=[float(p[P_MEAN + k]) + float(p[P_MIN + k]) for k in range(3)],
                 var_reci=[float(p[P_VAR + k]) for k in range(3)], channels=nch,
                 dtype=np.float32)
    img = aipp_apply(attrs, np.ascontiguousarray(image).reshape(-1))[0]    # (C, vsz, hsz)
    c0 = 4 if p[P_CPAD_MODE] else 32 // np.dtype(dtype).itemsize
    out = np.empty((top + vsz + bot, left + hsz + right, c0), np.float32)
    out[...] = p[P_CPAD_VALUE]
    out[:, :, :4] = p[P_PADV:P_PADV + 4]
    out[top:top + vsz, left:left + hsz, :] = p[P_CPAD_VALUE]
    out[top:top + vsz, left:left + hsz, :nch] = img.transpose(1, 2, 0)
    if dtype == np.int8:
        return np.clip(np.rint(out), -128, 127).astype(np.int8)
    return out.astype(np.float16)


def run(mode, fmt_name, image, p, dtype, uv=None):
    ho = int(p[P_TOP] + p[P_VSZ] + p[P_BOT])
    wo = int(p[P_LEFT] + p[P_HSZ] + p[P_RIGHT])
    c0 = 4 if p[P_CPAD_MODE] else 32 // np.dtype(dtype).itemsize
    z = np.zeros(OUT_MAX, dtype)
    yuv = uv is not None
    uv = np.zeros(64, np.uint8) if uv is None else uv
    aipp_kernel[1](image, uv, p, z, min(ho * wo * c0, OUT_MAX), int(yuv),
                   interpret=mode == "interpret")
    return z[:ho * wo * c0].reshape(ho, wo, c0)


RNG = np.random.default_rng(7)
ROWS = 8
RGB = RNG.integers(0, 256, (ROWS, 10, 3), dtype=np.uint8)
XRGB = RNG.integers(0, 256, (ROWS, 10, 4), dtype=np.uint8)
GRAY = RNG.integers(0, 256, (ROWS, 10), dtype=np.uint8)
Y = RNG.integers(0, 256, (ROWS, 10), dtype=np.uint8)
UVP = RNG.integers(0, 256, (ROWS // 2, 10), dtype=np.uint8)
YUV2RGB = ([[256, 0, 359], [256, -88, -183], [256, 454, 0]], [0, 128, 128], [0, 0, 0])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.float16])
def test_configured_data_copy_is_a_plain_copy(mode, dtype):
    x = (RNG.integers(0, 127, (16, 16, 3)).astype(dtype) if dtype != np.float16
         else RNG.standard_normal((16, 16, 3)).astype(np.float16))
    z = np.zeros_like(x)
    copy_kernel[1](x, z, x.size, interpret=mode == "interpret")
    np.testing.assert_array_equal(z, x)


@pytest.mark.parametrize("dtype", [np.int8, np.float16])
@pytest.mark.parametrize("case", ["rgb", "rgb_rb_cpad4", "xrgb_ax", "gray", "rgb_csc"])
def test_load_image_to_local_matches_reference(mode, dtype, case):
    if case == "rgb":
        fmt, img, p = "RGB888_U8", RGB, params(4)
    elif case == "rgb_rb_cpad4":
        fmt, img, p = "RGB888_U8", RGB, params(4, rb=1, cpad=(1, 5), crop=(0, 0, 10, 8),
                                               pads=(0, 2, 0, 0))
    elif case == "xrgb_ax":
        fmt, img, p = "XRGB8888_U8", XRGB, params(1, ax=1, rb=1, crop=(4, 3, 4, 5))
    elif case == "gray":
        fmt, img, p = "YUV400_U8", GRAY, params(9, crop=(2, 1, 8, 7), pads=(0, 0, 0, 0))
    else:
        fmt, img, p = "RGB888_U8", RGB, params(4, csc=([[77, 150, 29], [-43, -85, 128],
                                                        [128, -107, -21]], [0, 0, 0],
                                                       [0, 128, 128]))
    got = run(mode, fmt, img, p, dtype)
    np.testing.assert_array_equal(got, reference(fmt, img, p, dtype, ROWS))


@pytest.mark.parametrize("swap", [0, 1])
def test_yuv420sp_with_csc_and_uv_swap(mode, swap):
    p = params(0, uv=swap, csc=YUV2RGB, mean=(0, 0, 0), mn=(0, 0, 0), var=(1, 1, 1),
               crop=(2, 2, 6, 4))
    got = run(mode, "YUV420SP_U8", Y, p, np.float16, uv=UVP)
    image = np.concatenate([Y, UVP]).reshape(-1)
    np.testing.assert_array_equal(got, reference("YUV420SP_U8", image, p, np.float16, ROWS))


def _fails(mode, match, p, dtype=np.int8, image=RGB, uv=None, error=rt.AclError):
    with pytest.raises(error, match=match):
        run(mode, "RGB888_U8", image, p, dtype, uv=uv)


@pytest.mark.parametrize("over, match", [
    (dict(P_PAD_MODE=1), r"set_aipp_functions: padding_params.padding_mode must be 0 \(constant "
                         r"padding\) \(the others are not supported by ascend-emu\), got "
                         r"padding_params.padding_mode=1"),
    (dict(P_SINGLE=1), r"set_aipp_functions: single_line_params.is_single_line_copy must be "
                       r"False .*not supported.*, got single_line_params.is_single_line_copy=1"),
    (dict(P_ROUND=1), r"set_aipp_functions: dtc_params.dtc_round_mode must be 0 .*not "
                      r"supported.*got dtc_params.dtc_round_mode=1"),
    (dict(P_MEAN=300), r"set_aipp_functions: dtc_params.dtc_mean_ch0 must be in \[0, 255\], "
                       r"got dtc_params.dtc_mean_ch0=300"),
    (dict(P_BOUT=256), r"set_aipp_functions: csc_params.csc_bias_out_0 must be in \[0, 255\], "
                       r"got csc_params.csc_bias_out_0=256"),
    (dict(P_M=40000), r"set_aipp_functions: csc_params.csc_matrix_r0_c0 must be in "
                      r"\[-32768, 32767\], got csc_params.csc_matrix_r0_c0=40000"),
    (dict(P_CPAD_MODE=2), r"set_aipp_functions: c_padding_params.c_padding_mode must be in "
                          r"\[0, 1\], got c_padding_params.c_padding_mode=2"),
    (dict(P_FMT=3), r"set_aipp_functions: input_format must be YUV420SP_U8 \(0\), "
                    r"XRGB8888_U8 \(1\), RGB888_U8 \(4\) or YUV400_U8 \(9\), got input_format=3"),
    (dict(P_FMT=0), r"set_aipp_functions: src1 \(the UV plane\) must be given for YUV420SP_U8"),
    (dict(P_UB=1), r"load_image_to_local: dst must be an A1/B1 tensor \(L1\), got a tensor in "
                   r"UB"),
    (dict(P_HS=3), r"load_image_to_local: horiz_start_pos must be even, got horiz_start_pos=3"),
    (dict(P_HS=6), r"load_image_to_local: horiz_start_pos \+ horiz_size must be <= "
                   r"src_horiz_size \(10\), got horiz_start_pos \+ horiz_size=12"),
    (dict(P_TOP=33), r"load_image_to_local: top_pad_size must be in \[0, 32\], got "
                     r"top_pad_size=33"),
    (dict(P_VSZ=1), r"load_image_to_local: vert_size must be in \[2, 4095\], got vert_size=1"),
    (dict(P_HSZ=10, P_HS=0, P_LEFT=30, P_RIGHT=30),
     r"load_image_to_local: dst must hold .* x 32 channels = 11200 elements, got a tensor of "
     r"2048 elements in L1"),
])
def test_refusals_by_message(mode, over, match):
    _fails(mode, match, params(4, **over))


def test_image_rows_beyond_src0_are_a_gm_read_error(mode):
    """src0's size is its GM tensor's (the allocation, which the runtime may round up)."""
    image = RNG.integers(0, 256, (8, 12, 3), dtype=np.uint8)
    p = params(4, crop=(0, 6, 12, 4), width=12, pads=(0, 0, 0, 0))   # rows [6, 10) of 8
    with pytest.raises(rt.AclError, match=r"load_image_to_local: the image rows must lie inside "
                                          r"src0 \((28[89]|29\d|3[0-5]\d) bytes\), got 360 "
                                          r"bytes needed for rows \[6, 10\) of 12 pixels") as e:
        run(mode, "RGB888_U8", image, p, np.int8)
    assert e.value.code == 507042        # ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW


def test_npu_view_shows_an_mte2_copy_gm_to_l1(mode):
    with rt.profile(npu=True) as prof:
        run(mode, "RGB888_U8", RGB, params(4), np.int8)
    loads = [r[0] for r in prof.npu_runs()[0].timeline.records
             if r[0].name == "load_image_to_local"]
    assert [(i.pipe, i.path, i.bytes) for i in loads] == [("MTE2", "GM->L1", 5 * 9 * 32)]


def test_the_load_is_visible_only_after_deque_in_checked_mode(mode):
    """An MTE2 write: read by the scalar unit with no wait ordering it, it is reported (the NPU
    reads the stale L1 bytes)."""
    with pytest.raises(rt.AclError, match=r"get_value: the element must be ordered after the "
                       r"MTE2 copy that wrote it, .* got a read by S of L1 bytes \[0, 1\) that "
                       r"no wait has landed yet"):
        run(mode, "RGB888_U8", RGB, params(4, P_NO_DEQUE=1), np.int8)
    got = run(mode, "RGB888_U8", RGB, params(4), np.int8)
    assert (got != -1).any()
