"""Run-time checks of `asc.adv.Matmul` (njit, called from compiled kernels as `_ADV.<name>` and
from the interpreter directly): a bad tiling or mismatched tensors fail with the project's message
style instead of a confusing error deep inside a cube primitive."""
from __future__ import annotations

import numpy as np

from ..lang.core import prim
from ..lang.errors import KernelError

# Matmul state (an int64 array per Matmul object; -1 = "not set, use the tiling's value")
S_TM, S_TN, S_TK = 0, 1, 2            # set_tail
S_OM, S_ON, S_OKA, S_OKB = 3, 4, 5, 6  # set_org_shape
S_SM, S_SN, S_SK = 7, 8, 9            # set_single_shape
S_TA, S_TB = 10, 11                   # set_tensor_a/b transpose (0/1)
S_BIAS = 12                           # bias enabled (set_bias / disable_bias)
S_INIT = 13                           # 1 after register_matmul(..., tiling) / init(tiling)
NSTATE = 16

__all__ = ["new_state", "mm_check_tiling", "mm_check_iterate", "S_TM", "S_TN", "S_TK", "S_OM",
           "S_ON", "S_OKA", "S_OKB", "S_SM", "S_SN", "S_SK", "S_TA", "S_TB", "S_BIAS", "S_INIT",
           "NSTATE"]


@prim
def new_state():
    """A Matmul's state: every field unset (-1)."""
    return np.full(NSTATE, -1, np.int64)


@prim
def mm_check_tiling(t, a_isz, has_bias):
    """The TCubeTiling handed to register_matmul / init describes buffers this Matmul can use."""
    if t.base_m < 16 or t.base_m % 16 != 0:
        raise KernelError("asc.adv.Matmul.init: tiling.base_m must be a positive multiple of 16, "
                          "got base_m={}", t.base_m)
    if t.base_n < 16 or t.base_n % 16 != 0:
        raise KernelError("asc.adv.Matmul.init: tiling.base_n must be a positive multiple of 16, "
                          "got base_n={}", t.base_n)
    c0 = 32 // a_isz if a_isz > 0 else 16
    if t.base_k < c0 or t.base_k % c0 != 0:
        raise KernelError("asc.adv.Matmul.init: tiling.base_k must be a positive multiple of C0 "
                          "(32 bytes / sizeof(A) = {}), got base_k={}", c0, t.base_k)
    if t.step_k_a < 1 or t.step_k_b < 1 or t.step_m < 1 or t.step_n < 1:
        raise KernelError("asc.adv.Matmul.init: tiling.step_m, step_n, step_k_a and step_k_b must "
                          "be >= 1, got step_m={} step_n={} step_k_a={} step_k_b={}", t.step_m,
                          t.step_n, t.step_k_a, t.step_k_b)
    if t.depth_a1 < t.step_m * t.step_k_a or t.depth_b1 < t.step_n * t.step_k_b:
        raise KernelError("asc.adv.Matmul.init: tiling.depth_a1 must be >= step_m*step_k_a and "
                          "depth_b1 >= step_n*step_k_b, got depth_a1={} depth_b1={}", t.depth_a1,
                          t.depth_b1)
    for v in (t.db_l0a, t.db_l0b, t.db_l0c):
        if v != 1 and v != 2:
            raise KernelError("asc.adv.Matmul.init: tiling.db_l0a, db_l0b and db_l0c must be 1 or "
                              "2, got db_l0a={} db_l0b={} db_l0c={}", t.db_l0a, t.db_l0b,
                              t.db_l0c)
    if has_bias and t.base_n * 4 > 1024:
        raise KernelError("asc.adv.Matmul.init: tiling.base_n must be <= 256 with a bias (the "
                          "bias table BT holds 1024 bytes), got base_n={}", t.base_n)


@prim
def _pick(v, default):
    return default if v < 0 else v


@prim
def mm_check_iterate(st, t, a_isz, b_isz, c_isz, ta_ok, tb_ok, ga, gb, gc, en_atomic):
    """iterate_all's preconditions: tiling set, operands as declared, sizes >= 1."""
    if st[S_INIT] != 1:
        raise KernelError("asc.adv.Matmul.iterate_all: the Matmul must be initialised first "
                          "(register_matmul(pipe, workspace, mm, tiling) or mm.init(tiling)), "
                          "got no tiling")
    if en_atomic != 0:
        raise KernelError("asc.adv.Matmul.iterate_all: en_atomic must be 0 (atomic accumulation "
                          "into C is not emulated), got en_atomic={}", en_atomic)
    if ga.itemsize != a_isz or gb.itemsize != b_isz or gc.itemsize != c_isz:
        raise KernelError("asc.adv.Matmul.iterate_all: tensor dtypes must match the MatmulTypes, "
                          "got element sizes a={} b={} c={} for MatmulType sizes a={} b={} c={}",
                          ga.itemsize, gb.itemsize, gc.itemsize, a_isz, b_isz, c_isz)
    if a_isz != b_isz or (a_isz != 2 and a_isz != 4):
        raise KernelError("asc.adv.Matmul.iterate_all: a and b must both be float16/bfloat16 or "
                          "both float32, got element sizes a={} b={}", a_isz, b_isz)
    if st[S_TA] == 1 and not ta_ok:
        raise KernelError("asc.adv.Matmul.set_tensor_a: transpose must be False unless "
                          "MatmulType a has is_trans=True, got transpose=True")
    if st[S_TB] == 1 and not tb_ok:
        raise KernelError("asc.adv.Matmul.set_tensor_b: transpose must be False unless "
                          "MatmulType b has is_trans=True, got transpose=True")
    m = _pick(st[S_TM], _pick(st[S_SM], t.single_core_m))
    n = _pick(st[S_TN], _pick(st[S_SN], t.single_core_n))
    k = _pick(st[S_TK], _pick(st[S_SK], t.single_core_k))
    if m < 1 or n < 1 or k < 1:
        raise KernelError("asc.adv.Matmul.iterate_all: m, n and k (set_tail / set_single_shape / "
                          "tiling.single_core_*) must be >= 1, got m={} n={} k={}", m, n, k)
