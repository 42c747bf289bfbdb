"""SyncAll: the bridge from kernel code to the launch's all-blocks barrier, and how many blocks can
be resident at once (whether a kernel calls `asc.sync_all` is read from its AST by
`ascendc.compiler.frontend.asc_calls`).

A kernel that calls sync_all is launched with every block resident at once (one thread per
block, see rt/resident.py), and rt hands each block the launch's barrier
(`run_blocks(b, b + 1, block_dim, args, barrier=...)`). The binary stores a key for the barrier
and `WAIT_ADDR`, a C callback into Python (ccallback.py), in the core's state (`attach`); the
`sync_all` primitive calls that address from nopython code (`call_i64`). The compiled kernel thus
holds no Python object (Numba's disk cache still works) and runs without the GIL up to the call;
the callback takes the GIL, waits on the barrier (releasing it while blocked) and returns a status.
"""
from __future__ import annotations

import weakref

from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic

from .ccallback import guarded_callback

__all__ = ["attach", "call_i64", "WAIT_ADDR", "resident_limit"]

#: Barriers of the running resident launches, by key (id); an entry dies with its launch.
_BARRIERS: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()

# wait statuses (rt.resident.BlockBarrier.wait): 0 passed, -1 aborted (another block failed),
# k > 0 broken because k blocks ended without reaching it; < -1 here: barrier not found / raised
NO_BARRIER, WAIT_RAISED = -2, -3


def _wait(key):
    try:
        b = _BARRIERS.get(key)
        return NO_BARRIER if b is None else int(b.wait())
    except BaseException:           # noqa: BLE001 - a C callback must not raise
        return WAIT_RAISED


# a native function, not a ctypes thunk: a runtime stop pending when compiled code calls it must
# not escape into the kernel (ccallback.py); it answers WAIT_RAISED then
WAIT_ADDR = guarded_callback(_wait, "i64", ("i64",), on_stop=WAIT_RAISED)


def attach(st, barrier) -> None:
    """Give the core whose state is `st` (its CORE_STATE record, core.state(ctx)) the launch's
    barrier (None: a pool launch, no barrier)."""
    if barrier is None:
        st.barrier = 0
        st.barrier_fn = 0
    else:
        key = id(barrier)
        _BARRIERS[key] = barrier
        st.barrier = key
        st.barrier_fn = WAIT_ADDR
    st.sync_calls = 0


if config.DISABLE_JIT:
    def call_i64(fnptr, arg):
        return _wait(arg)
else:
    @intrinsic
    def call_i64(typingctx, fnptr, arg):
        """`fnptr(arg)` for the address of a C function `int64 f(int64)` (a runtime value)."""
        sig = types.int64(types.int64, types.int64)

        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            fn = builder.inttoptr(args[0], ir.FunctionType(i64, [i64]).as_pointer())
            return builder.call(fn, [args[1]])
        return sig, codegen


# ---- compile-time facts about a kernel ---------------------------------------------------------

def resident_limit(soc, calls) -> tuple[int, str]:
    """(most blocks that can be resident at once, what counts them) for a kernel calling `calls`.

    Coupled SoCs run a block per AI Core. On separated ones a vector-only kernel's block is an
    AIV (SyncAll's default `isAIVOnly=true`), and a kernel using the cube runs as 1 AIC + 2 AIV
    per block, so at most one block per AI Core."""
    from .surface import FUNCTIONS
    cube_ops = {n for n, f in FUNCTIONS.items() if f.unit == "AIC"}
    uses_cube = any(c in cube_ops or c.startswith("adv.") for c in calls)
    if not soc.separated:
        return soc.ai_core_num, "AI Core"
    if uses_cube:
        return soc.ai_core_num, "AI Core (a kernel using the cube runs as 1 AIC + 2 AIV per block)"
    return soc.vector_core_num, "vector core (AIV)"
