"""The per-core context every primitive receives, and small shared helpers.

A core's context is the tuple ``ctx = (mem, stage, st, trace)``, indexed by the slot names of
state.py (``ctx[MEM]``, ``ctx[STAGE]``, ``ctx[STATE]``, ``ctx[TRACE]``):
- ``mem``: one uint8 array holding the core's local memories back to back (the levels of
  positions.LEVELS: UB, L1, L0A, L0B, L0C, BT); a LocalTensor is a typed view into it, and its
  level is found from its address.
- ``stage``: same size; in checked mode GM->local copies land here and become visible in ``mem``
  only when their tensor is dequeued (or a wait_flag/pipe_barrier on MTE2 is reached).
- ``st``: a one-element array of state.CORE_STATE; its record ``ctx[STATE][0]`` holds the block
  index, options, pipe usage, queue records, counters, GM argument ranges (fields named in
  state.py).
  Python code reads it as ``state(ctx)``.
- ``trace``: the NPU view's instruction trace (int64 rows, lang/trace.py); one row when tracing
  is off. (A one-element array, not the record itself: Numba
  unboxes a record passed from Python through a PEP 3118 buffer of its whole dtype, ~3 us per
  call, an array in ~0.3 us; the interpreter calls primitives from Python.)
The same primitives run in both modes: compiled kernels call them from njit code, the interpreter
from Python.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import threading

import numpy as np
from llvmlite import binding as llvm_binding
from numba import njit, types
from numba.core import config, serialize
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher
from numba.extending import overload

from .errors import FAULT, fault, GMReadError, GMWriteError, KernelError
from .positions import BT, L0A, L0B, L0C, L1, LEVEL_NAMES, NLEVELS, UB, level_bytes  # noqa: F401
from .state import (CORE_STATE, FLAG_DEFER, FLAG_NAN_FILL, FLAG_REPORT_ROUNDING,  # noqa: F401
                    MAX_GM, MAX_PENDING, N_EVENT_IDS)
from .state import MEM, STAGE, STATE, TRACE  # noqa: F401 (generated kernels read _C.STATE ...)

# counters (issue 4 profiler): bytes per pipe, cube MACs, vector element-ops
C_MTE2, C_MTE1, C_MTE3, C_FIX, C_CUBE_MACS, C_VEC_OPS, C_MTE_UB2UB, C_CUBE_MACS_FP32 = range(8)
COUNTER_NAMES = ("mte2_bytes", "mte1_bytes", "mte3_bytes", "fix_bytes", "cube_macs",
                 "vector_elem_ops", "ub_to_ub_bytes", "cube_macs_fp32")


def layout(soc):
    """(offsets, sizes, total) of the local memories of one core of `soc` (positions.LEVELS)."""
    sizes = level_bytes(soc)
    offs, off = [], 0
    for s in sizes:
        offs.append(off)
        off += s
    return offs, sizes, off


def new_ctx(soc, flags=0, trace_rows=1):
    """A fresh context for one core (reused across the blocks a worker runs); with FLAG_TRACE
    in `flags`, a trace buffer of `trace_rows` rows."""
    offs, sizes, total = layout(soc)
    mem = np.zeros(total, np.uint8)
    stage = np.zeros(total, np.uint8) if flags & FLAG_DEFER else np.zeros(64, np.uint8)
    st = np.zeros(1, CORE_STATE)
    if config.DISABLE_JIT:           # primitives run as Python: records need attribute access
        st = st.view(np.recarray)
    rec = st[0]
    rec["level_base"][:] = offs
    rec["level_size"][:] = sizes
    rec["options"] = flags
    trace = np.zeros((max(int(trace_rows), 1), 18), np.int64)   # trace.NCOL columns
    return (mem, stage, st, trace)


def state(ctx):
    """The core's CORE_STATE record (a view; fields by attribute: `state(ctx).block_idx`)."""
    return ctx[STATE].view(np.recarray)[0]


