"""The kernel binaries rt's core pool runs (`rt.KernelBinary`): one specialisation of a kernel,
interpreted (InterpretedBinary: its Python source per block) or compiled (CompiledBinary: the
generated module's `_run` over a block range), with its GM arguments (GMArg), the core context
of the calling worker, counters, the NPU view's trace and block faults as `rt.KernelFault`.

ascendc/jit.py makes them (JitFunction._binary) and launches them.
"""
from __future__ import annotations

import linecache
import os
import threading
import warnings

import numpy as np
from numba import typeof
from numba.core.errors import NumbaError

import rt
from rt import errors as E

from . import options as O
from .lang import api, core, dtypes as D, prims, record, trace
from .lang.prims import autotensor, ktype as KT
from .lang.state import FLAG_TRACE, TRACE
from .lang.gmreach import merge_overreach, read_overreach, set_gm_sizes, warn_overreach
from .compiler.diagnostics import typing_error
from .lang import barrier as _barrier
from . import mix as _mix
from .lang.errors import CompileError, GMReadError, GMWriteError, KernelError, KernelReturn

class _TraceRowsExceeded(KernelError):
    """A traced block issued more instructions than its core's trace buffer holds (raised as
    `rt.NpuTraceLimitError` by the launch)."""

    def __init__(self, rows: int, issued: int, block_idx: int):
        super().__init__(f"rt.profile(npu=True): a block must issue at most {rows} instructions "
                         f"to be recorded, got {issued} in block_idx={block_idx} "
                         f"(raise ASCEND_EMU_NPU_TRACE_ROWS)")
        self.rows, self.issued = int(rows), int(issued)


_CTX = threading.local()
#: Building a kernel (ast.parse, codegen, module load: jit.py) and Numba's first compile of its
#: dispatcher are not thread-safe (CPython's AST validator and Numba's first-use registrations
#: race): one lock for both, taken only until a binary is ready.
BUILD_LOCK = threading.RLock()
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def trace_rows() -> int:
    """Rows of a core's NPU-view trace buffer (env ASCEND_EMU_NPU_TRACE_ROWS, default 262144:
    ~37 MB per worker while tracing)."""
    v = os.environ.get("ASCEND_EMU_NPU_TRACE_ROWS", "")
    return int(v) if v.isdigit() and int(v) > 0 else trace.DEFAULT_ROWS


class _FieldState(core.StateView):
    """`core.state(ctx)` of a context of this thread's `_core` cache, made once: each field's
    view of the state array is taken once (a field lookup on the array costs about a
    microsecond; a MIX launch's instance set-up reads and writes some 30), an array field's
    element view too. Reads and writes go to the same memory as `core.state`'s."""
    __slots__ = ("_f",)

    def __init__(self, a):
        super().__init__(a)
        f = {}
        for name in a.dtype.names:
            fa = a[name]
            if a.dtype.fields[name][0].base.names is None:  # nested records: the slow path
                f[name] = (fa, fa[0] if fa.ndim > 1 else None)
        object.__setattr__(self, "_f", f)

    def __getattr__(self, name):
        got = self._f.get(name)
        if got is None:
            return core.StateView.__getattr__(self, name)
        return got[0][0] if got[1] is None else got[1]

    def __setattr__(self, name, value):
        got = self._f.get(name)
        if got is None:
            core.StateView.__setattr__(self, name, value)
        else:
            got[0][0] = value

    __getitem__ = __getattr__
    __setitem__ = __setattr__


class _Core:
    """One worker's core for one (SoC, options word, trace rows): its context, made once per
    thread and reused across launches, with what each run would otherwise make anew: the state
    view, the arrays' addresses as a compiled kernel takes them, the counters' view, a
    one-block list (a MIX instance runs one block) and each binary's source locators."""
    __slots__ = ("ctx", "st", "addrs", "counters", "used", "one", "one_addr", "locators")

    def __init__(self, ctx):
        self.ctx = ctx
        self.st = _FieldState(ctx[core.STATE].view(np.ndarray))
        self.counters = self.st.counters               # reset before a run (all of them)
        self.used = self.counters[:len(core.COUNTER_NAMES)]   # read after it
        self.addrs = _addrs(ctx)
        self.one = np.zeros(1, np.int64)
        self.one_addr = self.one.ctypes.data
        self.locators = {}      # id(binary lines) -> (lines, (where, mark)): _locators


