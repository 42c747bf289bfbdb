"""asc.LocalTensorAuto: local tensors allocated by the compiler, and the syncs `insert_sync` adds.

pyasc's `LocalTensorAuto(dtype, shape)` has no TPipe: the compiler hoists each allocation to the
kernel's entry and gives it a fixed place in the Unified Buffer (HoistUBAllocation), and, since
no queue orders the pipes that use it, inserts set_flag/wait_flag pairs between a pipe that
writes the tensor and another that then reads or overwrites it (the InsertSync pass;
`@asc.jit(insert_sync=True)`, implied by LocalTensorAuto).

Here each allocation *site* (file:line:column of the call, a hash) owns one region of UB, handed
out on its first execution in the block from the same bytes TPipe.init_buffer uses (so the two
together must fit UB); running the site again (a loop) gives the same region, as a static
allocation would. A later allocation at a site must fit the region of its first.

The syncs: every tensor argument of an op of a kernel that uses LocalTensorAuto passes through
`auto_use(ctx, pipe, t, other, write)` (compiled: wrapped by the lowering; interpreted: by the
generated functions), which finds the region `t` lies in and, when `pipe` differs from the pipe
that last wrote it (read after write, write after write) or from a pipe that read it since (write
after read), issues set_flag/wait_flag on the HardEvent between the two pipes through the same
primitives a kernel's own flags use: the NPU view records them (the simulated timeline orders
the pipes by them) and checked mode's visibility rule applies (a wait on an MTE2_* event makes
the GM->UB copies visible). Pipe pairs without a HardEvent get pipe_barrier(PIPE_ALL).
"""
import zlib

import numpy as np
from numba.core import config
from numba.extending import overload

from ..core import prim, level_of, local_offset
from ..enums import HardEvent, PipeID
from ..crosscore import ROLE_AIC
from ..errors import FAULT, fault, KernelError
from ..positions import LEVEL_NAMES, UB
from ..state import MAX_AUTO, N_EVENT_IDS, MEM, STATE
from .. import surface as S
from .sync import pipe_barrier, set_flag, wait_flag

# exported to `prims` (the surface row's primitive); the rest is reached through this module
# (lang/api.py, jit.py and generated kernels call auto_use / auto_reset / interp_args)
__all__ = ["local_tensor_auto_new"]

AUTO_EVENT_ID = N_EVENT_IDS - 1     # the event id of the flags insert_sync adds
_NPIPES = len(PipeID)
_PIPE_ALL = int(PipeID.PIPE_ALL)

# HardEvent between two pipes: _EVENT[src_pipe, dst_pipe] (-1: none)
_PIPE_OF = {"S": PipeID.PIPE_S, "V": PipeID.PIPE_V, "M": PipeID.PIPE_M,
            "MTE1": PipeID.PIPE_MTE1, "MTE2": PipeID.PIPE_MTE2, "MTE3": PipeID.PIPE_MTE3,
            "FIX": PipeID.PIPE_FIX}
_EVENT = np.full((_NPIPES, _NPIPES), -1, np.int64)
for _e in HardEvent:
    _a, _b = _e.name.split("_")
    _EVENT[int(_PIPE_OF[_a]), int(_PIPE_OF[_b])] = int(_e)

# pipe of a data move from level a to level b: _DIR[a + 1, b + 1] (index 0: GM; -1: none)
_LV = {"GM": 0, **{n: i + 1 for i, n in enumerate(LEVEL_NAMES)}}
_DIR = np.full((len(_LV), len(_LV)), -1, np.int64)
for (_a, _b), _p in S.DIRECTION_PIPES.items():
    _DIR[_LV[_a], _LV[_b]] = int(_p)


def site_id(file: str, line: int, col: int) -> int:
    """The id of the allocation site at file:line:col (both modes compute it alike)."""
    return zlib.crc32(f"{file}:{int(line)}:{int(col)}".encode()) & 0x7FFFFFFF


def _numel(shape):
    """Elements of a shape: an int or a tuple of ints."""
    if isinstance(shape, tuple):
        n = 1
        for d in shape:
            n *= int(d)
        return n
    return int(shape)


if not config.DISABLE_JIT:
    from numba import types

    @overload(_numel)
    def _numel_ov(shape):
        if isinstance(shape, types.Integer):
            return lambda shape: np.int64(shape)
        if isinstance(shape, types.BaseTuple):    # (4, dim2): maybe of mixed int types
            terms = " * ".join(f"np.int64(shape[{i}])" for i in range(len(shape))) or "1"
            ns = {"np": np}
            exec(f"def impl(shape):\n    return np.int64({terms})\n", ns)
            return ns["impl"]
        return None


