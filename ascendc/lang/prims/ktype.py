"""Kernel types (Ascend C `KERNEL_TYPE_*`, pyasc `asc.runtime.config.KernelType`) and the system
values that depend on them: which core an instance runs on and how its blocks are numbered.

On a separated-architecture SoC (Atlas A2/A3, the 910B profiles) an AI Core group is one cube core
(AIC) and two vector cores (AIV). The launch's kernel type says which of them run the kernel:

- AIV_ONLY / AIC_ONLY: `block_dim` instances on vector / cube cores; GetBlockIdx in
  [0, block_dim), GetSubBlockNum = GetTaskRatio = 1.
- MIX_AIC_1_2: `block_dim` groups of 1 AIC + 2 AIV are started (SetBlockDim, CANN 8.0
  atlasophostapi_07_0060: for fused cube/vector operators blockDim sets how many AIC+AIV
  combinations run). GetBlockIdx is in [0, block_dim) on the AIC and in [0, 2 * block_dim)
  on the AIVs (GetBlockIdx, atlasascendc_api_07_0185: with AIC:AIV = 1:2 the AIC range is
  [0, numBlocks), the AIV range [0, 2 * numBlocks)); GetBlockNum is the configured numBlocks;
  GetSubBlockIdx is the AIV's index in its AI Core, 0 or 1 (GetSubBlockIdx(ISASI)); the
  table of GetSubBlockNum(ISASI) (atlasascendc_api_07_0280) and GetTaskRatio gives 2 on an
  AIV and 1 on the AIC.
- MIX_AIC_1_1: 1 AIC + 1 AIV per group, both numbered [0, block_dim), ratio 1.

A hand-written MIX kernel runs as the NPU runs it: each block is a group whose AIC instance and
one or two AIV instances run at once (rt.mixlaunch), each taking its branch with ascend_is_aic() /
ascend_is_aiv() and synchronising through cross-core flags (prims/crosscore.py); the launcher
writes the instance's role and sub-block into its core state (CORE_STATE.core_role / sub_idx).
A kernel that registers a Matmul object (pyasc's MIX detection) runs the same way: its AIC
serves the Matmul calls of its AIVs (ascendc/adv/kfc.py).

AICORE (an emulator value, not a CANN one) is the kind of the kernels that call cube
instructions (mmad, load_data, fixpipe) directly without the Matmul API: one block owns a whole
AI Core (cube and vector units), numbered [0, block_dim), and both ascend_is_aic() and
ascend_is_aiv() are true in it.

The launcher writes the kernel type into bits KT_SHIFT.. of the core's `options` word; the
primitives here read it.
"""
from ..core import prim
from ..crosscore import ROLE_AIC
from ..state import STATE

__all__ = ["get_sub_block_idx", "get_sub_block_num", "get_task_ratio", "ascend_is_aic",
           "ascend_is_aiv"]

# values of pyasc's KernelType (python/asc/runtime/config.py), plus the emulator's AICORE
AIV_ONLY, AIC_ONLY, MIX_AIV_HARD_SYNC, MIX_AIC_HARD_SYNC = 0, 1, 2, 3
MIX_AIV_1_0, MIX_AIC_1_0, MIX_AIC_1_1, MIX_AIC_1_2 = 4, 5, 6, 7
AICORE = 15
KERNEL_TYPES = {"AIV_ONLY": AIV_ONLY, "AIC_ONLY": AIC_ONLY,
                "MIX_AIV_HARD_SYNC": MIX_AIV_HARD_SYNC, "MIX_AIC_HARD_SYNC": MIX_AIC_HARD_SYNC,
                "MIX_AIV_1_0": MIX_AIV_1_0, "MIX_AIC_1_0": MIX_AIC_1_0,
                "MIX_AIC_1_1": MIX_AIC_1_1, "MIX_AIC_1_2": MIX_AIC_1_2, "AICORE": AICORE}
KT_SHIFT, KT_MASK = 16, 0xF      # bits of CORE_STATE.options that hold the kernel type


def instances_per_block(kt: int) -> int:
    """Kernel instances the emulator runs per block of `block_dim` (AIVs per group of a MIX)."""
    return 2 if kt == MIX_AIC_1_2 else 1


@prim
def core_kernel_type(ctx):
    return (ctx[STATE][0].options >> KT_SHIFT) & KT_MASK


@prim
def get_sub_block_idx(ctx):
    """GetSubBlockIdx: the AIV's index in its AI Core group (0 or 1 in MIX_AIC_1_2), else 0."""
    st = ctx[STATE][0]
    if st.core_role != 0:
        return st.sub_idx
    if core_kernel_type(ctx) == MIX_AIC_1_2:
        return ctx[STATE][0].block_idx % 2
    return ctx[STATE][0].block_idx * 0


@prim
def get_sub_block_num(ctx):
    """GetSubBlockNum: AIVs per AI Core group as seen from this core (2 on an AIV of
    MIX_AIC_1_2, else 1)."""
    return 2 if core_kernel_type(ctx) == MIX_AIC_1_2 and ctx[STATE][0].core_role != ROLE_AIC else 1


@prim
def get_task_ratio(ctx):
    """GetTaskRatio: the same table as GetSubBlockNum (separated architecture)."""
    return 2 if core_kernel_type(ctx) == MIX_AIC_1_2 and ctx[STATE][0].core_role != ROLE_AIC else 1


@prim
def ascend_is_aic(ctx):
    """ASCEND_IS_AIC: does this instance run on a cube core?"""
    role = ctx[STATE][0].core_role
    if role != 0:
        return role == ROLE_AIC
    k = core_kernel_type(ctx)
    return k == AIC_ONLY or k == MIX_AIC_HARD_SYNC or k == MIX_AIC_1_0 or k == AICORE


@prim
def ascend_is_aiv(ctx):
    """ASCEND_IS_AIV: does this instance run on a vector core? (the instances of a MIX kernel
    are its AIVs)"""
    role = ctx[STATE][0].core_role
    if role != 0:
        return role != ROLE_AIC
    k = core_kernel_type(ctx)
    return not (k == AIC_ONLY or k == MIX_AIC_HARD_SYNC or k == MIX_AIC_1_0)