def _core(soc, flags) -> _Core:
    """The calling worker's `_Core` for `soc` and options word `flags`."""
    cache = getattr(_CTX, "cache", None)
    if cache is None:
        cache = _CTX.cache = {}
    rows = trace_rows() if flags & FLAG_TRACE else 1
    key = (soc.name, flags, rows)
    got = cache.get(key)
    if got is None:
        got = cache[key] = _Core(core.new_ctx(soc, flags, rows))
    return got


def _addrs(ctx) -> tuple:
    """The addresses and sizes of a core context's arrays as a compiled kernel takes them."""
    mem, stage, st, tr = ctx
    return (mem.ctypes.data, mem.size, stage.ctypes.data, stage.size, st.ctypes.data,
            tr.ctypes.data, tr.shape[0])


_SANITIZER: list = []     # the active sanitizer (ascendc/sanitize), if any


def set_sanitizer(sanitizer) -> None:
    """Install (or with None remove) the sanitizer every launch reports its blocks to: an object
    with `block(binary, launch, block_idx, rows, fault, where, gms, lost)`
    (ascendc/sanitize/session.py)."""
    _SANITIZER[:] = [] if sanitizer is None else [sanitizer]


def sanitizer():
    """The active sanitizer, or None."""
    return _SANITIZER[0] if _SANITIZER else None


class GMArg:
    """A GM argument as the binary receives it: device address, bytes, dtype."""
    __slots__ = ("ptr", "nbytes", "dtype", "name", "owner", "_view", "_flat")

    def __init__(self, ptr, nbytes, dtype: D.DataType, name, owner=None):
        self.ptr, self.nbytes, self.dtype, self.name = int(ptr), int(nbytes), dtype, name
        self.owner = owner  # keeps a DeviceArray alive until the launch's task is done
        self._view = self._flat = None

    def flat(self):
        """(address, elements) of `view()`, as a compiled kernel takes it; made once (numpy's
        `.ctypes.data` costs microseconds, and a replayed launch keeps its GMArgs)."""
        if self._flat is None:
            v = self.view()
            self._flat = (v.ctypes.data, v.size)
        return self._flat

    def view(self):
        """The kernel's view: from the argument's start to its allocation's end (whole
        elements; rt.memory.kernel_view), as the AI Core reaches it: accesses past `nbytes` but
        inside the allocation run (checked mode reports them: lang/gmreach.py). Made once per
        launch, not again for each of its block ranges."""
        if self._view is None:
            u8 = rt.memory.kernel_view(self.ptr, self.nbytes)
            isz = self.dtype.storage.itemsize
            self._view = (u8[:u8.size - u8.size % isz] if u8.size % isz else u8).view(
                self.dtype.storage)
        return self._view