@prim
def _auto_region(ctx, site, nbytes):
    """Index of the region of allocation site `site` (made on its first use in the block)."""
    st = ctx[STATE][0]
    n = st.nauto
    for k in range(n):
        if st.auto_site[k] == site:
            if nbytes > st.auto_bytes[k]:
                fault("asc.LocalTensorAuto: an allocation must fit the {} bytes its site "
                      "was given at its first allocation, got {} bytes", st.auto_bytes[k],
                      nbytes)
                raise KernelError(FAULT)
            return k
    if n >= MAX_AUTO:
        fault("asc.LocalTensorAuto: a kernel must have at most {} allocation sites, got "
              "one more", MAX_AUTO)
        raise KernelError(FAULT)
    if st.core_role == ROLE_AIC:
        fault("asc.LocalTensorAuto: an AIC of a MIX kernel must not allocate Unified Buffer "
              "(the cube core has no UB on Atlas A2: vector work runs on the AIVs, under "
              "asc.ascend_is_aiv()), got an allocation of {} bytes on AIC {}", nbytes,
              st.block_idx)
        raise KernelError(FAULT)
    cap = st.level_size[UB]
    used = st.level_used[UB]
    if used + nbytes > cap:
        fault("asc.LocalTensorAuto: the automatically allocated tensors and TPipe buffers "
              "must fit the {} bytes of VECCALC ({:level}), got {} bytes asked with {} "
              "bytes in use", cap, UB, nbytes, used)
        raise KernelError(FAULT)
    st.level_used[UB] = used + nbytes
    st.auto_site[n] = site
    st.auto_off[n] = st.level_base[UB] + used
    st.auto_bytes[n] = nbytes
    st.auto_wpipe[n] = -1
    st.auto_rmask[n] = 0
    st.auto_smask[n] = 0
    st.nauto = n + 1
    return n


@prim
def local_tensor_auto_new(ctx, dtype, shape, site):
    """LocalTensorAuto(dtype, shape): the tensor of allocation site `site`, in UB (VECCALC)."""
    isz = ctx[MEM][:0].view(dtype).itemsize
    n = _numel(shape)
    if n <= 0:
        fault("asc.LocalTensorAuto: shape must have at least one element, got {} elements",
              n)
        raise KernelError(FAULT)
    nbytes = (n * isz + 31) // 32 * 32
    k = _auto_region(ctx, site, nbytes)
    off = ctx[STATE][0].auto_off[k]
    return ctx[MEM][off:off + n * isz].view(dtype)


@prim
def auto_reset(ctx):
    """A new block: no regions (begin_block has freed UB)."""
    ctx[STATE][0].nauto = 0


@prim
def _sync(ctx, src, dst):
    e = _EVENT[src, dst]
    if e >= 0:
        set_flag(ctx, e, AUTO_EVENT_ID)
        wait_flag(ctx, e, AUTO_EVENT_ID)
    else:
        pipe_barrier(ctx, _PIPE_ALL)


@prim
def auto_use(ctx, pipe, t, other, write):
    """An op issued on `pipe` reads (write=0) or writes (write=1) tensor `t`; `pipe` < 0: a data
    move between `t` and `other`, whose pipe their levels decide. Returns `t`."""
    st = ctx[STATE][0]
    n = st.nauto
    if n == 0:
        return t
    off = local_offset(ctx, t)
    if off < 0:
        return t
    k = -1
    for i in range(n):
        if st.auto_off[i] <= off < st.auto_off[i] + st.auto_bytes[i]:
            k = i
            break
    if k < 0:
        return t
    p = pipe
    if p < 0:
        lt = level_of(ctx, t) + 1
        lo = level_of(ctx, other) + 1
        p = _DIR[lo, lt] if write else _DIR[lt, lo]
        if p < 0:
            p = 1       # PIPE_V
    w = st.auto_wpipe[k]
    if write:
        if w >= 0 and w != p and not (st.auto_smask[k] >> p) & 1:
            _sync(ctx, w, p)
        rm = st.auto_rmask[k]
        for q in range(_NPIPES):
            if q != p and q != w and (rm >> q) & 1:
                _sync(ctx, q, p)
        st.auto_wpipe[k] = p
        st.auto_rmask[k] = 0
        st.auto_smask[k] = 1 << p
    else:
        if w >= 0 and w != p and not (st.auto_smask[k] >> p) & 1:
            _sync(ctx, w, p)
            st.auto_smask[k] |= 1 << p
        st.auto_rmask[k] |= 1 << p
    return t


# ---- the interpreter's side (lang/api.py) ------------------------------------------------------

_WRITES = ("dst", "dst_list")


def interp_args(ctx, pipe, params, vals):
    """Pass the tensor values of an interpreted call through `auto_use` (when the block has
    LocalTensorAuto regions): `params` names the values (a `dst` is written, the rest read);
    `pipe` is the row's PipeID or surface.BY_DIRECTION."""
    p = -1 if pipe == S.BY_DIRECTION else int(pipe)
    arrays = [v for v in vals if isinstance(v, np.ndarray)]
    if not arrays:
        return
    for name, v in zip(params, vals):
        if isinstance(v, np.ndarray):
            other = next((a for a in arrays if a is not v), v)
            auto_use(ctx, p, v, other, 1 if name in _WRITES else 0)
