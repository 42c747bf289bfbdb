"""SyncAll: the bridge from kernel code to the launch's all-blocks barrier, and the compile-time
test of whether a kernel calls `asc.sync_all` (which decides how rt schedules its blocks).

A kernel that calls sync_all is launched with every block resident at once (one thread per
block, see rt/resident.py), and rt hands each block the launch's barrier
(`run_blocks(b, b + 1, block_dim, args, barrier=...)`). The binary stores a key for the barrier
and the address of `WAIT`, a C callback into Python, in the core's state (`attach`); the
`sync_all` primitive calls that address from nopython code (`call_i64`). The compiled kernel thus
holds no Python object (Numba's disk cache still works) and runs without the GIL up to the call;
the callback takes the GIL, waits on the barrier (releasing it while blocked) and returns a status.
"""
from __future__ import annotations

import ast
import ctypes
import inspect
import textwrap
import weakref

from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic

from . import core

__all__ = ["attach", "call_i64", "WAIT_ADDR", "asc_calls", "resident_limit"]

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


WAIT = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(_wait)
WAIT_ADDR = ctypes.cast(WAIT, ctypes.c_void_p).value


def attach(st, barrier) -> None:
    """Give the core whose state is `st` the launch's barrier (None: a pool launch, no barrier)."""
    if barrier is None:
        st[core.S_BARRIER] = 0
        st[core.S_BARRIER_FN] = 0
    else:
        key = id(barrier)
        _BARRIERS[key] = barrier
        st[core.S_BARRIER] = key
        st[core.S_BARRIER_FN] = WAIT_ADDR
    st[core.S_SYNC_CALLS] = 0


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

def _chain(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id] + parts[::-1] if isinstance(node, ast.Name) else None


def asc_calls(fn, _seen=None) -> frozenset:
    """Dotted names of the `asc.*` functions that kernel `fn` calls, directly or through the
    @asc.jit helpers it calls ("sync_all", "mmad", "adv.Matmul", ...), read from its AST."""
    seen = set() if _seen is None else _seen
    if fn in seen:
        return frozenset()
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    globs = dict(getattr(fn, "__globals__", {}))
    if getattr(fn, "__closure__", None):
        globs.update(inspect.getclosurevars(fn).nonlocals)
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        chain = _chain(node.func) if isinstance(node.func, ast.Attribute) else None
        if chain and getattr(globs.get(chain[0]), "__name__", None) in ("ascendc", "asc"):
            out.add(".".join(chain[1:]))
        elif isinstance(node.func, ast.Name):
            g = globs.get(node.func.id)
            if type(g).__name__ == "JitFunction":       # an @asc.jit helper
                out |= asc_calls(g.fn, seen)
    return frozenset(out)


def resident_limit(soc, calls) -> tuple[int, str]:
    """(most blocks that can be resident at once, what counts them) for a kernel calling `calls`.

    Coupled SoCs run a block per AI Core. On separated ones a vector-only kernel's block is an
    AIV (SyncAll's default `isAIVOnly=true`), and a kernel using the cube runs as 1 AIC + 2 AIV
    per block, so at most one block per AI Core."""
    from .registry import OPS
    from .prims import cube
    cube_ops = {n for n, forms in OPS.items() if any(f.prim in cube.__all__ for f in forms)}
    uses_cube = any(c in cube_ops or c.startswith("adv.") for c in calls)
    if not soc.separated:
        return soc.ai_core_num, "AI Core"
    if uses_cube:
        return soc.ai_core_num, "AI Core (a kernel using the cube runs as 1 AIC + 2 AIV per block)"
    return soc.vector_core_num, "vector core (AIV)"
