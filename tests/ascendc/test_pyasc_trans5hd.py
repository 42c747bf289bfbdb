"""asc.trans_data_to_5hd (Ascend C TransDataTo5HD) with TransDataTo5HDParams, both forms (two
lists of 16 LocalTensors; two uint64 LocalTensors of 16 addresses in TQue(VECCALC) buffers), in
both modes (pyasc's generalization/basic/test_trans_5hd_*)."""
import numpy as np
import pytest

import ascendc as asc
import rt

from pyasc_helpers import copy_in, copy_out, gm_tensor

H = W = 16
C0 = 16


@asc.jit
def to_5hd_addr_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, groups: int,
                       repeat: int):
    """NCHW (N=1, C = 16 * groups) -> NC1HWC0 with address tensors; `repeat` < 16 converts
    only the first repeat * 16 positions of each channel (the rest of z stays as filled)."""
    total = groups * C0 * H * W
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    qd = asc.TQue(asc.TPosition.VECCALC, 1)
    qs = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=qx, num=1, len=total * 2)
    pipe.init_buffer(que=qz, num=1, len=total * 2)
    pipe.init_buffer(que=qd, num=1, len=16 * 8)
    pipe.init_buffer(que=qs, num=1, len=16 * 8)
    xl = copy_in(qx, xg, total, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.duplicate(zl, 0, total)
    params = asc.TransDataTo5HDParams(dst_high_half=False, src_high_half=False,
                                      repeat_times=repeat, dst_rep_stride=16, src_rep_stride=1)
    for j in range(groups):
        da = qd.alloc_tensor(asc.uint64)
        sa = qs.alloc_tensor(asc.uint64)
        for i in range(16):
            da.set_value(i, zl[j * C0 * H * W + W * i].get_phy_addr())
            sa.set_value(i, xl[j * C0 * H * W + H * W * i].get_phy_addr())
        asc.trans_data_to_5hd(da, sa, params)
        qd.free_tensor(da)
        qs.free_tensor(sa)
    qx.free_tensor(xl)
    copy_out(zg, qz, zl, total, z.dtype)


@asc.jit
def to_5hd_list_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, src_shift: int):
    """One group of 16 channels with tensor lists; `src_shift` moves the src views (for the
    bounds error)."""
    total = C0 * H * W
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=total * 2)
    pipe.init_buffer(que=qz, num=1, len=total * 2)
    xl = copy_in(qx, xg, total, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    params = asc.TransDataTo5HDParams(repeat_times=16, dst_rep_stride=16, src_rep_stride=1)
    d = [zl[W * 0], zl[W * 1], zl[W * 2], zl[W * 3], zl[W * 4], zl[W * 5], zl[W * 6],
         zl[W * 7], zl[W * 8], zl[W * 9], zl[W * 10], zl[W * 11], zl[W * 12], zl[W * 13],
         zl[W * 14], zl[W * 15]]
    s = [xl[src_shift + H * W * 0], xl[H * W * 1], xl[H * W * 2], xl[H * W * 3], xl[H * W * 4],
         xl[H * W * 5], xl[H * W * 6], xl[H * W * 7], xl[H * W * 8], xl[H * W * 9],
         xl[H * W * 10], xl[H * W * 11], xl[H * W * 12], xl[H * W * 13], xl[H * W * 14],
         xl[src_shift + H * W * 15]]
    asc.trans_data_to_5hd(d, s, params)
    qx.free_tensor(xl)
    copy_out(zg, qz, zl, total, z.dtype)


def _nc1hwc0(x_nchw, repeat=16):
    """numpy reference: [N, C1, H, W, C0], positions from repeat * 16 on left at 0."""
    n, c, h, w = x_nchw.shape
    out = x_nchw.reshape(n, c // C0, C0, h, w).transpose(0, 1, 3, 4, 2).copy()
    out.reshape(n, c // C0, h * w, C0)[:, :, repeat * 16:, :] = 0
    return out


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("dtype, groups, repeat", [
    (np.float16, 2, 16),
    (np.int16, 1, 16),
    (np.uint16, 3, 5),          # ragged: 5 of 16 repeats
])
def test_addr_form(mode, dtype, groups, repeat):
    x = np.random.default_rng(5).integers(0, 1000, (1, groups * C0, H, W)).astype(dtype)
    z = np.zeros(x.size, dtype)
    to_5hd_addr_kernel[1](x, z, groups, repeat, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, _nc1hwc0(x, repeat).ravel())


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_list_form(mode):
    x = np.random.default_rng(6).standard_normal((1, C0, H, W)).astype(np.float16)
    z = np.zeros(x.size, np.float16)
    to_5hd_list_kernel[1](x, z, 0, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, _nc1hwc0(x).ravel())


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_list_form_refuses_blocks_past_a_tensor(mode):
    # entry 15 starts 16 elements later: its 16th repeat would read past the input buffer
    x = np.zeros((1, C0, H, W), np.float16)
    with pytest.raises(rt.AclError, match=r"trans_data_to_5hd: entry 15 must hold every block "
                                          r"the repeats touch, got element 255 for a tensor "
                                          r"of 240 elements"):
        to_5hd_list_kernel[1](x, np.zeros(x.size, np.float16), 16,
                              interpret=(mode == "interpret"))


def test_refuses_a_repeat_count_beyond_uint8():
    x = np.zeros((1, C0, H, W), np.float16)
    with pytest.raises(rt.AclError, match=r"trans_data_to_5hd: params.repeat_times must be in "
                                          r"\[0, 255\], got params.repeat_times=256"):
        to_5hd_addr_kernel[1](x, np.zeros(x.size, np.float16), 1, 256, interpret=True)
