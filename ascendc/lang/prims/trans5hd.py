"""`trans_data_to_5hd`: Ascend C's TransDataTo5HD (the vnchwconv instruction), 16-bit elements.

Ascend C basic API "TransDataTo5HD"; pyasc: python/asc/language/basic/vec_transpose.py
(`trans_data_to_5hd(dst_list, src_list, params)`, forms: two lists of 16 LocalTensors, or two
LocalTensor<uint64> holding 16 addresses each, as `get_phy_addr()` gives them) and
TransDataTo5HDParams in core/types.py (dst_high_half, src_high_half, repeat_times,
dst_rep_stride, src_rep_stride). One repeat reads 16 blocks of 32 bytes, block i from address
src[i], as a 16 x 16 matrix and writes its transpose: element k of src block i goes to element i
of dst block k. Repeat r moves every src address by r * src_rep_stride blocks and every dst
address by r * dst_rep_stride blocks (all 16 src blocks are read before a repeat writes).

Emulated: 16-bit elements (float16, int16, uint16, bfloat16). The list form takes the width from
the tensors and refuses others; the address form cannot see a type (its tensors hold uint64
addresses) and assumes 16-bit, the width pyasc's tests use. The high_half flags only matter for
8-bit elements and are ignored. Checks: 16 entries per list, repeat_times in [0, 255], strides
uint16, every address 32-byte aligned inside UB, and every block a repeat touches inside its
tensor (list form) or inside UB (address form).
"""
from __future__ import annotations

import numpy as np
from numba.core import config
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from .. import core
from ..core import prim
from ..errors import FAULT, fault, KernelError
from .. import trace
from .vecbase import check_range
from ..state import MEM, STATE
from ..visibility import PIPE_V, in_flight, vis_check

__all__ = ["trans_data_to_5hd"]

_OP_5HD = trace.op("trans_data_to_5hd")
LIST_SIZE = 16      # NCHW_CONV_ADDR_LIST_SIZE


@prim
def _fail(what, i, a, b):
    if what == 0:
        fault("trans_data_to_5hd: dst_list and src_list must have 16 entries each, got "
              "len(dst_list)={} len(src_list)={}", a, b)
        raise KernelError(FAULT)
    elif what == 1:
        fault("trans_data_to_5hd: only 16-bit elements are supported (float16, int16, uint16, "
              "bfloat16), got element size {} in entry {}", a, i)
        raise KernelError(FAULT)
    elif what == 2:
        fault("trans_data_to_5hd: every address must be 32-byte aligned inside UB, got entry "
              "{} at UB byte offset {} (UB holds {} bytes)", i, a, b)
        raise KernelError(FAULT)
    elif what == 3:
        fault("trans_data_to_5hd: entry {} must hold every block the repeats touch, got "
              "element {} for a tensor of {} elements", i, a, b)
        raise KernelError(FAULT)
    else:
        fault("trans_data_to_5hd: entry {} must stay inside UB over the repeats, got byte "
              "offset {} past UB's {} bytes", i, a, b)
        raise KernelError(FAULT)


@prim
def _check_params(p):
    api = "trans_data_to_5hd"
    check_range(api, "params.repeat_times", p.repeat_times, 0, 255)
    check_range(api, "params.dst_rep_stride", p.dst_rep_stride, 0, 65535)
    check_range(api, "params.src_rep_stride", p.src_rep_stride, 0, 65535)


