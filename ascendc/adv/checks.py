"""Run-time checks of `asc.adv.Matmul` (njit, called from compiled kernels as `_ADV.<name>` and
from the interpreter directly; `_ADV` also carries tilingops' record builders): a bad tiling or
mismatched tensors fail with the project's message style instead of a confusing error deep inside
a cube primitive."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ..lang.core import prim
from ..lang.errors import FAULT, KernelError, fault
from .tilingops import tiling_new, tiling_norm, tiling_set  # noqa: F401  (as _ADV.<name>)

# Matmul state (an int64 array per Matmul object; -1 = "not set, use the tiling's value")
S_TM, S_TN, S_TK = 0, 1, 2            # set_tail
S_OM, S_ON, S_OKA, S_OKB = 3, 4, 5, 6  # set_org_shape
S_SM, S_SN, S_SK = 7, 8, 9            # set_single_shape
S_TA, S_TB = 10, 11     # set_tensor_a/b: transpose (0/1), + 2 for a CubeFormat.NZ operand
S_BIAS = 12                           # bias enabled (set_bias / disable_bias)
S_INIT = 13                           # 1 after register_matmul(..., tiling) / init(tiling)
S_ITER = 14                           # iterate(): number of the current C tile (-1: none yet)
NSTATE = 16

__all__ = ["new_state", "mm_check_tiling", "mm_check_iterate", "S_TM", "S_TN", "S_TK", "S_OM",
           "S_ON", "S_OKA", "S_OKB", "S_SM", "S_SN", "S_SK", "S_TA", "S_TB", "S_BIAS", "S_INIT",
           "S_ITER", "NSTATE", "ws_f32", "mm_check_get_c", "tiling_new", "tiling_norm",
           "tiling_set", "second", "mm_check_get_c_atomic", "quant_check", "mm_batch_plan",
           "mm_check_tile", "ws_as", "mm_check_get_c_gm", "no_bias"]


@prim
def new_state():
    """A Matmul's state: every field unset (-1)."""
    return np.full(NSTATE, -1, np.int64)


@prim
def mm_check_tiling(t, a_isz, has_bias):
    """The TCubeTiling handed to register_matmul / init describes buffers this Matmul can use."""
    if t.base_m < 16 or t.base_m % 16 != 0:
        fault("asc.adv.Matmul.init: tiling.base_m must be a positive multiple of 16, "
              "got base_m={}", t.base_m)
        raise KernelError(FAULT)
    if t.base_n < 16 or t.base_n % 16 != 0:
        fault("asc.adv.Matmul.init: tiling.base_n must be a positive multiple of 16, "
              "got base_n={}", t.base_n)
        raise KernelError(FAULT)
    c0 = 32 // a_isz if a_isz > 0 else 16
    if t.base_k < c0 or t.base_k % c0 != 0:
        fault("asc.adv.Matmul.init: tiling.base_k must be a positive multiple of C0 "
              "(32 bytes / sizeof(A) = {}), got base_k={}", c0, t.base_k)
        raise KernelError(FAULT)
    if t.step_k_a < 1 or t.step_k_b < 1 or t.step_m < 1 or t.step_n < 1:
        fault("asc.adv.Matmul.init: tiling.step_m, step_n, step_k_a and step_k_b must "
              "be >= 1, got step_m={} step_n={} step_k_a={} step_k_b={}", t.step_m,
              t.step_n, t.step_k_a, t.step_k_b)
        raise KernelError(FAULT)
    if t.depth_a1 < t.step_m * t.step_k_a or t.depth_b1 < t.step_n * t.step_k_b:
        fault("asc.adv.Matmul.init: tiling.depth_a1 must be >= step_m*step_k_a and "
              "depth_b1 >= step_n*step_k_b, got depth_a1={} depth_b1={}", t.depth_a1,
              t.depth_b1)
        raise KernelError(FAULT)
    for v in (t.db_l0a, t.db_l0b, t.db_l0c):
        if v != 1 and v != 2:
            fault("asc.adv.Matmul.init: tiling.db_l0a, db_l0b and db_l0c must be 1 or "
                  "2, got db_l0a={} db_l0b={} db_l0c={}", t.db_l0a, t.db_l0b,
                  t.db_l0c)
            raise KernelError(FAULT)
    if has_bias and t.base_n * 4 > 1024:
        fault("asc.adv.Matmul.init: tiling.base_n must be <= 256 with a bias (the "
              "bias table BT holds 1024 bytes), got base_n={}", t.base_n)
        raise KernelError(FAULT)