@overload(state)
def _state(ctx):
    return lambda ctx: ctx[STATE][0]


@njit(nogil=True, cache=True)
def begin_block(ctx, block_idx, block_num):
    """Reset per-block state: pipe, queues, buffers, pending copies; NaN-fill if asked."""
    mem, stage, st = ctx[MEM], ctx[STAGE], ctx[STATE][0]
    st.block_idx = block_idx
    st.block_num = block_num
    st.src_line = 0
    st.pipes = 0
    st.nbuf = 0
    st.nque = 0
    st.ngm = 0
    st.npending = 0
    st.nshape = 0
    st.level_used[:] = 0
    st.events[:, :] = 0
    if st.options & FLAG_NAN_FILL:
        mem[:] = 0xFF  # all-ones bytes are NaN for every float type (and -1 for ints)
        if st.options & FLAG_DEFER:
            stage[:] = 0xFF


def reset_counters(ctx):
    ctx[STATE][0]["counters"][:] = 0


def read_counters(ctx) -> dict:
    c = ctx[STATE][0]["counters"]
    return {n: int(c[i]) for i, n in enumerate(COUNTER_NAMES)}


class _CompileKinds(threading.local):
    """What this thread is compiling, innermost last: PRIM (a primitive's own code) or GLUE
    (a generated kernel function, compiler/gluejit.py); decides how calls of primitives link."""

    def __init__(self):
        self.stack = []


PRIM, GLUE = "prim", "glue"
_COMPILING = _CompileKinds()


@contextlib.contextmanager
def compiling_as(kind):
    """Mark the compiles in this block as PRIM or GLUE code (see PrimDispatcher)."""
    _COMPILING.stack.append(kind)
    try:
        yield
    finally:
        _COMPILING.stack.pop()


def prim_calls_enabled() -> bool:
    """Kernel glue calls the larger primitives instead of inlining them (issue 12,
    docs/compile-time.md; env ASCEND_EMU_PRIM_CALLS=0 inlines everything, as before)."""
    return os.environ.get("ASCEND_EMU_PRIM_CALLS", "1") != "0"


def prim_call_min_bytes() -> int:
    """Primitives whose optimised code (with the callees it inlines, as LLVM bitcode) has at
    least this many bytes are called from kernel glue; smaller ones, e.g. get_block_idx (~8 kB),
    stay inlined (env ASCEND_EMU_PRIM_CALL_MIN_BYTES)."""
    v = os.environ.get("ASCEND_EMU_PRIM_CALL_MIN_BYTES", "")
    return int(v) if v.isdigit() else 12000


class PrimLoader:
    """Run when a cached kernel that calls a primitive is loaded (Numba's `reload_init`): makes
    sure the primitive is compiled (or loaded from its own cache) for the signature the kernel
    calls, under the symbol the kernel's object code refers to."""

    def __init__(self, module, qualname, argtypes, restype, symbol):
        self.key = (module, qualname, tuple(argtypes), restype, symbol)

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, PrimLoader) and self.key == other.key

    def __call__(self):
        module, qualname, argtypes, restype, symbol = self.key
        disp = importlib.import_module(module)
        for part in qualname.split("."):
            disp = getattr(disp, part)
        disp.compile(argtypes)
        cres = disp.overloads[argtypes]
        if cres.signature.return_type != restype:
            raise KernelError(f"cached kernel: primitive {qualname}{argtypes} must return "
                              f"{restype} as when the kernel was compiled, got "
                              f"{cres.signature.return_type} (clear the kernel cache)")
        if cres.fndesc.mangled_name != symbol:    # compiled anew: another unique id
            addr = cres.library.get_pointer_to_function(cres.fndesc.mangled_name)
            llvm_binding.add_symbol(symbol, addr)


