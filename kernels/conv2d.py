"""2-D convolution (NCHW, float32) on the cube: img2col on the vector cores, then the cube matmul,
then an optional epilogue on the vector cores.

    y[n] (OC x OH*OW) = W' (OC x K') @ col[n] (K' x OH*OW),   K' = C*KH*KW + 1

`img2col_kernel` writes col[n] to a GM workspace: row (c, ki, kj) holds, for every output pixel,
the input value its kernel tap reads (zero in the padding); the last row is all ones, so the bias
rides in the matmul as the last column of W' (exact, accumulated in fp32 on L0C).
How it moves the data: kernels/img2col.py.

Stride 2 along W (dilation 1, even W, KW >= 2; ResNet's 7x7/2 and 3x3/2 convs) first splits x
into its even and odd columns (`deinterleave2_kernel` in kernels/eltwise.py: the whole image is
one stride-2 sequence per phase when W is even: a dense GM -> UB copy of 2048 pairs per pass and
one GatherMask per phase with the built-in even / odd pattern), then runs the stride-1 img2col
above on that 2C-channel image of W/2 columns (tap kj of phase p sits at column shift
(kj - pw - p)/2); W' gets the matching column order, with zero columns for the (phase, shift)
pairs no tap uses (`Conv2dTiling.phase`, `phase_weight_matrix`).

3x3 convolutions with stride 1 and padding 1 on images whose padded row (W+2 rounded up to 16)
wastes little (`Conv2dTiling.tap_wp`, ResNet's 56/28/14 stages) skip img2col: x is copied once
with a zero border and the cube reads the 9 taps from it in place (kernels/convtap.py).

1x1 convolutions with stride 1 and no padding (`Conv2dTiling.direct`) need no img2col: x[n]
already is the C x H*W matrix, so the matmul reads it in place as the first C rows of B; the
ones row that carries the bias (K' = C + 1) is added in L1 by the matmul (`ones_row`). With
stride 2 (`Conv2dTiling.subsample`, ResNet's downsampling 1x1 convs) the C rows are
x[:, ::2, ::2], packed by `subsample2_kernel` (kernels/subsample.py: dense even rows and one
GatherMask per pass of channels), and the matmul adds the ones row the same way.

`kernels.convmm.conv_matmul_kernel` (matmul_kernel's Nd2Nz -> load_data -> mmad -> fixpipe with
its default tiling, plus that ones row and ReLU in the fixpipe) then writes the output directly
in NCHW order. W' is built once on the host (`weight_matrix`) and laid out in the cube's
fractal order (`conv_weights`: the L0A image of each chunk, loaded GM -> L0A in one load_data),
like ATC's FRACTAL_Z weight layout transform.

Epilogues, as ATC's Conv+Relu and Conv+Add+Relu fusions (rt.model fuses those node chains at
load, rt/model/fusion.py; `launch_conv2d(..., residual=, relu=, out=)` runs them): the bias is
always in the matmul and a ReLU without residual is the fixpipe's `relu_en`, so only a residual
Add needs the vector unit: `conv_matmul_kernel` adds it to each output tile right after the
fixpipe wrote it, in the same launch (kernels/convmm.py). The tap convolutions, and an output
that overlaps the convolution's input or the residual, keep the separate epilogue:
`bias_act_kernel` (kernels/eltwise.py, one launch for the whole batch) computes out = act(y +
residual) row by row after the matmul.

Fidelity: on Ascend the img2col happens inside the cube core (load3d from an L1 feature map in
NC1HWC0 into L0A); here it goes through a GM workspace, so MTE traffic is higher than on the NPU.
Every copy obeys the NPU's rules (32-byte aligned UB addresses, exact GM bounds, queue/flag
synchronisation between MTE2, MTE3 and V). Grouped convolutions are not handled here (the model
runtime runs them on the AI CPU).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

import rt

from ._host import ceil_div, is_device, round_up
from .eltwise import bias_act_kernel, deinterleave2_kernel
from .img2col import Img2colGeometry, Img2colSplit, img2col_kernel
from .convmm import conv_matmul_kernel, cube_weights, device_ones
from .convtap import (SLACK, conv_tap_kernel, pad_kernel, pad_phases_kernel, tap_fits, tap_rows,
                      tap_weight_matrix, tap_wp)
from .matmul import MatmulTiling, matmul_tiling
from .subsample import launch_subsample2, subsample_fits

BUF = 8192            # img2col UB buffer (elements); 2 staging, constant, sparse, dense: 160 KiB
MAX_W = BUF           # an output row must fit one buffer (32-byte padded)
EPI_TILE = 4096       # epilogue UB buffer (elements): 6 of them = 96 KiB
PAIRS = 2048          # deinterleave: column pairs per pass (16 KiB in, 16 KiB out)


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
    rows_per_copy: int   # output rows moved by one strided copy (stride-1 img2col)
    rows_per_pass: int   # output rows per pass of the sparse strided img2col (0: not used)
    epi_block_dim: int   # epilogue (bias / residual / ReLU) cores
    epi_rows_per_core: int  # N*OC output rows per epilogue core
    mm: MatmulTiling
    phase: "Conv2dTiling | None" = None   # stride-2 path: the stride-1 img2col of the split x
    ch_per_copy: int = 0  # stride-1 img2col by channel batches (small images; 0: by row groups)
    tap_wp: int = 0      # 3x3/1 pad 1 without img2col (kernels/convtap.py): xp's row length Wp
    tile_n: int = 0      # the matmul's output tile width (`even_tile_n`; 0: mm.base_n)

    @property
    def direct(self) -> bool:
        """1x1, stride 1, no padding: x[n] already is the C x OH*OW matrix (no img2col; the
        matmul adds the ones row of the bias in L1)."""
        return (self.kh, self.kw, self.stride, self.pad) == (1, 1, (1, 1), (0, 0, 0, 0))

    @property
    def subsample(self) -> bool:
        """1x1, stride 2, no padding, no dilation: col = x[:, ::2, ::2] (`subsample2_kernel`;
        the matmul adds the ones row in L1, as for `direct`)."""
        return (self.kh, self.kw, self.stride, self.pad, self.dilation) == \
            (1, 1, (2, 2), (0, 0, 0, 0), (1, 1)) and subsample_fits(self.c, self.h, self.w)

    @property
    def k_rows(self) -> int:
        return self.phase.k_rows if self.phase else self.c * self.kh * self.kw + 1

    @property
    def col_elems(self) -> int:
        """img2col workspace elements (+ the column-split x after it on the stride-2 path)."""
        if self.phase:
            return round_up(self.phase.col_elems, 8) + self.c * self.h * self.w
        if self.tap_wp:         # xp (stride 2: four phase images, then x split by columns)
            s = self.stride[0]
            xp = s * s * self.c * tap_rows(self.h, s) * self.tap_wp + SLACK
            return xp if s == 1 else round_up(xp, 8) + self.c * self.h * self.w
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
    direct = (kh, kw, sh, sw, pad) == (1, 1, 1, 1, (0, 0, 0, 0))
    phase = None
    if sw == 2 and dw == 1 and w % 2 == 0 and 2 <= kw and pad[1] < kw and min(oh, ow) >= 1:
        # taps kj -> (phase (kj - pw) % 2, shift kj'); left pad pw' and width kw' cover them all
        pw2 = (pad[1] + 1) // 2
        kw2 = (kw - 1 - pad[1]) // 2 + pw2 + 1
        phase = conv2d_tiling((n, 2 * c, h, w // 2), (oc, 2 * c, kh, kw2), (sh, 1),
                              (pad[0], pw2, pad[2], ow - 1 - w // 2 - pw2 + kw2), (dh, 1),
                              soc=soc)
    p = max(oh, 1) * max(ow, 1)
    # stride-1 columns, small images: copies batching channels (one per tap and output row) are
    # fewer than copies batching rows (one per channel, tap and rows_per_copy rows)
    cpc = min(4095, BUF // round_up(p, 8))
    by_rows = c * kh * kw * (2 + 3 * ceil_div(oh, max(1, min(4095, BUF // round_up(ow, 8)))))
    by_channels = kh * kw * ceil_div(c, max(cpc, 1)) * (2 + 3 * oh)
    ch_mode = sw == 1 and not direct and cpc > 0 and by_channels < by_rows
    mm = matmul_tiling(oc, p, c * kh * kw + 1, np.float32, soc=soc)
    tap = tap_wp(w, sh) if tap_fits(c, h, w, kh, kw, (sh, sw), pad, (dh, dw), mm.base_n, BUF) \
        else 0
    if tap:             # the padded output: oh rows of Wp columns
        mm = matmul_tiling(oc, oh * tap, c * kh * kw + 1, np.float32, soc=soc)
        phase = None
    ow8 = round_up(max(ow, 1), 8)
    sparse_blocks = max(pad[1] + w, (ow - 1) * sw + (kw - 1) * dw + 1)
    rows_per_pass = min(oh, BUF // (kw * ow8)) if sw > 1 and sparse_blocks * 8 <= BUF else 0
    rows = n * oc
    # the residual epilogue: a block per AI Core (EPI_TILE elements at least); the machine's 2
    # CPUs ran it 6x longer on the simulated NPU, and 48 blocks (the AIVs) cost CPU time
    epi_cores = min(rt.get_soc(soc).ai_core_num, rows, max(1, rows * p // EPI_TILE))
    if ch_mode:         # work split by channels
        per_core = ceil_div(c, min(rt.default_core_count(), c))
        groups = c
    mm_t = phase.mm if phase else mm
    tiles_m = ceil_div(mm_t.m, mm_t.base_m)
    tile_n = balanced_tile_n(mm_t.n, mm_t.base_n, tap or 16, tiles_m,
                             rt.get_soc(soc).ai_core_num)
    # one block per core while there are tiles for them (block_dim above is img2col's)
    mm_t = replace(mm_t, block_dim=min(tiles_m * ceil_div(mm_t.n, tile_n),
                                       rt.get_soc(soc).ai_core_num))
    return Conv2dTiling(n, c, h, w, oc, kh, kw, (sh, sw), pad, (dh, dw), oh, ow,
                        ceil_div(groups, per_core), per_core,
                        max(1, min(4095, BUF // ow8)), rows_per_pass,
                        ceil_div(rows, ceil_div(rows, epi_cores)), ceil_div(rows, epi_cores),
                        mm_t, phase, cpc if ch_mode else 0, tap, tile_n)


def even_tile_n(n: int, base_n: int, align: int = 16) -> int:
    """The output tile width of the conv matmuls: as many column tiles as base_n-wide ones
    need, of equal width rounded up to `align` (16, or Wp on the tap path: whole rows), so the
    last tile is not a sliver next to full ones (N = 784: 208, 208, 208, 160, not 256, 256,
    256, 16) and blocks finish together. Never more than base_n (the buffers' size), as long
    as base_n is a multiple of align."""
    tiles = ceil_div(n, base_n)
    return min(base_n, round_up(ceil_div(n, tiles), align))


def balanced_tile_n(n: int, base_n: int, align: int, tiles_m: int, cores: int) -> int:
    """`even_tile_n`, then, when the T0 = tiles_m * ceil(n / base_n) tiles outnumber the
    SoC's cores (some cores run one tile more than others), narrower tiles up to
    ceil(T0 / cores) * cores of them: the same tiles per core, every core busy to the end
    (conv1's 49 tiles of 256 on 24 cores: 3 on one core, 2 on the others -> 72 of 176, 3 on
    each). At most twice the column tiles. Fewer tiles than cores stay as they are: more,
    narrower tiles would shorten the launch on the NPU too, but each tile loads all of A
    again (ResNet's 3x3 256 x 14 x 14 as 4 tiles instead of 2: simulated -44 %, process CPU
    +9 %, 2026-12-06), and the emulator's CPU time is what this tiling keeps down."""
    tiles_n = ceil_div(n, base_n)
    best = even_tile_n(n, base_n, align)
    if tiles_m * tiles_n <= cores:
        return best
    limit = ceil_div(tiles_m * tiles_n, cores) * cores
    for tn_count in range(tiles_n + 1, 2 * tiles_n + 1):
        if tiles_m * tn_count > limit:
            break
        best = min(best, round_up(ceil_div(n, tn_count), align))
    return best


# ---- host ----------------------------------------------------------------------------------------

def img2col_args(t: Conv2dTiling) -> tuple:
    """(Img2colGeometry, Img2colSplit) of tiling t: img2col_kernel's run-time arguments."""
    return (Img2colGeometry(t.c, t.h, t.w, t.oh, t.ow, t.kh, t.kw, *t.stride, *t.pad[:2],
                            *t.dilation),
            Img2colSplit(t.groups_per_core, t.rows_per_copy, t.rows_per_pass, t.ch_per_copy))


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
    """W' = [W reshaped OC x C*KH*KW | bias] (float32, zero bias if b is None): the cube's A
    operand in conv2d."""
    w = np.asarray(w, np.float32)
    wm = w.reshape(w.shape[0], -1)
    bias = np.zeros(w.shape[0], np.float32) if b is None else np.asarray(b, np.float32)
    return np.ascontiguousarray(np.concatenate([wm, bias[:, None]], 1))


def phase_weight_matrix(w, b, t: Conv2dTiling) -> np.ndarray:
    """W' for the stride-2 path: columns (phase p, c, ki, kj') + bias, tap kj = 2 * (kj' - pw')
    + p + pw of w (zero where no tap maps)."""
    w = np.asarray(w, np.float32)
    oc, c, kh, kw = w.shape
    kw2, pw2 = t.phase.kw, t.phase.pad[1]
    wm = np.zeros((oc, 2, c, kh, kw2), np.float32)
    for p in range(2):
        for j in range(kw2):
            kj = 2 * (j - pw2) + p + t.pad[1]
            if 0 <= kj < kw:
                wm[:, p, :, :, j] = w[:, :, :, kj]
    bias = np.zeros((oc, 1), np.float32) if b is None else np.asarray(b, np.float32)[:, None]
    return np.ascontiguousarray(np.concatenate([wm.reshape(oc, -1), bias], 1))


def conv_matrix(w, b, t: Conv2dTiling) -> np.ndarray:
    """W' (OC x K', host float32, the bias as its last column) for tiling t."""
    if t.tap_wp:
        return tap_weight_matrix(w, b)
    return phase_weight_matrix(w, b, t) if t.phase else weight_matrix(w, b)


def conv_weights(w, b, t: Conv2dTiling) -> np.ndarray:
    """W' for tiling t as the cube reads it from GM (`kernels.convmm.cube_weights`: its L0A
    chunks, as ATC lays a Conv's weights out once, at conversion): 1-D float32."""
    return cube_weights(conv_matrix(w, b, t), t.mm)


def _overlap(a, b) -> bool:
    """True if device arrays a and b share bytes."""
    return int(a.ptr) < int(b.ptr) + b.nbytes and int(b.ptr) < int(a.ptr) + a.nbytes


def launch_epilogue(y, out, t: Conv2dTiling, stream, bias=None, residual=None, relu=False,
                    **launch_options) -> None:
    """Queue out = act(y + bias[oc] + residual) (each part optional, in place if out is y) on
    `stream`: device arrays of t's output shape (bias: OC elements)."""
    rows, p = t.n * t.oc, t.oh * t.ow
    bias_arg = bias if bias is not None else y
    res_arg = residual if residual is not None else y
    bias_act_kernel[t.epi_block_dim, stream](
        y, bias_arg, res_arg, out, rows, p, t.oc if bias is not None else rows,
        t.epi_rows_per_core, int(bias is not None), int(residual is not None), int(relu),
        EPI_TILE, **launch_options)


def _launch_taps(xi, wmat, yi, col, zeros, ones, t: Conv2dTiling, relu: int, stream,
                 launch_options) -> None:
    """One image of a tap convolution (kernels/convtap.py): xp into the workspace, then the
    cube reads the 9 taps from it."""
    mm, wp, s = t.mm, t.tap_wp, t.stride[0]
    hp = tap_rows(t.h, s)
    xp = rt.DeviceArray((s * s * t.c * hp * wp + SLACK,), np.float32, col.ptr)
    cores = rt.default_core_count()
    if s == 1:
        per_core = ceil_div(t.c, min(cores, t.c))
        pad_kernel[ceil_div(t.c, per_core), stream](xi, xp, t.c, t.h, t.w, wp, per_core,
                                                    max(1, BUF // (t.h * wp)), BUF,
                                                    **launch_options)
    else:               # split the columns, then the four phase images
        chw = t.c * t.h * t.w
        xs = rt.DeviceArray((chw,), np.float32, int(col.ptr) + round_up(xp.size, 8) * 4)
        per_core = round_up(ceil_div(chw // 2, min(cores, ceil_div(chw // 2, PAIRS))), 8)
        deinterleave2_kernel[ceil_div(chw // 2, per_core), stream](
            xi, xs, chw // 2, per_core, PAIRS, **launch_options)
        per_core = ceil_div(2 * t.c, min(cores, 2 * t.c))
        pad_phases_kernel[ceil_div(2 * t.c, per_core), stream](
            xs, xp, 2 * t.c, t.h, t.w // 2, wp, per_core, max(1, BUF // (t.h // 2 * wp)), BUF,
            **launch_options)
    conv_tap_kernel[mm.block_dim, stream](
        wmat, xp, yi, zeros, ones, np.int64(mm.m), t.c, t.oh, t.ow, wp, hp, int(s == 2), relu,
        t.tile_n or mm.base_n, mm.base_m, mm.base_n, mm.base_k, mm.l0_n, mm.depth_l1,
        mm.depth_l0a, mm.depth_l0b, **launch_options)


def launch_conv2d(x, wmat, y, col, zeros, t: Conv2dTiling, stream, *, residual=None,
                  relu=False, out=None, **launch_options) -> None:
    """Queue out = act(conv2d(x) + bias [+ residual]) on `stream` with device arrays: x
    (N,C,H,W), wmat from `conv_weights`, y and out (N,OC,OH,OW) float32 (out defaults to y; in
    place is fine; y is written only as the matmul's output before a residual epilogue), col a
    float32 workspace of >= t.col_elems elements (unused when t.direct), zeros a zero float32
    workspace of >= t.mm.zeros_len elements. act is ReLU if `relu`, as ATC's fused Conv+Relu
    and Conv+Add+Relu."""
    out = y if out is None else out
    # the matmul writes the result itself unless out overlaps what it reads (a memory plan may
    # put a fused node's output over its dead input); it adds a residual itself too (the fused
    # epilogue, kernels/convmm.py), except on the tap path and when out overlaps the residual
    reads = [x] + ([] if t.direct or col is None else [col])
    free_out = out is y or not any(_overlap(out, r) for r in reads)
    fused = residual is not None and free_out and not t.tap_wp and not _overlap(out, residual)
    direct_out = free_out and (residual is None or fused)
    mm_out = out if direct_out else y
    epi = (2 if relu else 1) if fused else 0
    ones = device_ones(t.mm.base_n, x.device)
    chw, ohw = t.c * t.h * t.w, t.oh * t.ow
    xp = None
    if t.phase:
        xp = rt.DeviceArray((chw,), np.float32, int(col.ptr) + round_up(t.phase.col_elems, 8) * 4)
        dcores = min(rt.default_core_count(), ceil_div(chw // 2, PAIRS))
        per_core = round_up(ceil_div(chw // 2, dcores), 8)
    if not t.direct and not t.tap_wp:
        col = rt.DeviceArray((t.k_rows, ohw), np.float32, col.ptr)
    mm = t.mm
    for i in range(t.n):
        xi = rt.DeviceArray((chw,), np.float32, int(x.ptr) + i * chw * 4)
        yi = rt.DeviceArray((t.oc, ohw), np.float32, int(mm_out.ptr) + i * t.oc * ohw * 4)
        if t.tap_wp:
            _launch_taps(xi, wmat, yi, col, zeros, ones, t, int(relu and direct_out), stream,
                         launch_options)
            continue
        if t.direct:
            b_op = rt.DeviceArray((t.c, ohw), np.float32, xi.ptr)
        elif t.subsample:
            b_op = col
            launch_subsample2(xi, col, t.c, t.h, t.w, rt.default_core_count(), stream,
                              **launch_options)
        else:
            b_op, g = col, t
            if t.phase:     # split columns, then the stride-1 img2col of the 2C x H x W/2 image
                deinterleave2_kernel[ceil_div(chw // 2, per_core), stream](
                    xi, xp, chw // 2, per_core, PAIRS, **launch_options)
                xi, g = xp, t.phase
            img2col_kernel[g.block_dim, stream](xi, col, *img2col_args(g), BUF,
                                                **launch_options)
        ri = yi if not fused else \
            rt.DeviceArray((t.oc, ohw), np.float32, int(residual.ptr) + i * t.oc * ohw * 4)
        conv_matmul_kernel[mm.block_dim, stream](
            wmat, b_op, yi, zeros, ones, ri, np.int64(mm.m), np.int64(mm.n), np.int64(mm.k),
            int(t.direct or t.subsample), int(relu and direct_out and not fused), epi,
            t.tile_n or mm.base_n,
            mm.base_m, mm.base_n, mm.base_k, mm.l0_n, mm.depth_l1, mm.depth_l0a, mm.depth_l0b,
            **launch_options)
    if not direct_out:
        launch_epilogue(y, out, t, stream, residual=residual, relu=relu, **launch_options)


def conv2d(x, w, b=None, *, stride=1, padding=0, dilation=1, residual=None, relu=False,
           stream=None, tiling: Conv2dTiling | None = None, **launch_options):
    """y = conv2d(x, w) + b [+ residual] [then ReLU], NCHW float32, on the cube (see the module
    docstring). `padding`: int, (ph, pw) or (top, left, bottom, right). numpy in -> numpy out
    (synchronous); rt.DeviceArray x and w (OC, C, KH, KW) in -> DeviceArray out, queued on
    `stream`."""
    for name, a in (("x", x), ("w", w)):
        if np.dtype(a.dtype) != np.float32 or len(a.shape) != 4:
            raise TypeError(f"conv2d: {name} must be a 4-D float32 array, got "
                            f"{name}.dtype={a.dtype} {name}.shape={tuple(a.shape)}")
    t = tiling or conv2d_tiling(x.shape, w.shape, stride, padding, dilation)
    if residual is not None and tuple(residual.shape) != (t.n, t.oc, t.oh, t.ow):
        raise ValueError(f"conv2d: residual must have the output shape "
                         f"{(t.n, t.oc, t.oh, t.ow)}, got residual.shape={tuple(residual.shape)}")
    dev = is_device(x, w)
    wh = w.copy_to_host() if dev else w
    bh = b.copy_to_host() if dev and b is not None else b
    rt.ensure_device()
    s = stream if stream is not None else rt.current_stream()
    xd = x if dev else rt.to_device(np.ascontiguousarray(x))
    wd = rt.to_device(conv_weights(wh, bh, t))
    rd = residual if residual is None or dev else \
        rt.to_device(np.ascontiguousarray(residual, np.float32))
    y = rt.device_empty((t.n, t.oc, t.oh, t.ow), np.float32)
    col = rt.device_empty((16,) if t.direct else (t.col_elems,), np.float32)
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    launch_conv2d(xd, wd, y, col, zeros, t, s, residual=rd, relu=relu,
                  **launch_options)
    if dev:
        return y        # the temporaries are freed stream-ordered when collected
    s.synchronize()
    return y.copy_to_host()