@prim
def _pick(v, default):
    return default if v < 0 else v


@prim
def _check_operands(api, st, t, a_isz, b_isz, c_isz, ta_ok, tb_ok, ga, gb):
    """The checks iterate_all, iterate_batch and iterate share: tiling set, A/B as declared, a
    dtype combination the cube has (by element size: f16/bf16 -> f16/bf16/f32 C, f32 -> f32,
    int8 -> int32), sizes >= 1."""
    if st[S_INIT] != 1:
        fault("{}: the Matmul must be initialised first (register_matmul(pipe, workspace, mm, "
              "tiling) or mm.init(tiling)), got no tiling", api)
        raise KernelError(FAULT)
    if ga.itemsize != a_isz or gb.itemsize != b_isz:
        fault("{}: tensor dtypes must match the MatmulTypes, got element sizes a={} b={} for "
              "MatmulType sizes a={} b={}", api, ga.itemsize, gb.itemsize, a_isz, b_isz)
        raise KernelError(FAULT)
    if a_isz != b_isz or (a_isz != 1 and a_isz != 2 and a_isz != 4):
        fault("{}: a and b must both be int8, both float16/bfloat16 or both float32, got "
              "element sizes a={} b={}", api, a_isz, b_isz)
        raise KernelError(FAULT)
    if (a_isz == 1 and c_isz != 4) or (a_isz == 4 and c_isz != 4) or \
            (a_isz == 2 and c_isz != 2 and c_isz != 4):
        fault("{}: c must be int32 for int8 a and b (quantised int8 -> float16 C is not "
              "emulated), float32 for float32 a and b, float16/bfloat16/float32 for 16-bit a "
              "and b, got element sizes a={} c={}", api, a_isz, c_isz)
        raise KernelError(FAULT)
    if st[S_TA] == 3 or st[S_TB] == 3:
        fault("{}: transpose must be False for a CubeFormat.NZ operand (transposed NZ operands "
              "are not emulated), got transpose=True for {}", api,
              "a" if st[S_TA] == 3 else "b")
        raise KernelError(FAULT)
    if (st[S_TA] == 2 or st[S_TB] == 2) and a_isz == 1:
        fault("{}: a CubeFormat.NZ operand must be float16, bfloat16 or float32 (int8 NZ "
              "operands are not emulated), got element size a={}", api, a_isz)
        raise KernelError(FAULT)
    if st[S_TA] == 1 and not ta_ok:
        fault("asc.adv.Matmul.set_tensor_a: transpose must be False unless "
              "MatmulType a has is_trans=True, got transpose=True")
        raise KernelError(FAULT)
    if st[S_TB] == 1 and not tb_ok:
        fault("asc.adv.Matmul.set_tensor_b: transpose must be False unless "
              "MatmulType b has is_trans=True, got transpose=True")
        raise KernelError(FAULT)
    m = _pick(st[S_TM], _pick(st[S_SM], t.single_core_m))
    n = _pick(st[S_TN], _pick(st[S_SN], t.single_core_n))
    k = _pick(st[S_TK], _pick(st[S_SK], t.single_core_k))
    if m < 1 or n < 1 or k < 1:
        fault("{}: m, n and k (set_tail / set_single_shape / tiling.single_core_*) must be "
              ">= 1, got m={} n={} k={}", api, m, n, k)
        raise KernelError(FAULT)