class Binary(rt.KernelBinary):
    """What rt.launch runs (an `rt.KernelBinary`): `run_blocks(first, last, block_dim, args)` over
    one specialisation; a block's fault is raised as `rt.KernelFault` with its block_idx."""

    def __init__(self, name, soc, checked: O.CheckedOptions, param_names, gm_names=(),
                 traced=False, kernel_type=KT.AICORE):
        self.name = name
        self.kernel_type = kernel_type       # lang/prims/ktype.py (KT.KERNEL_TYPES)
        self.kernel_type_name = next(k for k, v in KT.KERNEL_TYPES.items() if v == kernel_type)
        # kernel instances per block of block_dim (the AIVs of a MIX_AIC_1_2 group): rt runs
        # block_dim * per_block instances, numbered as the NPU numbers them (ktype.py)
        self.per_block = KT.instances_per_block(kernel_type)
        self.traced = traced                 # records the NPU view's trace (lang/trace.py)
        self._traces = {}                    # per launch (id of its args): [rows..., blocks]
        self._done = {}                      # finished launches' rows, until the profiler takes
        self.soc = soc
        self.checked = checked
        self.param_names = param_names
        self.gm_names = tuple(gm_names)   # the GM parameters, in the order they are registered
        self.counters = core.COUNTER_NAMES   # rt's profiler reads last_counters after a launch
        self.last_counters = {}
        self.needs_all_resident = False      # calls sync_all: rt runs every block at once
        self.mix = None                      # cores synchronising each other: rt.mixlaunch
        self.kfc = False                     # ... and the AIC serves the AIVs' Matmul (mix.py)
        self.shuffle_blocks = checked.shuffle_blocks
        # the core context's options word (fixed per binary: computed once, not per launch)
        self.ctx_flags = checked.flags | (FLAG_TRACE if traced else 0) | \
            (kernel_type << KT.KT_SHIFT)
        # per launch (keyed by its args tuple): [counts, blocks]
        self._acc = {}
        self._lock = threading.Lock()
        self._tls = threading.local()        # .core: the calling worker's _Core for this binary

    def _order(self, first, last):
        blocks = np.arange(first, last, dtype=np.int64)
        if self.checked.shuffle_blocks and len(blocks) > 1:
            np.random.default_rng().shuffle(blocks)
        return blocks

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        cr = getattr(self._tls, "core", None)
        if cr is None or self.traced:       # (a traced core's rows follow the environment)
            cr = self._tls.core = _core(self.soc, self.ctx_flags)
        ctx, st = cr.ctx, cr.st
        if self.mix is not None and _mix.is_instance(barrier):
            # one instance of a MIX launch (rt.mixlaunch): block_dim groups
            port, block_num, nblocks = barrier, block_dim, 1
            blocks, total = None, block_dim * len(self.mix.roles)
            _barrier.attach(st, None)
            _mix.attach(st, port, self.kernel_type, kfc=self.kfc,
                        locators=self._locators(cr, st))
            views, gms, flat = self._prepare(args, port.launch)
        else:       # GetBlockNum: the launch's block_dim
            port, block_num, total, nblocks = None, block_dim // self.per_block, block_dim, \
                last - first
            blocks = self._order(first, last)
            _barrier.attach(st, barrier)
            _mix.attach(st, None, self.kernel_type)
            views, gms, flat = self._prepare(args)
        st.rounded = 0
        cr.counters[:] = 0          # core.reset_counters
        report = self.checked.report_gm_overreach
        set_gm_sizes(st, gms, report)
        try:
            if self.checked.sanitize:
                self._run_sanitized(ctx, st, blocks if blocks is not None else
                                    np.array([port.block_idx], np.int64), block_num, total,
                                    views, gms, id(args), port)
            elif self.traced:
                self._run_traced(ctx, st, blocks if blocks is not None else
                                 np.array([port.block_idx], np.int64), block_num, total, views,
                                 args, port.index if port is not None else None)
            elif blocks is None:
                self._run_one(cr, port.block_idx, block_num, views, flat)
            else:
                self._run(ctx, blocks, block_num, views, flat)
        except CompileError:
            raise
        except (KernelError, ZeroDivisionError, IndexError, ValueError, TypeError,
                AssertionError, ArithmeticError, AttributeError, ImportError,
                NotImplementedError) as e:
            # (interpret mode: an unsupported name or method -> the message plus the kernel's
            # file:line, e.g. "asc.LocalTensorAuto (pyasc) is not supported by ascend-emu")
            if port is not None:     # rt reports the group as the block; name the core
                raise self._wrap(e, port.group, block_dim, self._where(e, st),
                                 f"{port.name}: ") from e
            raise self._wrap(e, int(st.block_idx), block_dim, self._where(e, st)) from e
        finally:
            over = read_overreach(st, len(gms)) if report else None
            # core.read_counters, as a list in COUNTER_NAMES order
            done = self._add_counters(id(args), cr.used.tolist(), nblocks, total, over)
        if done:
            warn_overreach(self.name, gms, done)
        if self.checked.report_rounding and st.rounded:
            warnings.warn(f"kernel {self.name}: data_copy rounded count*sizeof down to a multiple "
                          f"of 32 bytes in {int(st.rounded)} call(s) of blocks "
                          f"[{first}, {last}); the tail was not copied (use data_copy_pad)",
                          RuntimeWarning, stacklevel=2)

    def _locators(self, cr, st):
        """(where, mark) of this binary's instances on core `cr` (mix.make_locators), made once per
        core and binary; None for a binary without source lines (interpreted)."""
        lines = getattr(self, "lines", None)
        if lines is None:
            return None
        got = cr.locators.get(id(lines))
        if got is None or got[0] is not lines:
            if len(cr.locators) >= 256:         # binaries come and go (tests): keep it small
                cr.locators.clear()
            got = cr.locators[id(lines)] = (lines, _mix.make_locators(st, lines))
        return got[1]

    @staticmethod
    def _prepare(args, launch=None):
        """(views, gms, flat) of a launch's arguments: the kernel's views, the GM arguments as
        (GMArg, bytes reached), and the arguments as a compiled kernel takes them. A MIX
        launch's instances share them: made by the first, kept on the `launch`
        (rt.crossflags.CrossCoreLaunch.binary_data) until it ends."""
        if launch is not None:
            got = launch.binary_data
            if got is not None and got[0] is args:
                return got[1]
        views, gms, flat = [], [], []
        for a in args:
            if isinstance(a, GMArg):
                v = a.view()
                views.append(v)
                gms.append((a, v.nbytes))
                flat += a.flat()
            else:
                views.append(a)
                if isinstance(a, np.ndarray):
                    flat += (a.ctypes.data, a.size)
                else:
                    flat.append(a)
        out = (views, gms, flat)
        if launch is not None:
            launch.binary_data = (args, out)
        return out

    def _run_one(self, cr, b, block_num, views, flat):
        """Run block `b` alone on core `cr`."""
        self._run(cr.ctx, np.array([b], dtype=np.int64), block_num, views, flat)

    def _run_traced(self, ctx, st, blocks, block_num, block_dim, views, args, instance=None):
        """Run blocks one at a time, taking each one's trace rows from the core's buffer
        (`block_dim`: the launch's instances, complete when that many have run). The rows of an
        instance of a MIX launch are numbered by its `instance` index, not its block_idx (the
        AIC and an AIV of a group share a block_idx): streams group * cores-per-group + slot."""
        for b in blocks:
            st.trace_n = st.trace_lost = 0
            self._run(ctx, np.array([b], dtype=np.int64), block_num, views)
            if st.trace_lost:
                raise _TraceRowsExceeded(len(ctx[TRACE]), int(st.trace_n + st.trace_lost), b)
            self._keep_rows(id(args), ctx[TRACE][:int(st.trace_n)].copy(), block_dim,
                            instance)

    def _keep_rows(self, key, rows, block_dim, instance):
        """One block's rows for the NPU view (take_npu_trace), complete at `block_dim`."""
        if instance is not None:
            rows[:, trace.C_BLOCK] = instance
        with self._lock:
            acc = self._traces.setdefault(key, [[], 0])
            acc[0].append(rows)
            acc[1] += 1
            if acc[1] >= block_dim:
                del self._traces[key]
                while len(self._done) >= 64:        # never taken: keep the newest only
                    self._done.pop(next(iter(self._done)))
                self._done[key] = (np.concatenate(acc[0]), block_dim,
                                   self.mix.roles if instance is not None else ())

    def _run_sanitized(self, ctx, st, blocks, block_num, block_dim, views, gms, launch,
                       port=None):
        """Run blocks one at a time and hand each one's rows, and its fault if it stopped on
        one, to the sanitizer: a faulting block ends there, the others go on (a kernel whose
        blocks wait for each other at sync_all or cross-core flags stops: continuing would
        hang)."""
        san = sanitizer()
        view = rt.npu_view_on()     # rt.profile(npu=True) / asc.npu_trace: its rows too
        for b in blocks:
            st.trace_n = st.trace_lost = 0
            fault, where = None, None
            try:
                self._run(ctx, np.array([b], dtype=np.int64), block_num, views)
            except KernelError as e:
                fault, where = e, self._where(e, st)
            rows = ctx[TRACE][:int(st.trace_n)].copy()
            if view and fault is None and not st.trace_lost:
                self._keep_rows(launch, rows.copy(), block_dim,
                                port.index if port is not None else None)
            if san is not None:
                san.block(self, (launch, block_dim), int(b), rows, fault, where, gms,
                          int(st.trace_lost), *((port.role, port.group) if port is not None
                                                and self.mix is not None else ()))
            if fault is not None and (self.needs_all_resident or self.mix is not None or
                                      san is None or san.raise_faults):
                raise fault         # (no session left to report to: fail as checked mode does)

    def take_npu_trace(self, args):
        """(SoC name, a function returning the per-block `rt.npu.Instr` lists, roles) of the
        finished launch on `args`, or None (rt's profiler calls this once per kernel task while
        the NPU view is on; decoding waits until the simulated view is asked for). `roles`: the
        cores of one group of a MIX launch (rt.mixlaunch.MixSpec.roles), whose lists are then
        its instances' own streams, group by group; () for one list per block."""
        with self._lock:
            got = self._done.pop(id(args), None)
        if got is None:
            return None
        rows, block_dim, roles = got
        lines = self.trace_lines()
        return self.soc.name, lambda: record.decode(rows, lines, block_dim), roles

    def trace_lines(self):
        return record.INTERP_LINES.lines

    def _add_counters(self, launch_key, counts, nblocks, block_dim, over=None):
        """Sum the ranges of one launch (`counts`: a list in `counters` order); the total is
        complete when its last range finishes. `over` (checked mode, gmreach.read_overreach) is
        merged per argument; the call that completes the launch returns the merged over-reach
        (else None)."""
        with self._lock:
            acc = self._acc.get(launch_key)
            if acc is None:
                acc = self._acc[launch_key] = [counts, nblocks, {}]
            else:
                acc[0] = list(map(int.__add__, acc[0], counts))
                acc[1] += nblocks
            if over:
                merge_overreach(acc[2], over)
            self.last_counters = dict(zip(self.counters, acc[0]))
            if acc[1] >= block_dim:
                del self._acc[launch_key]
                return acc[2] or None
        return None

    def _where(self, e, st):
        """(file, line) of the kernel source that raised `e`, or None."""
        return None

    # GM parameters the kernel may write (compiler/gmwrites.py; None: unknown) and the indices
    # of launch arguments they are, set by JitFunction._binary
    written, written_args = None, None

    def gm_writes(self, args):
        """Indices of `args` the kernel may write (rt's mem-check asks), or None if unknown."""
        return None if self.written_args is None else list(self.written_args)

    def _wrap(self, e, block_idx, block_dim, where=None, who=""):
        if isinstance(e, GMReadError) and len(e.args) > 2 and \
                e.args[1] == "GlobalTensor.set_global_buffer" and self.written and \
                0 <= e.args[2] < len(self.gm_names) and self.gm_names[e.args[2]] in self.written:
            # binding more than an argument holds is checked at the bind, which reads nothing:
            # for an argument the kernel writes (an output), name it what it risks, a write
            e = GMWriteError(e.args[0].replace("GM read must", "GM write must"), *e.args[1:])
        msg = who + str(e)
        for i, n in enumerate(self.gm_names):      # GM arguments are numbered in launch order
            msg = msg.replace(f"argument #{i} ", f"argument {n!r} ")
        if where is not None:
            file, line = where
            text = linecache.getline(file, line).strip()
            msg += f'\n  File "{file}", line {line}, in kernel {self.name}' + \
                (f"\n    {text}" if text else "")
        code = (E.ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW if isinstance(e, GMReadError) else
                E.ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW if isinstance(e, GMWriteError) else
                E.ACL_ERROR_RT_AICORE_EXCEPTION)
        if isinstance(e, _TraceRowsExceeded):       # the NPU view's limit, not a kernel fault
            return rt.NpuTraceLimitError(code, msg, block_idx, rows=e.rows, issued=e.issued)
        return rt.KernelFault(code, msg, block_idx)   # rt names the kernel and block_idx=<i>/<n>