@prim
def _run(ctx, dst_off, src_off, dst_cap, src_cap, params):
    """The instruction on byte offsets into the core's memory (`*_cap`: bytes each entry may
    reach from its offset, -1: up to UB's end)."""
    _check_params(params)
    st = ctx[STATE][0]
    ub0 = st.level_base[core.UB]
    ub_n = st.level_size[core.UB]
    rep = params.repeat_times
    for which in range(2):
        offs = dst_off if which == 0 else src_off
        caps = dst_cap if which == 0 else src_cap
        stride = params.dst_rep_stride if which == 0 else params.src_rep_stride
        for i in range(LIST_SIZE):
            rel = offs[i] - ub0
            if rel < 0 or rel >= ub_n or rel % 32 != 0:
                _fail(2, i, rel, ub_n)
            if rep > 0:
                far = (rep - 1) * stride * 32 + 32          # bytes touched from the offset
                if caps[i] >= 0 and far > caps[i]:
                    _fail(3, i, far // 2 - 1, caps[i] // 2)
                if rel + far > ub_n:
                    _fail(4, i, rel + far, ub_n)
    if in_flight(ctx) and rep > 0:        # checked mode: V must see the sources (visibility.py)
        for i in range(LIST_SIZE):
            vis_check(ctx, "trans_data_to_5hd", "src_list", PIPE_V, src_off[i],
                      (rep - 1) * params.src_rep_stride * 32 + 32)
    mem = ctx[MEM]
    block = np.empty((LIST_SIZE, LIST_SIZE), np.uint16)
    for r in range(rep):
        for i in range(LIST_SIZE):
            b = src_off[i] + r * params.src_rep_stride * 32
            block[i, :] = mem[b:b + 32].view(np.uint16)
        for k in range(LIST_SIZE):
            b = dst_off[k] + r * params.dst_rep_stride * 32
            mem[b:b + 32].view(np.uint16)[:] = block[:, k]
    core.count(ctx, core.C_VEC_OPS, rep * 256)
    trace.vec(ctx, _OP_5HD, 2, 2 * rep, True)


def _list_offsets(ctx, tensors):
    """(byte offsets, byte capacities) of a list of 16 tensors (Python side)."""
    base = ctx[MEM].ctypes.data
    offs = np.array([t.ctypes.data - base for t in tensors], np.int64)
    caps = np.array([t.size * t.itemsize for t in tensors], np.int64)
    for i, t in enumerate(tensors):
        if t.itemsize != 2:
            _fail(1, i, t.itemsize, 0)
    return offs, caps


def trans_data_to_5hd(ctx, dst_list, src_list, params):
    """dst_list/src_list: lists of 16 LocalTensors, or LocalTensor<uint64> of 16 addresses
    (Python side; compiled kernels use the overload below)."""
    dst, src = dst_list, src_list
    if isinstance(dst, (list, tuple)) or isinstance(src, (list, tuple)):
        if not isinstance(dst, (list, tuple)) or not isinstance(src, (list, tuple)) or \
                len(dst) != LIST_SIZE or len(src) != LIST_SIZE:
            _fail(0, 0, len(dst) if isinstance(dst, (list, tuple)) else -1,
                  len(src) if isinstance(src, (list, tuple)) else -1)
        d_off, d_cap = _list_offsets(ctx, dst)
        s_off, s_cap = _list_offsets(ctx, src)
    else:
        d_off, d_cap = _addr_offsets(ctx, dst)
        s_off, s_cap = _addr_offsets(ctx, src)
    _run(ctx, d_off, s_off, d_cap, s_cap, params)


@prim
def _addr_offsets(ctx, addrs):
    """Byte offsets of the 16 addresses held by a uint64 tensor (capacities: unknown, -1)."""
    if addrs.size < LIST_SIZE:
        _fail(0, 0, addrs.size, addrs.size)
    base = np.int64(ctx[MEM].ctypes.data)
    offs = np.empty(LIST_SIZE, np.int64)
    for i in range(LIST_SIZE):
        offs[i] = np.int64(addrs[i]) - base
    return offs, np.full(LIST_SIZE, -1, np.int64)


if not config.DISABLE_JIT:
    @overload(trans_data_to_5hd)
    def _trans_data_to_5hd_ov(ctx, dst_list, src_list, params):
        dst, src = dst_list, src_list
        if isinstance(dst, types.Array) and isinstance(src, types.Array):
            def addr_form(ctx, dst_list, src_list, params):
                d_off, d_cap = _addr_offsets(ctx, dst_list)
                s_off, s_cap = _addr_offsets(ctx, src_list)
                _run(ctx, d_off, s_off, d_cap, s_cap, params)
            return addr_form
        seqs = (types.List, types.UniTuple)
        if isinstance(dst, seqs) and isinstance(src, seqs):
            if as_dtype(dst.dtype.dtype).itemsize != 2 or \
                    as_dtype(src.dtype.dtype).itemsize != 2:
                return None        # typing error: only 16-bit lists

            def list_form(ctx, dst_list, src_list, params):
                dst, src = dst_list, src_list
                if len(dst) != LIST_SIZE or len(src) != LIST_SIZE:
                    _fail(0, 0, len(dst), len(src))
                base = np.int64(ctx[MEM].ctypes.data)
                d_off = np.empty(LIST_SIZE, np.int64)
                s_off = np.empty(LIST_SIZE, np.int64)
                d_cap = np.empty(LIST_SIZE, np.int64)
                s_cap = np.empty(LIST_SIZE, np.int64)
                for i in range(LIST_SIZE):
                    d_off[i] = np.int64(dst[i].ctypes.data) - base
                    d_cap[i] = dst[i].size * 2
                    s_off[i] = np.int64(src[i].ctypes.data) - base
                    s_cap[i] = src[i].size * 2
                _run(ctx, d_off, s_off, d_cap, s_cap, params)
            return list_form
        return None
