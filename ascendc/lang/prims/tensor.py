"""Tensor handles: GM binding and views, scalar element access, debug dumps; the 16 x 16
`transpose` (a whole-tensor rearrangement, no mask or repeat parameters)."""
import numpy as np

from .. import core
from ..core import prim, check_gm, check_local, level_name, level_of, local_offset
from ..dtypes import ld, st
from ..errors import FAULT, fault, KernelError
from .. import trace
from ..gmreach import note as gm_note
from ..state import FLAG_GM_ORDER, FLAG_REPORT_OVERREACH, MEM, STATE
from .crosscore import gm_order
from .movecore import pair_info
from ..visibility import in_flight, PIPE_S, vis_check, vector_reads
from ..positions import NPOS, POS_LEVEL
# the kernel-type primitives replace sync.py's get_sub_block_idx/num (exported after them)
from .ktype import (get_sub_block_idx, get_sub_block_num, get_task_ratio,  # noqa: F401
                    ascend_is_aic, ascend_is_aiv)
# UB rearrangements with their own param structs live in transform.py (exported from here)
from .transform import copy_rep, transpose_ext  # noqa: F401
from .trans5hd import trans_data_to_5hd  # noqa: F401
from .bilinear import bilinear_interpolation  # noqa: F401

_OP_GET, _OP_SET = trace.op("LocalTensor.get_value"), trace.op("LocalTensor.set_value")
_OP_TRANSPOSE = trace.op("transpose")

__all__ = ["ga_add", "gt_bind", "sub_view", "get_value", "set_value", "dump_tensor", "tensor_size",
           "tensor_length", "reinterpret_cast", "position_level", "phy_addr", "local_tensor_new",
           "set_size", "set_buffer_len", "set_addr_with_offset",
           "get_sub_block_idx", "get_sub_block_num", "get_task_ratio", "ascend_is_aic",
           "ascend_is_aiv", "transpose16", "copy_rep",
           "transpose_ext", "trans_data_to_5hd", "bilinear_interpolation"]


@prim
def ga_add(ctx, a, n):
    """GlobalAddress + n (elements): a view starting n elements later. Forming an address past
    the argument's end is no access (the NPU only faults on one): it is an empty view at the end,
    so any element read or written through it is a GM trap then (which names the argument's
    end as its first element). An address before the argument's start is trapped here."""
    if n < 0:
        check_gm(ctx, "GlobalAddress +", a, n, 0, False)
    if n > a.size:
        return a[a.size:]
    return a[n:]


@prim
def gt_bind(ctx, a, size):
    """GlobalTensor.set_global_buffer(addr, size): the first `size` elements (all if size < 0)."""
    if size < 0:
        return a
    check_gm(ctx, "GlobalTensor.set_global_buffer", a, 0, size, False)
    return a[:size]


@prim
def sub_view(ctx, t, i):
    """t[i:] / t[i]: a tensor view starting at element i (pyasc semantics: a view, not a scalar)."""
    if i < 0 or i > t.size:
        if local_offset(ctx, t) < 0:
            check_gm(ctx, "GlobalTensor[]", t, i, 0, False)
        fault("LocalTensor[]: offset must be in [0, {}], got offset={} on a {:level} "
              "tensor", t.size, i, level_of(ctx, t))
        raise KernelError(FAULT)
    return t[i:]


@prim
def _check_index(ctx, t, i, api, write):
    if i < 0 or i >= t.size:
        if local_offset(ctx, t) < 0:
            check_gm(ctx, api, t, i, 1, write)
        fault("{}: index must be in [0, {}), got index={} on a {:level} tensor", api,
              t.size, i, level_of(ctx, t))
        raise KernelError(FAULT)
    cs = ctx[STATE][0]
    if cs.options & (FLAG_REPORT_OVERREACH | FLAG_GM_ORDER) and local_offset(ctx, t) < 0:
        addr = np.int64(t.ctypes.data) + i * t.itemsize
        if cs.options & FLAG_REPORT_OVERREACH:
            gm_note(cs, addr, t.itemsize)        # gmreach.py
        if cs.options & FLAG_GM_ORDER and cs.xcore != 0:
            gm_order(cs, 6 if write else 5, addr, t.itemsize, 1 if write else 0)   # rt.gmorder


