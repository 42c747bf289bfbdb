"""asc.load_data with LoadData3DParamsV2 (Ascend C Load3D: img2col from an L1 NC1HWC0 feature
map into L0A or L0B) in both modes, checked through the cube: the loaded block times a known
matrix (mmad, fixpipe) against numpy's img2col of the same block, on ragged and aligned
geometries, plus the checked-mode errors."""
import numpy as np
import pytest

import ascendc as asc
import rt


@asc.jit
def l3d_kernel(fm: asc.GlobalAddress, other: asc.GlobalAddress, c: asc.GlobalAddress,
               n_fm: int, n_other: int, pl: int, pr: int, pt: int, pb: int, l1_h: int,
               l1_w: int, ch: int, kext: int, mext: int, k0: int, m0: int, sw: int, sh: int,
               fw: int, fh: int, dw: int, dh: int, pad_value: float, n: int, to_b: int,
               en_transpose: bool):
    """to_b == 0: A = the Load3D block (L0A, mext x kext), B = other (ZN, kext x n) -> C is
    mext x n. to_b == 1: A = other (ZZ, n x kext), B = the Load3D block (L0B, kext x mext) ->
    C is n x mext."""
    fg = asc.GlobalTensor()
    fg.set_global_buffer(fm)
    og = asc.GlobalTensor()
    og.set_global_buffer(other)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c)
    isz = fm.dtype.sizeof()
    c0 = 32 // isz
    n16 = (n + 15) // 16 * 16
    pipe = asc.TPipe()
    qa1 = asc.TQue(asc.TPosition.A1, 1)
    qb1 = asc.TQue(asc.TPosition.B1, 1)
    qa2 = asc.TQue(asc.TPosition.A2, 1)
    qb2 = asc.TQue(asc.TPosition.B2, 1)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    pipe.init_buffer(qa1, 1, max(n_fm, n_other) * isz)
    pipe.init_buffer(qb1, 1, max(n_fm, n_other) * isz)
    pipe.init_buffer(qa2, 1, max(mext, n16) * kext * isz)
    pipe.init_buffer(qb2, 1, max(mext, n16) * kext * isz)
    pipe.init_buffer(qc, 1, mext * n16 * 4)
    a1 = qa1.alloc_tensor(fm.dtype)
    b1 = qb1.alloc_tensor(fm.dtype)
    if to_b == 0:
        asc.data_copy(a1, fg, n_fm)
        asc.data_copy(b1, og, n_other)
    else:
        asc.data_copy(a1, og, n_other)
        asc.data_copy(b1, fg, n_fm)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    p3 = asc.LoadData3DParamsV2((pl, pr, pt, pb), l1_h, l1_w, ch, kext, mext, k0, m0, sw, sh,
                                fw, fh, dw, dh, en_transpose, pad_value, False, False, False)
    frac = n16 * kext // (16 * c0)
    p2 = asc.LoadData2DParams(start_index=0, repeat_times=frac, src_stride=1)
    a2 = qa2.alloc_tensor(fm.dtype)
    b2 = qb2.alloc_tensor(fm.dtype)
    if to_b == 0:
        asc.load_data(a2, a1, p3)
        asc.load_data(b2, b1, p2)
    else:
        asc.load_data(a2, a1, p2)
        asc.load_data(b2, b1, p3)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    cl = qc.alloc_tensor(asc.float32)
    if to_b == 0:
        asc.mmad(cl, a2, b2, asc.MmadParams(m=mext, n=n, k=kext))
    else:
        asc.mmad(cl, a2, b2, asc.MmadParams(m=n, n=mext, k=kext))
    qc.enque(cl)
    cl = qc.deque(asc.float32)
    if to_b == 0:
        asc.fixpipe(cg, cl, asc.FixpipeParamsV220(n, mext, mext, n))
    else:
        asc.fixpipe(cg, cl, asc.FixpipeParamsV220(mext, n, n16, mext))
    qc.free_tensor(cl)
    qa1.free_tensor(a1)
    qb1.free_tensor(b1)
    qa2.free_tensor(a2)
    qb2.free_tensor(b2)