_EXACT = (int, float, bool, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
          np.uint16, np.uint32, np.uint64, np.float16, np.float32, np.float64)


def _arg_key(args):
    """The Python types of `args`, tuples and NamedTuples by their items', where those decide
    the Numba type (numpy scalars, bool, float, an int in int64's range); None if any does not."""
    key = []
    for a in args:
        t = type(a)
        if t is int:
            if not -2**63 <= a < 2**63:
                return None
        elif issubclass(t, tuple):
            k = _arg_key(a)
            if k is None:
                return None
            t = (t, k)
        elif t not in _EXACT:
            return None
        key.append(t)
    return tuple(key)


class CompiledBinary(Binary):
    interruptible = False       # nopython code: a device reset cannot stop it mid-range

    def __init__(self, name, soc, checked, param_names, run, lines, gm_names=(), traced=False,
                 kernel_type=KT.AICORE, module_file=""):
        super().__init__(name, soc, checked, param_names, gm_names, traced, kernel_type)
        self.run = run
        self.lines = lines      # st.src_line -> (file, line), from the generated module
        self.module_file = module_file
        self.compiled = False
        self._entries = {}          # _arg_key(args) -> compiled entry point (`_entry`)
        self._entry_of = None       # (flat arguments of the latest launch, its entry point)

    def trace_lines(self):
        return self.lines

    def _where(self, e, st):
        k = int(st.src_line)
        return self.lines[k] if 0 < k < len(self.lines) else None

    def _run(self, ctx, blocks, block_dim, views, flat=None):
        # arrays go in as (address, length): the generated _run rebuilds them without reference
        # counts, so a fault leaks nothing (compiler/rawptr.py); ctx, blocks and views stay
        # alive here for the duration of the call. `flat`: the views so flattened already
        blocks = np.ascontiguousarray(blocks, dtype=np.int64)
        if flat is None:
            flat = []
            for v in views:
                if isinstance(v, np.ndarray):
                    flat += (v.ctypes.data, v.size)
                else:
                    flat.append(v)
        self._call((_addrs(ctx), (blocks.ctypes.data, len(blocks)), block_dim, *flat))

    def _run_one(self, cr, b, block_num, views, flat):
        # the core's one-block array, its address taken once (views stay alive in the caller)
        cr.one[0] = b
        args = (cr.addrs, (cr.one_addr, 1), block_num, *flat)
        got = self._entry_of
        if got is None or got[0] is not flat:       # a launch's instances share `flat`
            got = self._entry_of = (flat, self._entry(args))
        if got[1] is None:
            self._call(args)
        else:
            got[1](*args)

    def _entry(self, args):
        """The compiled entry point the dispatcher would pick for `args`, or None (not compiled
        yet, or argument types `_arg_key` cannot tell apart). Numba's dispatcher types each
        argument at each call; a NamedTuple goes through its Python `typeof` (~6 us per call for
        the forward's two records, against ~0.5 us for the entry point itself). The types are
        looked up once per kind of argument list (`_arg_key`), then once per launch (its
        instances share one flattened list)."""
        if not self.compiled:
            return None
        key = _arg_key(args)
        if key is None:
            return None
        ep = self._entries.get(key)
        if ep is None:
            try:
                cres = self.run.overloads.get(tuple(self.run.typeof_pyval(a) for a in args))
            except Exception:   # noqa: BLE001 - the dispatcher's own call reports it
                return None
            if cres is None:
                return None
            ep = self._entries[key] = cres.entry_point
        return ep

    def _call(self, args):
        try:
            if not self.compiled:           # compile (or load) once, not from many threads
                with BUILD_LOCK:
                    if not self.compiled:
                        self.run.compile(tuple(typeof(a) for a in args))
                        self.compiled = True
            self.run(*args)
        except NumbaError as e:      # typing fails at the first call: name the kernel's line
            raise typing_error(e, self.name, self.module_file, self.lines) from None