@prim
def mm_check_iterate(st, t, a_isz, b_isz, c_isz, ta_ok, tb_ok, ga, gb, gc, en_atomic):
    """iterate_all's preconditions: tiling set, operands as declared, sizes >= 1."""
    api = "asc.adv.Matmul.iterate_all"
    if en_atomic != 0:
        fault("asc.adv.Matmul.iterate_all: en_atomic must be 0 (atomic accumulation "
              "into C is not emulated), got en_atomic={}", en_atomic)
        raise KernelError(FAULT)
    if gc.itemsize != c_isz:
        fault("{}: tensor dtypes must match the MatmulTypes, got element size c={} for "
              "MatmulType size c={}", api, gc.itemsize, c_isz)
        raise KernelError(FAULT)
    _check_operands(api, st, t, a_isz, b_isz, c_isz, ta_ok, tb_ok, ga, gb)


@prim
def mm_check_tile(st, t, a_isz, b_isz, c_isz, ta_ok, tb_ok, ga, gb):
    """iterate()'s preconditions (C is given later, to get_tensor_c)."""
    _check_operands("asc.adv.Matmul.iterate", st, t, a_isz, b_isz, c_isz, ta_ok, tb_ok, ga, gb)


@prim
def mm_batch_plan(t, layout_a, layout_b, layout_c, batch_a, batch_b, en_seq, stride_a, stride_b):
    """IterateBatch's loop: (batch, batches per A, batches per B, A/B/C strides in elements).
    pyasc iterate_batch's constraints (python/asc/language/adv/utils.py): NORMAL layout only
    here, batch_a and batch_b multiples of each other, en_sequential_write False for GM C;
    matrix_stride_a/b default (0) to one whole matrix of the layout (s x d)."""
    api = "asc.adv.Matmul.iterate_batch"
    if layout_a != 4 or layout_b != 4 or layout_c != 4:
        fault("{}: the MatmulTypes of a, b and c must have layout LayoutMode.NORMAL (the "
              "only batch layout emulated), got layouts a={} b={} c={}", api, layout_a,
              layout_b, layout_c)
        raise KernelError(FAULT)
    if batch_a < 1 or batch_b < 1 or (batch_a % batch_b != 0 and batch_b % batch_a != 0):
        fault("{}: batch_a and batch_b must be >= 1 and one a multiple of the other, got "
              "batch_a={} batch_b={}", api, batch_a, batch_b)
        raise KernelError(FAULT)
    if en_seq:
        fault("{}: en_sequential_write must be False when C is a GlobalTensor, got "
              "en_sequential_write=True", api)
        raise KernelError(FAULT)
    if stride_a < 0 or stride_b < 0:
        fault("{}: matrix_stride_a and matrix_stride_b must be >= 0, got "
              "matrix_stride_a={} matrix_stride_b={}", api, stride_a, stride_b)
        raise KernelError(FAULT)
    batch = max(batch_a, batch_b)
    # (layout fields left 0 by a hand-made tiling: the org shape's whole matrices)
    la = t.a_layout_info_s * t.a_layout_info_d
    lb = t.b_layout_info_s * t.b_layout_info_d
    lc = t.c_layout_info_s1 * t.c_layout_info_s2
    sa = stride_a if stride_a > 0 else (la if la > 0 else t.m * t.k_a)
    sb = stride_b if stride_b > 0 else (lb if lb > 0 else t.k_b * t.n)
    sc = lc if lc > 0 else t.m * t.n
    return batch, batch // batch_a, batch // batch_b, sa, sb, sc


@prim
def ws_f32(w):
    """The GM workspace (bytes) as float32: where get_tensor_c stages C tiles (mmiter.py)."""
    return w.view(np.float32)


@prim
def ws_as(w, dst):
    """The GM workspace (any dtype) viewed with dst's dtype: get_tensor_c stages a C tile of
    dst's dtype there (mmkernel.mm_get_tensor_c)."""
    return w.view(dst.dtype)


