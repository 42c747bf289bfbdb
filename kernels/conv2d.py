"""2-D convolution (NCHW, float32) on the cube: img2col on the vector cores, then the cube matmul.

    y[n] (OC x OH*OW) = W' (OC x K') @ col[n] (K' x OH*OW),   K' = C*KH*KW + 1

`img2col_kernel` writes col[n] to a GM workspace: row (c, ki, kj) holds, for every output pixel,
the input value its kernel tap reads (zero in the padding); the last row is all ones, so the bias
rides in the matmul as the last column of W' (exact, accumulated in fp32 on L0C). Each core
owns a block of (c, ki) row groups: an input row is moved GM -> UB once (data_copy_pad) and
gathered into its KW output segments by scalar reads/writes (S pipe; strides and dilations are
any), which move UB -> GM. `kernels.matmul.matmul_kernel` (Nd2Nz -> load_data -> mmad ->
fixpipe, its default tiling, so its compiled binary is shared) then writes y[n] directly in
NCHW order. W' is built once on the host (`weight_matrix`), like ATC's weight layout transform.

Fidelity: on Ascend the img2col happens inside the cube core (load3d from an L1 feature map in
NC1HWC0 into L0A); here it goes through a GM workspace, so MTE traffic is higher than on the NPU.
Grouped convolutions are not handled here (the model runtime runs them on the AI CPU).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device, round_up
from .matmul import MatmulTiling, matmul_kernel, matmul_tiling

BUFFER_NUM = 2
MAX_W = 8192          # input row length that fits UB next to its buffers


def _pair(v, name):
    v = (v, v) if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError(f"conv2d: {name} must be an int or a pair, got {name}={v}")
    return v


@dataclass(frozen=True)
class Conv2dTiling:
    """How `conv2d` runs: the geometry, the img2col split (row groups per core) and the matmul
    tiling of W' (OC x K') @ col (K' x OH*OW)."""
    n: int
    c: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: tuple
    pad: tuple           # (top, left, bottom, right)
    dilation: tuple
    oh: int
    ow: int
    block_dim: int       # img2col cores
    groups_per_core: int  # (c, ki) row groups per img2col core
    w_pad: int           # UB elements of an input row (32-byte multiple)
    ow_pad: int          # UB elements of an output segment
    mm: MatmulTiling

    @property
    def k_rows(self) -> int:
        return self.c * self.kh * self.kw + 1

    @property
    def col_elems(self) -> int:
        return self.k_rows * self.oh * self.ow

    def __post_init__(self):
        if min(self.oh, self.ow) < 1:
            raise ValueError(f"Conv2dTiling: output must be non-empty, got oh={self.oh} "
                             f"ow={self.ow}")
        if self.w > MAX_W or self.ow > MAX_W:
            raise ValueError(f"Conv2dTiling: w and ow must be <= {MAX_W}, got w={self.w} "
                             f"ow={self.ow}")


def conv2d_tiling(x_shape, w_shape, stride=1, padding=0, dilation=1, block_dim=None,
                  soc=None) -> Conv2dTiling:
    n, c, h, w = (int(s) for s in x_shape)
    oc, c2, kh, kw = (int(s) for s in w_shape)
    if c2 != c:
        raise ValueError(f"conv2d: w.shape[1] must equal x.shape[1] (groups are not supported), "
                         f"got x.shape={tuple(x_shape)} w.shape={tuple(w_shape)}")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pad = tuple(int(p) for p in padding) if not isinstance(padding, (int, np.integer)) \
        else (int(padding),) * 4
    if len(pad) == 2:
        pad = pad * 2
    oh = (h + pad[0] + pad[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pad[1] + pad[3] - dw * (kw - 1) - 1) // sw + 1
    groups = c * kh
    cores = block_dim or min(rt.default_core_count(), max(1, groups * oh * ow * kw // 4096),
                             groups)
    per_core = ceil_div(groups, cores)
    mm = matmul_tiling(oc, max(oh, 1) * max(ow, 1), c * kh * kw + 1, np.float32, soc=soc)
    return Conv2dTiling(n, c, h, w, oc, kh, kw, (sh, sw), pad, (dh, dw), oh, ow,
                        ceil_div(groups, per_core), per_core, round_up(w, 8), round_up(ow, 8), mm)


# ---- kernel --------------------------------------------------------------------------------------

@asc.jit
def _segments_from_row(qo, xl, colg, row0, dst_off, p, w, ow, kw, sw, pw, kj_step):
    """KW output segments (rows row0.., at dst_off) gathered from the input row in UB."""
    asc.set_flag(asc.HardEvent.MTE2_S, 0)
    asc.wait_flag(asc.HardEvent.MTE2_S, 0)
    for kj in range(kw):
        ol = qo.alloc_tensor(colg.dtype)
        for q in range(ow):
            iw = q * sw - pw + kj * kj_step
            if iw >= 0 and iw < w:
                ol.set_value(q, xl.get_value(iw))
            else:
                ol.set_value(q, 0.0)
        asc.set_flag(asc.HardEvent.S_MTE3, 0)
        asc.wait_flag(asc.HardEvent.S_MTE3, 0)
        qo.enque(ol)
        ol = qo.deque(colg.dtype)
        asc.data_copy_pad(colg[(row0 + kj) * p + dst_off:], ol,
                          asc.DataCopyExtParams(1, ow * colg.dtype.sizeof(), 0, 0, 0))
        qo.free_tensor(ol)


@asc.jit
def _fill_segments(qo, colg, row0, nrows, dst_off, p, ow, value):
    """`nrows` output segments of `value` (padding rows, or the bias row of ones)."""
    for kj in range(nrows):
        ol = qo.alloc_tensor(colg.dtype)
        asc.duplicate(ol, value, ow)
        qo.enque(ol)
        ol = qo.deque(colg.dtype)
        asc.data_copy_pad(colg[(row0 + kj) * p + dst_off:], ol,
                          asc.DataCopyExtParams(1, ow * colg.dtype.sizeof(), 0, 0, 0))
        qo.free_tensor(ol)


@asc.jit
def img2col_kernel(x: asc.GlobalAddress, col: asc.GlobalAddress, c: int, h: int, w: int,
                   oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
                   dh: int, dw: int, groups_per_core: int, w_pad: asc.ConstExpr[int],
                   ow_pad: asc.ConstExpr[int]):
    """col (C*KH*KW + 1 rows of OH*OW) from one NCHW image x (C x H x W)."""
    p = oh * ow
    bidx = asc.get_block_idx()
    g0 = bidx * groups_per_core
    ng = min(groups_per_core, c * kh - g0)
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, c * h * w)
    colg = asc.GlobalTensor()
    colg.set_global_buffer(col, (c * kh * kw + 1) * p)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qo = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    pipe.init_buffer(qx, BUFFER_NUM, w_pad * x.dtype.sizeof())
    pipe.init_buffer(qo, BUFFER_NUM, ow_pad * col.dtype.sizeof())
    for gi in range(ng):
        g = g0 + gi
        ci = g // kh
        ki = g % kh
        for r in range(oh):
            ih = r * sh - ph + ki * dh
            if ih >= 0 and ih < h:
                xl = qx.alloc_tensor(x.dtype)
                asc.data_copy_pad(xl, xg[(ci * h + ih) * w:],
                                  asc.DataCopyExtParams(1, w * x.dtype.sizeof(), 0, 0, 0))
                qx.enque(xl)
                xl = qx.deque(x.dtype)
                _segments_from_row(qo, xl, colg, g * kw, r * ow, p, w, ow, kw, sw, pw, dw)
                qx.free_tensor(xl)
            else:
                _fill_segments(qo, colg, g * kw, kw, r * ow, p, ow, 0.0)
    if bidx == 0:
        for r in range(oh):
            _fill_segments(qo, colg, c * kh * kw, 1, r * ow, p, ow, 1.0)


# ---- host ----------------------------------------------------------------------------------------

def conv2d_reference(x, w, b=None, stride=1, padding=0, dilation=1) -> np.ndarray:
    """float64 direct convolution (NCHW, OIHW), returned as float32."""
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pad = (padding,) * 4 if isinstance(padding, (int, np.integer)) else tuple(padding)
    pad = pad * 2 if len(pad) == 2 else pad
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            patch = x[:, :, r0:r0 + sh * (oh - 1) + 1:sh, c0:c0 + sw * (ow - 1) + 1:sw]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    if b is not None:
        y += np.asarray(b, np.float64).reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def weight_matrix(w, b=None) -> np.ndarray:
    """W' = [W reshaped OC x C*KH*KW | bias] (float32): the cube's A operand in conv2d."""
    w = np.asarray(w, np.float32)
    bias = np.zeros(w.shape[0], np.float32) if b is None else np.asarray(b, np.float32)
    return np.ascontiguousarray(np.concatenate([w.reshape(w.shape[0], -1), bias[:, None]], 1))


def launch_conv2d(x, wmat, y, col, zeros, t: Conv2dTiling, stream, **launch_options) -> None:
    """Queue conv2d on `stream` with device arrays: x (N,C,H,W), wmat (OC, K') from
    `weight_matrix`, y (N,OC,OH,OW) float32, col a float32 workspace of >= t.col_elems elements,
    zeros a zero float32 workspace of >= t.mm.zeros_len elements."""
    chw, ohw = t.c * t.h * t.w, t.oh * t.ow
    col = rt.DeviceArray((t.k_rows, ohw), np.float32, col.ptr)
    mm = t.mm
    for i in range(t.n):
        xi = rt.DeviceArray((chw,), np.float32, int(x.ptr) + i * chw * 4)
        yi = rt.DeviceArray((t.oc, ohw), np.float32, int(y.ptr) + i * t.oc * ohw * 4)
        img2col_kernel[t.block_dim, stream](
            xi, col, t.c, t.h, t.w, t.oh, t.ow, t.kh, t.kw, t.stride[0], t.stride[1], t.pad[0],
            t.pad[1], t.dilation[0], t.dilation[1], t.groups_per_core, t.w_pad, t.ow_pad,
            **launch_options)
        matmul_kernel[mm.block_dim, stream](
            wmat, col, yi, zeros, np.int64(mm.m), np.int64(mm.n), np.int64(mm.k), mm.base_m,
            mm.base_n, mm.base_k, mm.l0_n, mm.depth_l1, mm.depth_l0a, mm.depth_l0b,
            **launch_options)


def conv2d(x, w, b=None, *, stride=1, padding=0, dilation=1, stream=None,
           tiling: Conv2dTiling | None = None, **launch_options):
    """y = conv2d(x, w) + b, NCHW float32, on the cube (see the module docstring).
    `padding`: int, (ph, pw) or (top, left, bottom, right). numpy in -> numpy out (synchronous);
    rt.DeviceArray x and w (OC, C, KH, KW) in -> DeviceArray out, queued on `stream`."""
    for name, a in (("x", x), ("w", w)):
        if np.dtype(a.dtype) != np.float32 or len(a.shape) != 4:
            raise TypeError(f"conv2d: {name} must be a 4-D float32 array, got "
                            f"{name}.dtype={a.dtype} {name}.shape={tuple(a.shape)}")
    t = tiling or conv2d_tiling(x.shape, w.shape, stride, padding, dilation)
    dev = is_device(x, w)
    wh = w.copy_to_host() if dev else w
    bh = b.copy_to_host() if dev and b is not None else b
    rt.ensure_device()
    s = stream if stream is not None else rt.current_stream()
    xd = x if dev else rt.to_device(np.ascontiguousarray(x))
    wd = rt.to_device(weight_matrix(wh, bh))
    y = rt.device_empty((t.n, t.oc, t.oh, t.ow), np.float32)
    col = rt.device_empty((t.col_elems,), np.float32)
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    launch_conv2d(xd, wd, y, col, zeros, t, s, **launch_options)
    if dev:
        return y        # the temporaries are freed stream-ordered when collected
    s.synchronize()
    return y.copy_to_host()
