"""How the NPU simulator splits the blocks of a launch that is not a MIX kernel but has cube and
vector work (the as-if split, `Timeline.view == "as-if split"`): a MIX kernel's instances record
their own streams and are replayed on their own cores instead (rt/npu/xcore.py).

MIX launches (`mix`; by default on a separated SoC, 910B, whose launch has both cube-side work:
CUBE, MTE1, FIXPIPE or an MTE2 copy GM->L1/L0A/L0B; and vector-side work: VECTOR, MTE3 or an
MTE2 copy into UB). An AI Core is then 1 AIC (cube core) + its AIVs (vector cores), each with
its own SCALAR unit and MTE2. Every block is split into a cube sub-stream run on an AIC and a
vector sub-stream run on one AIV of the same AI Core; `n_cores` counts AI Cores (AIC + AIV
pairs, at most `model.aic_cores`): core ids 0..n-1 are the AICs, n..2n-1 their AIVs
(`Timeline.core_kinds`). One AIV per block: the recorded stream of a block holds all its vector
work, so this is MIX_AIC_1_1 (block_dim = AI Cores, 1 AIC : 1 AIV). A MIX_AIC_1_2 kernel
splits its vector work over the two AIVs by `get_subblockidx()`; replaying its one stream on one
AIV overstates the vector side by up to 2x (the second AIV of each AI Core stays idle here).
Which side an instruction runs on (`side_of`, `split_block`): CUBE/MTE1/FIXPIPE and cube-side
MTE2 copies -> AIC, VECTOR/MTE3 and other MTE2 copies -> AIV; a flag or barrier on MTE2 goes
with the MTE2 copy it guards (a wait: the next MTE2 copy of the block, a set or barrier: the
previous one); a SCALAR instruction goes to the side of its flag's other pipe if that pipe
belongs to one side, else to the side of the next non-scalar instruction (the previous one at
the end of the block); `barrier="ALL"` and "SYNC_ALL" run on both sides (both cores execute
the kernel's scalar code: each drains itself, and a SyncAll in a MIX kernel counts the AICs
and the AIVs). Between the sides, the only ordering is through GM (`Instr.gm`, the byte range
a copy reads, path "GM->X", or writes, "X->GM"): a copy waits for every earlier (program order)
copy of the other side whose range overlaps and conflicts with it (read after write, write
after read or write) to complete, plus `cross_core_flag_cycles`. A set_flag / wait_flag whose
two ends land on different sides is a cross-core flag: the wait starts no earlier than the set's
end plus `cross_core_flag_cycles`.
"""
from __future__ import annotations

from bisect import bisect_left

from .instr import AIC, AIV, CUBE_MTE2_PATHS, CUBE_PIPES, VECTOR_PIPES, Instr


def side_of(ins: Instr) -> str | None:
    """"AIC" or "AIV": the core kind whose pipe runs `ins` on a separated SoC, or None when the
    pipe alone does not say (SCALAR, and flags or barriers on MTE2)."""
    if ins.pipe in CUBE_PIPES:
        return AIC
    if ins.pipe in VECTOR_PIPES:
        return AIV
    if ins.pipe == "MTE2" and ins.path:
        return AIC if ins.path in CUBE_MTE2_PATHS else AIV
    return None


def is_work(ins: Instr) -> bool:
    return not (ins.set_flag or ins.wait_flag or ins.barrier or ins.cross)


def _pipe_kind(pipe: str) -> str | None:
    return AIC if pipe in CUBE_PIPES else AIV if pipe in VECTOR_PIPES else None


def _sides(block: list) -> list:
    """The side of each instruction of `block` (AIC, AIV or "both"); rules in the module doc."""
    side = [side_of(i) for i in block]
    mte2 = [k for k, i in enumerate(block) if i.pipe == "MTE2" and side[k]]
    for k, ins in enumerate(block):
        if ins.pipe == "MTE2" and side[k] is None:
            pos = bisect_left(mte2, k)
            prev = side[mte2[pos - 1]] if pos else None
            nxt = side[mte2[pos]] if pos < len(mte2) else None
            dep = ins.wait_flag or ins.set_flag
            other = _pipe_kind(dep[1] if ins.set_flag else dep[0]) if dep else None
            side[k] = ((nxt or prev) if ins.wait_flag else (prev or nxt)) or other or AIV
    nxt = [None] * len(block)
    after = None
    for k in range(len(block) - 1, -1, -1):
        nxt[k] = after
        if block[k].pipe != "SCALAR":
            after = side[k]
    before = None
    for k, ins in enumerate(block):
        if ins.pipe != "SCALAR" and ins.barrier != "SYNC_ALL":
            before = side[k]
            continue
        if ins.barrier in ("ALL", "SYNC_ALL"):
            side[k] = "both"
            continue
        dep = ins.wait_flag or ins.set_flag
        other = _pipe_kind(dep[1] if ins.set_flag else dep[0]) if dep else None
        side[k] = other or nxt[k] or before or AIV
    return side


def split_block(block: list) -> tuple:
    """Split one block's instructions for a MIX launch: ((AIC instrs, AIC deps), (AIV instrs,
    AIV deps)). deps maps an instruction's index in its sub-stream to the indices in the other
    sub-stream of the earlier GM accesses it must wait for (see the module docstring)."""
    side = _sides(block)
    subs = {AIC: [], AIV: []}
    deps = {AIC: {}, AIV: {}}
    acc = {AIC: [], AIV: []}          # GM accesses: (lo, hi, is_write, pipe, sub-stream index)
    for k, ins in enumerate(block):
        for s in ((AIC, AIV) if side[k] == "both" else (side[k],)):
            subs[s].append(ins)
        if side[k] == "both" or not ins.gm or not ins.path:
            continue
        src, _, dst = ins.path.partition("->")
        if "GM" not in (src, dst):
            continue
        s, me = side[k], len(subs[side[k]]) - 1
        other = AIV if s == AIC else AIC
        write, (lo, hi) = dst == "GM", ins.gm
        d = tuple(e[4] for e in acc[other] if e[0] < hi and lo < e[1] and (write or e[2]))
        if d:
            deps[s][me] = d
        # an access on the same pipe that covers an earlier one ends after it: depending on it
        # implies the earlier one (a write supersedes reads and writes, a read only reads)
        acc[s] = [e for e in acc[s] if not (e[3] == ins.pipe and lo <= e[0] and e[1] <= hi and
                                            (write or not e[2]))]
        acc[s].append((lo, hi, write, ins.pipe, me))
    return (subs[AIC], deps[AIC]), (subs[AIV], deps[AIV])