@prim
def mm_check_get_c_gm(st, c_isz, gc):
    """get_tensor_c(gm)'s preconditions (and the first ones of the local form): a tile computed
    by iterate(), C's dtype."""
    if st[S_ITER] < 0:
        fault("asc.adv.Matmul.get_tensor_c: iterate() must return True first, got "
              "no current C tile")
        raise KernelError(FAULT)
    if gc.itemsize != c_isz:
        fault("asc.adv.Matmul.get_tensor_c: the tensor's dtype must be MatmulType c's, got "
              "element size {} for MatmulType size c={}", gc.itemsize, c_isz)
        raise KernelError(FAULT)


@prim
def mm_check_get_c(st, t, c_isz, ws, dst, ndst):
    """get_tensor_c(local)'s preconditions: a tile computed by iterate(), a local tensor of C's
    dtype that holds base_m x base_n, a workspace that holds this block's tile."""
    mm_check_get_c_gm(st, c_isz, dst)
    if ndst < t.base_m * t.base_n:
        fault("asc.adv.Matmul.get_tensor_c: the local tensor must hold base_m * "
              "base_n = {} elements, got {}", t.base_m * t.base_n, ndst)
        raise KernelError(FAULT)
    if ws.size * ws.itemsize < c_isz * t.base_m * t.base_n:
        fault("asc.adv.Matmul.get_tensor_c: the workspace given to register_matmul "
              "must hold a base_m x base_n tile of C per block, got {} bytes",
              ws.size * ws.itemsize)
        raise KernelError(FAULT)


def no_bias(a):
    """An empty bias of the dtype a bias of operand `a` has (int32 for int8 A, float32
    otherwise): what a compiled kernel holds when set_bias did not run."""
    return np.empty(0, np.int32 if a.itemsize == 1 else np.float32)


@overload(no_bias)
def _no_bias_ov(a):
    dt = np.int32 if a.dtype == types.int8 else np.float32
    return lambda a: np.empty(0, dt)


@prim
def second(a, b):
    """`b` (after `a` was evaluated: a check run inside an expression)."""
    return b


@prim
def mm_check_get_c_atomic(en_atomic):
    if en_atomic != 0:
        fault("asc.adv.Matmul.get_tensor_c: en_atomic must be 0 (atomic "
              "accumulation is not emulated), got en_atomic={}", en_atomic)
        raise KernelError(FAULT)


@prim
def quant_check(dst_isz, src_isz, dst_n, src_n, tmp_bytes, count, calc, work):
    """asc.adv.quant's arguments, as CANN's AscendQuant asserts them (IsQuantValid): int8 dst,
    half/float src, calCount within both tensors, config.work_local_size within temp_buffer,
    a temporary buffer of at least one 32-half chunk."""
    if dst_isz != 1 or (src_isz != 2 and src_isz != 4):
        fault("asc.adv.quant: dst must be int8 and src float16 or float32, got element sizes "
              "dst={} src={}", dst_isz, src_isz)
        raise KernelError(FAULT)
    n = src_n if count < 0 else count
    chunk_bytes = tmp_bytes
    if calc != 0 and work != 0:
        n = calc
        chunk_bytes = work
        if work > tmp_bytes:
            fault("asc.adv.quant: config.work_local_size must not exceed temp_buffer's size "
                  "({} bytes), got work_local_size={}", tmp_bytes, work)
            raise KernelError(FAULT)
    if n > src_n or n > dst_n:
        fault("asc.adv.quant: count must be <= the sizes of src ({}) and dst ({}), got "
              "count={}", src_n, dst_n, n)
        raise KernelError(FAULT)
    if chunk_bytes // 2 // 32 == 0:
        fault("asc.adv.quant: temp_buffer must hold at least 64 bytes (32 halfs), got {} "
              "bytes", chunk_bytes)
        raise KernelError(FAULT)