class CalledLibrary:
    """What a caller links for a compiled primitive: the primitive's own code library (inlined,
    as Numba does by default), or, while GLUE or another primitive is being compiled and the
    primitive is large, nothing: the caller only declares the primitive's symbol and calls it.
    Each primitive is then LLVM-optimised and turned into machine code once (and cached), not
    again inside every kernel and every primitive using it (a fresh clone's compiles: add
    22.6 -> 16.4 CPU s, matmul 45.6 -> 29.3); the call costs a few ns against the vector
    repeats, copies or mmads it runs. Small primitives stay inlined (prim_call_min_bytes)."""

    def __init__(self, lib, cres, disp):
        self._lib, self._cres, self._disp = lib, cres, disp
        self._called = None
        self._empty = None

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def calls(self) -> bool:
        if not _COMPILING.stack:    # plain @njit code (a user's, a test's) links it in
            return False
        if self._called is None:     # the size of what a caller would link (bitcode: ~1 ms)
            n = len(self._lib._get_module_for_linking().as_bitcode())
            self._called = n >= prim_call_min_bytes()
        return self._called

    def _ensure_finalized(self):
        self._lib._ensure_finalized()

    @property
    def _reload_init(self):
        if not self.calls():
            # inlined: the caller needs loaded first whatever this primitive's code calls. A
            # library rebuilt from the disk cache starts with no loaders; its compile result
            # keeps them (Numba's CompileResult.reload_init)
            return set(self._lib._reload_init) | set(self._cres.reload_init or ())
        f = self._cres.fndesc
        py = self._disp.py_func
        return {PrimLoader(py.__module__, py.__qualname__, f.argtypes, f.restype,
                           f.mangled_name)}

    def _get_module_for_linking(self):
        if not self.calls():
            return self._lib._get_module_for_linking()
        if self._empty is None:
            cg = self._lib.codegen
            self._empty = llvm_binding.parse_assembly(str(cg._create_empty_module("call")))
        return self._empty


class PrimDispatcher(CPUDispatcher):
    """A Numba dispatcher whose calls from jitted code are typed with non-literal arguments,
    and whose larger compiled versions kernel glue calls instead of inlining (CalledLibrary).

    A plain dispatcher called from a kernel as `add_count(ctx, d, a, b, 64)` compiles a
    specialisation for `Literal[int](64)`, and another for every other constant: compile time
    and cache size would grow with each call site. Here all such calls share the int64 version.
    """

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)

    def compile(self, sig):
        with compiling_as(PRIM):
            return super().compile(sig)

    def add_overload(self, cres):
        super().add_overload(cres)
        if prim_calls_enabled() and not cres.objectmode:
            # registered after Numba's own entry for the signature, so callers find this one
            self.targetctx.insert_user_function(cres.entry_point, cres.fndesc,
                                                [CalledLibrary(cres.library, cres, self)])


class PrimCache(FunctionCache):
    """Numba's disk cache of a primitive, with closure variables keyed stably: Numba hashes a
    closure's pickled cells, and a pickled dispatcher carries a per-process uuid, so primitives
    made by a factory over other primitives (vector.py's add_count, ...) never hit the cache of
    another process. A function or dispatcher cell is keyed by its module and name instead."""

    def __init__(self, py_func):
        super().__init__(py_func)
        # Numba stamps a cache with the function's own file only; a primitive inlines helpers
        # from other files (vecloops, vecbase, cubegemm, ...), so any edit under ascendc/lang
        # must invalidate it, or a stale primitive would load silently. A changed stamp makes
        # Numba drop the whole index (no stale entries pile up).
        cf = self._cache_file
        cf._source_stamp = (cf._source_stamp, lang_sources_digest())

    def _index_key(self, sig, codegen):
        sig_key, magic, (code_hash, _) = super()._index_key(sig, codegen)
        stable = tuple(_stable_cell(c.cell_contents) for c in self._py_func.__closure__ or ())
        return sig_key, magic, (code_hash, hashlib.sha256(serialize.dumps(stable)).hexdigest())


_LANG_DIGEST: list = []


