"""How the launcher runs a kernel whose cores synchronise with each other: a MIX kernel (each block
an AI Core group: its AIC and one or two AIVs at once), or any kernel using cross-core or
inter-block flags. rt runs such a binary by its `mix` spec (rt.mixlaunch); this module decides the
spec, checks the launch against the SoC, and tells each instance who it is.

- MIX_AIC_1_2 / MIX_AIC_1_1 kernels (declared with `kernel_type`, or detected as pyasc detects
  them) run AIC + 2 / 1 AIV per block; when the kernel registers a Matmul object the AIC serves
  its AIVs' Matmul calls (ascendc/adv/kfc.py: `attach(..., kfc=True)`);
- other kernels calling cross-core / inter-block flags run one instance per block, all at once
  when they synchronise across blocks;
- a kernel synchronising across groups needs them all resident: `block_dim` at most the SoC's
  AI Cores (MIX) or cores of its kind.
"""
from __future__ import annotations

import linecache

import rt
from rt.crossflags import AIC, AIV, Instance
from rt.mixlaunch import MixSpec

from .lang.crosscore import attach_instance
from .lang.prims import ktype as KT

__all__ = ["mix_spec", "check_block_dim", "attach", "make_locators", "is_instance",
           "serves_matmul"]

_ROLES = {KT.MIX_AIC_1_2: (AIC, AIV, AIV), KT.MIX_AIC_1_1: (AIC, AIV)}
_ONE = {KT.AIC_ONLY: (AIC,), KT.MIX_AIC_HARD_SYNC: (AIC,), KT.MIX_AIC_1_0: (AIC,)}


def mix_spec(kernel_type: int, scope, calls, checked) -> MixSpec | None:
    """The `mix` spec of a binary (None: it runs on the core pool as before). `scope` is the
    kernel's compiler.syncscope.SyncScope, `calls` its asc calls."""
    if kernel_type in _ROLES:
        roles = _ROLES[kernel_type]
    elif scope.cross_core:
        roles = _ONE.get(kernel_type, (AIV,))
    else:
        return None
    # (a kernel whose Matmul the AIC serves is not GM-order checked: pyasc's own Matmul tests
    # launch more AIVs than tiles and write some C tiles from two AIVs, with the same values)
    return MixSpec(roles, scope.across_groups or "sync_all" in calls, checked.flags != 0,
                   checked.check_gm_order and "adv.register_matmul" not in calls)


def check_block_dim(name: str, block_dim: int, soc, spec: MixSpec | None) -> None:
    if spec is None:
        return
    if len(spec.roles) > 1 and not soc.separated:
        raise rt.AclError(rt.errors.ACL_ERROR_RT_PARAM_INVALID,
                          f"{name}[]: a MIX kernel must run on a SoC with separate cube and "
                          f"vector cores (Atlas A2/A3), got soc={soc.name}")
    if not spec.across_groups:
        return
    if len(spec.roles) > 1 or not soc.separated:
        limit, what = soc.ai_core_num, "AI Core"
    elif spec.roles == (AIC,):
        limit, what = soc.ai_core_num, "cube core (AIC)"
    else:
        limit, what = soc.vector_core_num, "vector core (AIV)"
    if block_dim > limit:
        raise rt.AclError(rt.errors.ACL_ERROR_RT_PARAM_INVALID,
                          f"{name}[]: block_dim must be <= {limit}, the {soc.name}'s {what} "
                          f"count, for a kernel that synchronises across blocks (sync_all, "
                          f"ib_set/ib_wait or cross_core_set_flag mode 0: every block must be "
                          f"resident at once, or the NPU hangs), got block_dim={block_dim}")


def is_instance(barrier) -> bool:
    return isinstance(barrier, Instance)


def serves_matmul(kernel_type: int, calls) -> bool:
    """Does a launch of this kernel run the Matmul client/server pair (ascendc/adv/kfc.py)?"""
    return kernel_type in _ROLES and "adv.register_matmul" in calls


def make_locators(st, lines):
    """(where, mark) of the instances run on the core whose state is `st`, for a compiled kernel
    whose `lines` map st.src_line -> (file, line): `where()` the current source line's text,
    `mark` = (a cheap token now, its text later) (lang.crosscore.attach_instance). They read
    the state when called, so a core's are made once and serve every instance it runs."""
    def describe(k):
        if not 0 < k < len(lines):
            return None
        file, line = lines[k]
        text = linecache.getline(file, line).strip()
        return f"{file}:{line}" + (f" ({text})" if text else "")

    def where():
        return describe(int(st.src_line))
    return where, (lambda: int(st.src_line), describe)


def attach(st, port, kernel_type: int, kfc=False, locators=None) -> None:
    """Tell the core whose state is `st` that it runs instance `port` (None: not a MIX launch).
    `locators` (compiled kernels: `make_locators(st, lines)`, made once per core) name the
    instance's source line in a deadlock report; interpreted kernels are located from their
    Python frame."""
    where = mark = None
    if port is not None and locators is not None:
        where, mark = locators
    attach_instance(st, port, where, kernel_type in _ROLES, mark, kfc)
