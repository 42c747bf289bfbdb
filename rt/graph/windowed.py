"""AI CPU windowed ops: Conv, MaxPool (with its Indices output) and AveragePool over any number
of spatial dims (1-D, 2-D, 3-D, ...), in numpy, with ONNX's semantics (opset 19-22).

Padding: explicit `pads` ([x1_begin, x2_begin, ..., x1_end, x2_end, ...]); `auto_pad` SAME_UPPER /
SAME_LOWER / VALID (ATC writes them out as `pads` for 2-D inputs, `rt/atc/windows.py`; other
ranks arrive here with the attribute and get the same rule). `ceil_mode` sizes the output with
ceil instead of floor, minus a last window that would start past the input and its leading
padding (ONNX's and PyTorch's rule); such windows read only what lies inside the padded input:
MaxPool ignores the rest, AveragePool divides by the count of input elements
(`count_include_pad=0`) or of input-plus-explicit-padding elements (`count_include_pad=1`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _geometry(attrs, spatial, kernel=None):
    """(kernel, strides, dilations, pads_begin, pads_end, out) for input spatial dims `spatial`."""
    nd = len(spatial)
    k = list(attrs.get("kernel_shape") or kernel)
    s = list(attrs.get("strides") or [1] * nd)
    d = list(attrs.get("dilations") or [1] * nd)
    p = list(attrs.get("pads") or [0] * (2 * nd))
    pb, pe = p[:nd], p[nd:]
    mode = attrs.get("auto_pad", "NOTSET")
    ceil = bool(attrs.get("ceil_mode", 0))
    out = []
    for i in range(nd):
        span = (k[i] - 1) * d[i] + 1
        if mode in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-spatial[i] // s[i])
            total = max((o - 1) * s[i] + span - spatial[i], 0)
            small = total // 2
            pb[i], pe[i] = (small, total - small) if mode == "SAME_UPPER" else \
                (total - small, small)
        elif mode == "VALID":
            pb[i] = pe[i] = 0
        room = spatial[i] + pb[i] + pe[i] - span
        if ceil:
            o = -(-room // s[i]) + 1
            if (o - 1) * s[i] >= spatial[i] + pb[i]:
                o -= 1                  # a last window must start inside input or leading pad
        else:
            o = room // s[i] + 1
        out.append(max(o, 0))
    return k, s, d, pb, pe, out


def _windows(x, k, s, d, pb, pe, out, fill):
    """(N, C, *out, *k) strided view of `x` padded with `fill` (explicit pads, then whatever the
    last windows of `out` need past the end)."""
    nd = len(k)
    spans = [(k[i] - 1) * d[i] + 1 for i in range(nd)]
    extra = [max((out[i] - 1) * s[i] + spans[i] - (x.shape[2 + i] + pb[i] + pe[i]), 0)
             for i in range(nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pb[i], pe[i] + extra[i]) for i in range(nd)],
                constant_values=fill)
    win = sliding_window_view(xp, spans, axis=tuple(range(2, 2 + nd)))
    idx = (slice(None), slice(None)) + tuple(slice(0, (out[i] - 1) * s[i] + 1, s[i])
                                             for i in range(nd)) + \
        tuple(slice(None, None, d[i]) for i in range(nd))
    return win[idx]


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def conv(attrs, x, w, b=None):
    nd = x.ndim - 2
    if nd < 1 or w.ndim != x.ndim:
        raise ValueError(f"Conv: X and W must have the same rank >= 3, got x.ndim={x.ndim} "
                         f"w.ndim={w.ndim}")
    g = attrs.get("group", 1)
    geo = _geometry(attrs, x.shape[2:], w.shape[2:])
    win = _windows(x, *geo, 0)                     # N, C, *out, *k
    n, c = win.shape[:2]
    oc = w.shape[0]
    out = np.empty((n, oc) + tuple(geo[5]), np.result_type(x, w))
    sp, kk = "pqrstu"[:nd], "hijklm"[:nd]
    expr = f"nc{sp}{kk},oc{kk}->no{sp}"
    cg, og = c // g, oc // g
    for i in range(g):
        part = win[:, i * cg:(i + 1) * cg]
        out[:, i * og:(i + 1) * og] = np.einsum(expr, part, w[i * og:(i + 1) * og],
                                                optimize=True)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return [out.astype(x.dtype, copy=False)]


class LazyOutputs(Sequence):
    """An op's outputs, each computed when first read: a node without the optional ones (the
    executor and ATC zip the results with the node's outputs) never pays for them."""

    def __init__(self, *thunks):
        self._thunks, self._done = thunks, {}

    def __len__(self):
        return len(self._thunks)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        if i not in self._done:
            self._done[i] = self._thunks[i]()
        return self._done[i]


def max_pool(attrs, x):
    """Y, and Indices (computed only when read): the flat index of each maximum in X (the first
    of equal maxima), over the whole tensor (batch and channel included), its spatial part
    row-major (`storage_order=0`) or column-major (`storage_order=1`)."""
    nd = x.ndim - 2
    geo = _geometry(attrs, x.shape[2:])
    win = _windows(x, *geo, _lowest(x.dtype))
    taps = math.prod(geo[0])
    flat = win.reshape(win.shape[:2 + nd] + (taps,))
    y = flat.max(axis=-1).astype(x.dtype)
    return LazyOutputs(lambda: y, lambda: _argmax_indices(attrs, x, geo, flat, y))


def _argmax_indices(attrs, x, geo, flat, y):
    nd, taps = x.ndim - 2, flat.shape[-1]
    spatial = x.shape[2:]
    size = math.prod(spatial)
    pos = np.arange(size, dtype=np.int64)
    pos = pos.reshape(spatial) if not attrs.get("storage_order", 0) else \
        pos.reshape(spatial[::-1]).transpose()
    pwin = _windows(pos.reshape((1, 1) + spatial), *geo, -1)
    pflat = pwin.reshape(pwin.shape[2:2 + nd] + (taps,))
    # the first maximum among the window's input elements (padding never wins)
    first = (flat == y[..., None]) & (pflat[None, None] >= 0)
    arg = np.argmax(first, axis=-1)
    sp_idx = np.take_along_axis(np.broadcast_to(pflat, flat.shape), arg[..., None], -1)[..., 0]
    base = (np.arange(x.shape[0] * x.shape[1], dtype=np.int64) * size).reshape(
        (x.shape[0], x.shape[1]) + (1,) * nd)
    return (base + sp_idx).astype(np.int64)


def average_pool(attrs, x):
    nd = x.ndim - 2
    geo = _geometry(attrs, x.shape[2:])
    k, s, d, pb, pe, out = geo
    total = _windows(x, *geo, 0).sum(axis=tuple(range(-nd, 0)), dtype=np.float64)
    ones = np.ones((1, 1) + x.shape[2:], np.float64)
    if attrs.get("count_include_pad", 0):     # the explicit padding counts, ceil's extra not
        ones = np.pad(ones, [(0, 0), (0, 0)] + [(pb[i], pe[i]) for i in range(nd)],
                      constant_values=1.0)
        geo = (k, s, d, [0] * nd, [0] * nd, out)
    cnt = _windows(ones, *geo, 0).sum(axis=tuple(range(-nd, 0)))
    return [(total / cnt).astype(x.dtype)]