@prim
def get_value(ctx, t, i):
    _check_index(ctx, t, i, "get_value", False)
    if in_flight(ctx) and local_offset(ctx, t) >= 0:      # visibility.py
        vis_check(ctx, "get_value", "the element", PIPE_S,
                  local_offset(ctx, t) + i * t.itemsize, t.itemsize)
    trace.scalar(ctx, _OP_GET)
    trace.access(ctx, _OP_GET, np.int64(t.ctypes.data) + i * t.itemsize, t.itemsize, 0)
    return ld(t, i)


@prim
def set_value(ctx, t, i, v):
    _check_index(ctx, t, i, "set_value", True)
    st(t, i, v)
    trace.scalar(ctx, _OP_SET)
    trace.access(ctx, _OP_SET, np.int64(t.ctypes.data) + i * t.itemsize, t.itemsize, 1)


@prim
def dump_tensor(ctx, t, desc, n):
    m = min(n, t.size)
    print("DumpTensor: desc=", desc, "block_idx=", ctx[STATE][0].block_idx, "position=",
          level_name(level_of(ctx, t)), "size=", m)
    for i in range(m):
        print(ld(t, i))


# ---- tensor properties (methods of the surface table) ------------------------------------------

@prim
def tensor_size(ctx, t):
    """get_size(): elements of the tensor."""
    return t.size


@prim
def tensor_length(ctx, t):
    """get_length(): bytes of the tensor."""
    return t.size * t.itemsize


@prim
def reinterpret_cast(ctx, t, dtype):
    """reinterpret_cast(dtype): the same bytes viewed as another dtype."""
    return t.view(dtype)


@prim
def _relength(ctx, t, start, nbytes, api, what, value):
    """t's dtype over `nbytes` bytes (whole elements) from byte `start` of local memory, which
    must lie in the level holding t (LocalTensor::SetSize checks the position's memory)."""
    lv = level_of(ctx, t)
    if lv < 0:
        fault("{}: tensor must be a LocalTensor, got a GM tensor", api)
        raise KernelError(FAULT)
    if value < 0:
        fault("{}: {} must be >= 0, got {}={}", api, what, what, value)
        raise KernelError(FAULT)
    st = ctx[STATE][0]
    base = st.level_base[lv]
    if start + nbytes > base + st.level_size[lv]:
        fault("{}: the tensor must end inside the {} bytes of {:level}, got {}={} (bytes {} "
              "to {} of {:level})", api, st.level_size[lv], lv, what, value, start - base,
              start + nbytes - base, lv)
        raise KernelError(FAULT)
    return ctx[MEM][start:start + nbytes - nbytes % t.itemsize].view(t.dtype)


@prim
def set_size(ctx, t, size):
    """set_size(n): the tensor's first n elements, read on past its end if n is larger
    (as far as its memory goes)."""
    return _relength(ctx, t, local_offset(ctx, t), np.int64(size) * t.itemsize,
                     "LocalTensor.set_size", "size", size)


@prim
def set_buffer_len(ctx, t, data_len):
    """set_buffer_len(bytes): the tensor over `data_len` bytes from its address."""
    return _relength(ctx, t, local_offset(ctx, t), np.int64(data_len),
                     "LocalTensor.set_buffer_len", "data_len", data_len)


@prim
def set_addr_with_offset(ctx, t, src, offset):
    """t.set_addr_with_offset(src, offset): t's dtype from src's address + offset elements of
    src, over src's length in bytes (Ascend C copies src's address and dataLen, then moves the
    address)."""
    if local_offset(ctx, src) < 0:
        fault("LocalTensor.set_addr_with_offset: src must be a LocalTensor, got a GM tensor")
        raise KernelError(FAULT)
    start = local_offset(ctx, src) + np.int64(offset) * src.itemsize
    return _relength(ctx, src[:0].view(t.dtype), start, np.int64(src.size) * src.itemsize,
                     "LocalTensor.set_addr_with_offset", "offset", offset)