def _nc1hwc0(x, c0):
    """NCHW image (C x H x W) -> C1 x H x W x C0 (C a multiple of c0), flattened."""
    c, h, w = x.shape
    return x.reshape(c // c0, c0, h, w).transpose(0, 2, 3, 1).ravel()


def _img2col(x, c0, pads, stride, filt, dil, pad_value):
    """The documented Load3D matrix, M x K, K ordered (c1, kh, kw, c0), written with numpy
    slicing (independently of the primitive's index arithmetic)."""
    c, h, w = x.shape
    left, right, top, bottom = pads
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=pad_value)
    (sh, sw), (fh, fw), (dh, dw) = stride, filt, dil
    ho = (h + top + bottom - dh * (fh - 1) - 1) // sh + 1
    wo = (w + left + right - dw * (fw - 1) - 1) // sw + 1
    cols = []
    for c1 in range(c // c0):
        for kh in range(fh):
            for kw in range(fw):
                win = xp[c1 * c0:(c1 + 1) * c0, kh * dh:kh * dh + sh * (ho - 1) + 1:sh,
                         kw * dw:kw * dw + sw * (wo - 1) + 1:sw]
                cols.append(win.reshape(c0, ho * wo).T)           # M x C0
    return np.concatenate(cols, axis=1), ho * wo


def _zn(b, c0):
    """B (k x n, k a multiple of c0) in L0B's ZN layout with n padded to 16."""
    k, n = b.shape
    n16 = -(-n // 16) * 16
    bp = np.zeros((k, n16), b.dtype)
    bp[:, :n] = b
    return bp.reshape(k // c0, c0, n16 // 16, 16).transpose(0, 2, 3, 1).ravel()


def _zz(a, c0):
    """A (m x k, k a multiple of c0) in L0A's ZZ layout with m padded to 16."""
    m, k = a.shape
    m16 = -(-m // 16) * 16
    ap = np.zeros((m16, k), a.dtype)
    ap[:m] = a
    return ap.reshape(m16 // 16, 16, k // c0, c0).transpose(0, 2, 1, 3).ravel()


CASES = [
    # (C, H, W, pads l r t b, stride (h, w), filter (h, w), dilation, k0, kext, m0, mext)
    (16, 6, 7, (1, 1, 1, 1), (1, 1), (3, 3), (1, 1), 0, 144, 0, 48),    # 3x3/1 pad 1, ragged
    (8, 9, 8, (3, 2, 3, 0), (2, 2), (3, 3), (1, 1), 16, 40, 0, 16),     # 3x3/2, partial K
    (16, 11, 10, (0, 1, 2, 1), (2, 1), (2, 3), (2, 2), 8, 80, 16, 32),  # dilation, m0 > 0
    (8, 4, 4, (0, 0, 0, 0), (1, 1), (1, 1), (1, 1), 0, 8, 0, 16),       # 1x1: a transpose
]


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("to_b", [0, 1])
@pytest.mark.parametrize("case", CASES)
def test_load3d_block_through_the_cube(mode, to_b, case):
    c, h, w, pads, stride, filt, dil, k0, kext, m0, mext = case
    rng = np.random.default_rng(c + h + w + k0)
    x = rng.standard_normal((c, h, w)).astype(np.float32)
    pad_value = 0.0 if to_b else 1.5
    n = 20                                  # ragged: not a multiple of 16
    other = rng.standard_normal((kext, n) if to_b == 0 else (n, kext)).astype(np.float32)
    fm = _nc1hwc0(x, 8)
    o = _zn(other, 8) if to_b == 0 else _zz(other, 8)
    col, m_valid = _img2col(x, 8, pads, stride, filt, dil, pad_value)
    block = col[m0:m0 + mext, k0:k0 + kext]
    rows = min(mext, m_valid - m0)          # rows past M are not compared (not documented)
    out = np.zeros(mext * n, np.float32)
    l3d_kernel[1](fm, o, out, fm.size, o.size, *pads, h, w, c, kext, mext, k0, m0,
                  stride[1], stride[0], filt[1], filt[0], dil[1], dil[0], pad_value, n, to_b,
                  False, interpret=(mode == "interpret"))
    if to_b == 0:
        got = out.reshape(mext, n)[:rows]
        want = block[:rows].astype(np.float64) @ other.astype(np.float64)
    else:
        got = out.reshape(n, mext)[:, :rows]
        want = other.astype(np.float64) @ block[:rows].T.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def _run(**kw):
    a = dict(pl=0, pr=0, pt=0, pb=0, l1_h=4, l1_w=4, ch=8, kext=8, mext=16, k0=0, m0=0, sw=1,
             sh=1, fw=1, fh=1, dw=1, dh=1, pad_value=0.0, n=16, to_b=0, en_transpose=False)
    a.update(kw)
    fm = np.zeros(8 * 4 * 4, np.float32)
    o = np.zeros(8 * 16, np.float32)
    l3d_kernel[1](fm, o, np.zeros(16 * 16, np.float32), fm.size, o.size, *a.values(),
                  interpret=True)


@pytest.mark.parametrize("kw, message", [
    (dict(mext=8), r"load_data: LoadData3DParamsV2.m_extension must be a multiple of 16, "
                   r"got 8"),
    (dict(ch=4), r"load_data: LoadData3DParamsV2.channel_size must be a multiple of C0=8, "
                 r"got channel_size=4"),
    (dict(k0=8), r"load_data: LoadData3DParamsV2.k_start_pt \+ k_extension must be <= K = "
                 r"C1\*filter_h\*filter_w\*C0 = 8, got 16"),
    (dict(sw=64), r"load_data: LoadData3DParamsV2.stride_w must be in \[1, 63\], "
                  r"got LoadData3DParamsV2.stride_w=64"),
    (dict(l1_h=5), r"load_data: src must hold 640 bytes for LoadData3DParamsV2, got 512 bytes"),
    (dict(en_transpose=True), r"load_data: LoadData3DParamsV2.en_transpose must be False "
                              r"\(not emulated\), got True"),
])
def test_errors(kw, message):
    with pytest.raises(rt.AclError, match=message):
        _run(**kw)


def test_npu_view_runs_it_on_mte1():
    """The NPU view records the Load3D as an L1 -> L0A move on MTE1 of the block's bytes."""
    c, h, w = 16, 6, 7
    x = np.random.default_rng(0).standard_normal((c, h, w)).astype(np.float32)
    fm = _nc1hwc0(x, 8)
    other = np.zeros((144, 20), np.float32)
    o = _zn(other, 8)
    out = np.zeros(48 * 20, np.float32)
    tl = asc.npu_trace(l3d_kernel, 1, fm, o, out, fm.size, o.size, 1, 1, 1, 1, h, w, c, 144, 48,
                       0, 0, 1, 1, 3, 3, 1, 1, 0.0, 20, 0, False)
    moves = {(i.path, p, i.bytes) for i, _, p, _, _ in tl.records if i.name == "load_data"}
    assert ("L1->L0A", "MTE1", 48 * 144 * 4) in moves          # the Load3D block
    assert ("L1->L0B", "MTE1", 144 * 32 * 4) in moves          # the 2-D load of B


@asc.jit
def l3d_unordered_kernel(fm: asc.GlobalAddress, n_fm: int, ordered: int):
    fg = asc.GlobalTensor()
    fg.set_global_buffer(fm)
    pipe = asc.TPipe()
    qa1 = asc.TQue(asc.TPosition.A1, 1)
    qa2 = asc.TQue(asc.TPosition.A2, 1)
    pipe.init_buffer(qa1, 1, n_fm * 4)
    pipe.init_buffer(qa2, 1, 16 * 8 * 4)
    a1 = qa1.alloc_tensor(fm.dtype)
    asc.data_copy(a1, fg, n_fm)
    if ordered == 1:
        qa1.enque(a1)
        a1 = qa1.deque(fm.dtype)
    a2 = qa2.alloc_tensor(fm.dtype)
    asc.load_data(a2, a1, asc.LoadData3DParamsV2((0, 0, 0, 0), 4, 4, 8, 8, 16, 0, 0, 1, 1, 1,
                                                 1, 1, 1, False, 0, False, False, False))
    qa2.free_tensor(a2)
    qa1.free_tensor(a1)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_checked_mode_visibility(mode):
    """Load3D reads the L1 feature map on MTE1: without the queue hand-off after the MTE2 copy
    checked mode reports it."""
    fm = np.ones(8 * 4 * 4, np.float32)
    l3d_unordered_kernel[1](fm, fm.size, 1, interpret=(mode == "interpret"), checked=True)
    with pytest.raises(rt.AclError, match=r"load_data: src must be ordered after the MTE2 copy "
                                          r"that wrote it"):
        l3d_unordered_kernel[1](fm, fm.size, 0, interpret=(mode == "interpret"), checked=True)