def lang_sources_digest() -> str:
    """Hash of every source file under ascendc/lang (computed once per process)."""
    if not _LANG_DIGEST:
        import pathlib
        h = hashlib.sha256()
        root = pathlib.Path(__file__).resolve().parent
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _LANG_DIGEST.append(h.hexdigest()[:16])
    return _LANG_DIGEST[0]


lang_sources_digest()    # at import, for the reason given at compiler/cache.py's lang_fingerprint


def _stable_cell(v):
    """What identifies closure cell `v` in every process: a function (or a dispatcher's) by
    module, name, bytecode, the global names it reads and its own cells; other values as is."""
    f = getattr(v, "py_func", v)
    code = getattr(f, "__code__", None)
    if code is None:
        return v
    return (f.__module__, f.__qualname__, code.co_code, code.co_names,
            tuple(_stable_cell(c.cell_contents) for c in f.__closure__ or ()))


def prim(fn):
    """Decorator of primitives: a cached, nogil, nopython PrimDispatcher (numpy error model, so
    float division by zero gives inf/nan instead of raising)."""
    if config.DISABLE_JIT:
        return fn
    disp = PrimDispatcher(py_func=fn, locals={},
                          targetoptions={"nopython": True, "nogil": True, "error_model": "numpy"})
    disp._cache = PrimCache(fn)
    return disp


@prim
def count(ctx, which, n):
    ctx[STATE][0].counters[which] += n


# ---- addresses ---------------------------------------------------------------------------------

@prim
def local_offset(ctx, a):
    """Byte offset of tensor `a` inside the core's local memory, or -1 if `a` is not local."""
    mem = ctx[MEM]
    d = np.int64(a.ctypes.data) - np.int64(mem.ctypes.data)
    if d < 0 or d >= mem.size:
        return -1
    return d


@prim
def level_of(ctx, a):
    """Level (UB, L1, ...) of a local tensor, or -1 for global memory."""
    off = local_offset(ctx, a)
    if off < 0:
        return -1
    st = ctx[STATE][0]
    for lv in range(NLEVELS):
        b = st.level_base[lv]
        if b <= off < b + st.level_size[lv]:
            return lv
    return -1


@prim
def level_name(lv):
    """Name of level `lv` (positions.LEVEL_NAMES), "GM" for -1."""
    if 0 <= lv < NLEVELS:
        return LEVEL_NAMES[lv]
    return "GM"


@prim
def register_gm(ctx, a):
    """Record GM argument `a` (the kernel's view: to its allocation's end) so out-of-range
    accesses can be named; its own size is the launcher's (gmreach.py), else the view's."""
    st = ctx[STATE][0]
    k = st.ngm
    if k < MAX_GM:
        st.gm_addr[k] = np.int64(a.ctypes.data)
        st.gm_bytes[k] = a.size * a.itemsize
        if k >= st.gm_preset:
            st.gm_size[k] = st.gm_bytes[k]
        st.ngm = k + 1


@prim
def gm_where(st, addr):
    """(index, byte offset in it, its own bytes) of the GM argument holding `addr` (its view's
    end included), or (-1, 0, 0): what the GM bounds errors name."""
    for k in range(st.ngm):
        b = st.gm_addr[k]
        if b <= addr <= b + st.gm_bytes[k]:
            return k, addr - b, st.gm_size[k]
    return -1, 0, 0