@prim
def position_level(ctx, t):
    """get_position_level(): "UB", "L1", "L0A", "L0B", "L0C", "BT", or "GM"."""
    return level_name(level_of(ctx, t))


@prim
def phy_addr(ctx, t, offset):
    """GlobalTensor.get_phy_addr(offset): the address of element `offset`."""
    return np.int64(t.ctypes.data) + offset * t.itemsize


@prim
def local_tensor_new(ctx, dtype, pos, addr, tile_size):
    """LocalTensor(dtype, pos, addr, tile_size): the static tensor of `tile_size` elements at byte
    `addr` of the local memory of TPosition `pos` (pyasc tutorial 01; no TPipe involved)."""
    lv = POS_LEVEL[pos] if 0 <= pos < NPOS else -1
    if lv < 0:
        fault("LocalTensor(dtype, pos, addr, tile_size): pos must be a local "
              "TPosition (VECIN, VECOUT, VECCALC, A1, B1, A2, B2, CO1, ...), got "
              "pos={}", pos)
        raise KernelError(FAULT)
    st = ctx[STATE][0]
    isz = ctx[MEM][:0].view(dtype).itemsize
    if addr < 0 or addr % 32 != 0:
        fault("LocalTensor(dtype, pos, addr, tile_size): addr must be a multiple of "
              "32 bytes >= 0, got addr={}", addr)
        raise KernelError(FAULT)
    if tile_size < 0 or addr + tile_size * isz > st.level_size[lv]:
        fault("LocalTensor(dtype, pos, addr, tile_size): addr + tile_size * sizeof "
              "must fit the {} bytes of {:level}, got addr={} tile_size={}",
              st.level_size[lv], lv, addr, tile_size)
        raise KernelError(FAULT)
    off = st.level_base[lv] + addr
    return ctx[MEM][off:off + tile_size * isz].view(dtype)


# ---- transpose ----------------------------------------------------------------------------------

@prim
def _transpose_fail_dtype(dsz, ssz):
    fault("transpose: dst and src must have the same 2-byte dtype (uint16, int16, float16), "
          "got element sizes dst={} src={}", dsz, ssz)
    raise KernelError(FAULT)


@prim
def _transpose_fail_level(ctx, what, t):
    fault("transpose: {} must be a local tensor in UB (VECIN, VECCALC, VECOUT), got a tensor "
          "in {:level}", what, level_of(ctx, t))
    raise KernelError(FAULT)


@prim
def transpose16(ctx, dst, src):
    """Mirrors `AscendC::Transpose(dst, src)`: dst[j, i] = src[i, j] over one 16 x 16 block of
    2-byte elements in UB (src is read whole first, so dst may be src)."""
    same = pair_info(dst, src)[0]
    if dst.itemsize != 2 or src.itemsize != 2 or not same:
        _transpose_fail_dtype(dst.itemsize, src.itemsize)
    if level_of(ctx, dst) != core.UB:
        _transpose_fail_level(ctx, "dst", dst)
    if level_of(ctx, src) != core.UB:
        _transpose_fail_level(ctx, "src", src)
    check_local(ctx, "transpose", "dst", dst, 256)
    check_local(ctx, "transpose", "src", src, 256)
    vector_reads(ctx, "transpose", "src", src, 512)
    block = src[:256].copy()
    for i in range(16):
        for j in range(16):
            dst[j * 16 + i] = block[i * 16 + j]
    core.count(ctx, core.C_VEC_OPS, 256)
    trace.vec(ctx, _OP_TRANSPOSE, 2, 2, True)
    trace.tensor_access(ctx, _OP_TRANSPOSE, src, 512, 0)       # (the sanitizer's records)
    trace.tensor_access(ctx, _OP_TRANSPOSE, dst, 512, 1)