class InterpretedBinary(Binary):
    def __init__(self, name, soc, checked, param_names, fn, consts, gm_names=(), traced=False,
                 kernel_type=KT.AICORE):
        super().__init__(name, soc, checked, param_names, gm_names, traced, kernel_type)
        self.fn, self.consts = fn, consts

    def _where(self, e, st):
        """The innermost traceback frame outside the ascendc package: the kernel's line."""
        where = None
        tb = e.__traceback__
        while tb is not None:
            file = tb.tb_frame.f_code.co_filename
            if not file.startswith(_PACKAGE_DIR):
                where = (file, tb.tb_lineno)
            tb = tb.tb_next
        return where

    def _run(self, ctx, blocks, block_dim, views, flat=None):
        args = []
        it = iter(views)
        for n in self.param_names:
            if n in self.consts:
                args.append(self.consts[n])
            else:
                v = next(it)
                # integers get pyasc's PlainValue methods (n.ceildiv(d), tiling.m.ceildiv(...))
                args.append(api.wrap(api.GlobalAddress, v) if isinstance(v, np.ndarray)
                            else api.kernel_value(v))
        prev = api.set_ctx(ctx)
        prev_soc = api.set_launch_soc(self.soc)
        try:
            for b in blocks:
                core.begin_block(ctx, b, block_dim)
                autotensor.auto_reset(ctx)     # no LocalTensorAuto regions yet
                for v in views:
                    if isinstance(v, np.ndarray):
                        core.register_gm(ctx, v)
                try:
                    self.fn(*args)
                except KernelReturn:     # the AIC after serving its Matmul (adv/kfc.py)
                    pass
                prims.kernel_end(ctx)
        finally:
            api.set_ctx(prev)
            api.set_launch_soc(prev_soc)