@prim
def check_gm(ctx, api, a, first, n, write):
    """Raise unless elements [first, first+n) of GM view `a` lie inside its allocation."""
    if first >= 0 and first + n <= a.size:
        return
    k, boff, nbytes = gm_where(ctx[STATE][0], np.int64(a.ctypes.data))
    isz = a.itemsize
    if write:
        fault("{}: GM write must stay inside argument #{} ({} elements), got "
              "elements [{}, {})", api, k, nbytes // isz, boff // isz + first,
              boff // isz + first + n)
        raise GMWriteError(FAULT)
    fault("{}: GM read must stay inside argument #{} ({} elements), got elements "
          "[{}, {})", api, k, nbytes // isz, boff // isz + first,
          boff // isz + first + n)
    raise GMReadError(FAULT)


@prim
def check_local(ctx, api, what, a, n):
    """Raise unless local tensor `a` holds at least n elements."""
    if n > a.size or n < 0:
        fault("{}: {} must hold count elements, got count={} for a tensor of {} "
              "elements in {:level}", api, what, n, a.size, level_of(ctx, a))
        raise KernelError(FAULT)


# ---- deferred visibility of GM->local copies (checked mode) ------------------------------------

@prim
def defer_enabled(ctx):
    return (ctx[STATE][0].options & FLAG_DEFER) != 0


@prim
def add_pending(ctx, off, nbytes):
    st = ctx[STATE][0]
    k = st.npending
    if k >= MAX_PENDING:
        flush_pending(ctx, 0, ctx[MEM].size)
        k = st.npending
    st.pending_off[k] = off
    st.pending_bytes[k] = nbytes
    st.npending = k + 1


@prim
def flush_pending(ctx, lo, hi):
    """Make deferred copies that overlap mem[lo:hi] visible."""
    mem, stage, st = ctx[MEM], ctx[STAGE], ctx[STATE][0]
    k = 0
    n = st.npending
    while k < n:
        off = st.pending_off[k]
        nb = st.pending_bytes[k]
        if off < hi and off + nb > lo:
            mem[off:off + nb] = stage[off:off + nb]
            n -= 1
            st.pending_off[k] = st.pending_off[n]
            st.pending_bytes[k] = st.pending_bytes[n]
        else:
            k += 1
    st.npending = n


@prim
def gm_to_local_target(ctx, dst):
    """The array a GM->local copy should write: `dst` itself, or its twin in the stage buffer."""
    if not defer_enabled(ctx):
        return dst
    off = local_offset(ctx, dst)
    nb = dst.size * dst.itemsize
    add_pending(ctx, off, nb)
    return ctx[STAGE][off:off + nb].view(dst.dtype)


# ---- masks for the repeat forms ----------------------------------------------------------------

def mask_words(mask, elem_bytes):
    """(m0, m1) bit masks for a vector repeat: int = continuous first-n, or [w0, w1] words."""
    if isinstance(mask, (list, tuple)):
        w = list(mask) + [0, 0]
        return np.uint64(w[0]), np.uint64(w[1])
    return _continuous(int(mask), elem_bytes)


@prim
def _continuous(m, elem_bytes):
    lanes = 256 // elem_bytes
    if m < 1 or m > lanes:
        fault("vector op: mask must be in [1, {}] for {}-bit elements, got mask={}",
              lanes, elem_bytes * 8, m)
        raise KernelError(FAULT)
    if m >= 128:
        return np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0xFFFFFFFFFFFFFFFF)
    if m >= 64:
        hi = np.uint64(0) if m == 64 else (np.uint64(1) << np.uint64(m - 64)) - np.uint64(1)
        return np.uint64(0xFFFFFFFFFFFFFFFF), hi
    return (np.uint64(1) << np.uint64(m)) - np.uint64(1), np.uint64(0)


@overload(mask_words)
def _mask_words(mask, elem_bytes):
    if isinstance(mask, types.Integer):
        return lambda mask, elem_bytes: _continuous(mask, elem_bytes)
    if isinstance(mask, (types.UniTuple, types.Tuple)) and len(mask) == 2:
        return lambda mask, elem_bytes: (np.uint64(mask[0]), np.uint64(mask[1]))
    if isinstance(mask, (types.UniTuple, types.Tuple)) and len(mask) == 1:
        return lambda mask, elem_bytes: (np.uint64(mask[0]), np.uint64(0))
    return None


@prim
def lane_on(m0, m1, j):
    """Is lane j of a repeat selected by the mask words?"""
    if j < 64:
        return (m0 >> np.uint64(j)) & np.uint64(1) != 0
    return (m1 >> np.uint64(j - 64)) & np.uint64(1) != 0
