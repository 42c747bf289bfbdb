"""`@asc.jit` and `kernel[block_dim, stream](...)`: argument marshalling, specialisation,
and the two binaries (interpreted / compiled) that rt's core pool runs.

The choice between interpret and compiled mode is made here only (options.interpret_mode).
"""
from __future__ import annotations

import inspect
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
from .options import OPTIONS, kernel_type_of  # noqa: F401  (jit's own names, defined there)
from .lang import api, core, dtypes as D, prims, record, trace
from .lang.prims import autotensor, ktype as KT
from .lang.state import FLAG_TRACE
from .lang.gmreach import merge_overreach, read_overreach, set_gm_sizes, warn_overreach
from .compiler.cache import load_module
from .compiler.codegen import kernel_module
from .compiler.diagnostics import typing_error
from .compiler.frontend import asc_calls
from .compiler.gmwrites import written_params
from .lang import barrier as _barrier
from .lang.errors import CompileError, GMReadError, GMWriteError, KernelError
from .lang.kernel import KernelFunction

_CTX = threading.local()
# Building a kernel (ast.parse, codegen, module load) and Numba's first compile of its dispatcher
# are not thread-safe (CPython's AST validator and Numba's first-use registrations race): one
# lock for both, taken only until a binary is ready.
_BUILD_LOCK = threading.RLock()
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def trace_rows() -> int:
    """Rows of a core's NPU-view trace buffer (env ASCEND_EMU_NPU_TRACE_ROWS, default 262144:
    ~37 MB per worker while tracing)."""
    v = os.environ.get("ASCEND_EMU_NPU_TRACE_ROWS", "")
    return int(v) if v.isdigit() and int(v) > 0 else trace.DEFAULT_ROWS


def _core_ctx(soc, flags):
    """The calling worker's context for `soc` (local memories reused across launches)."""
    cache = getattr(_CTX, "cache", None)
    if cache is None:
        cache = _CTX.cache = {}
    rows = trace_rows() if flags & FLAG_TRACE else 1
    key = (soc.name, flags, rows)
    if key not in cache:
        cache[key] = core.new_ctx(soc, flags, rows)
    return cache[key]


class _GM:
    """A GM argument as the binary receives it: device address, bytes, dtype."""
    __slots__ = ("ptr", "nbytes", "dtype", "name", "owner", "_view")

    def __init__(self, ptr, nbytes, dtype: D.DataType, name, owner=None):
        self.ptr, self.nbytes, self.dtype, self.name = int(ptr), int(nbytes), dtype, name
        self.owner = owner  # keeps a DeviceArray alive until the launch's task is done
        self._view = None

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


class _Binary(rt.KernelBinary):
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
        self.shuffle_blocks = checked.shuffle_blocks
        # the core context's options word (fixed per binary: computed once, not per launch)
        self.ctx_flags = checked.flags | (FLAG_TRACE if traced else 0) | \
            (kernel_type << KT.KT_SHIFT)
        # per launch (keyed by its args tuple): [counts, blocks]
        self._acc = {}
        self._lock = threading.Lock()

    def _order(self, first, last):
        blocks = np.arange(first, last, dtype=np.int64)
        if self.checked.shuffle_blocks and len(blocks) > 1:
            np.random.default_rng().shuffle(blocks)
        return blocks

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        ctx = _core_ctx(self.soc, self.ctx_flags)
        block_num = block_dim // self.per_block    # GetBlockNum: the launch's block_dim
        st = core.state(ctx)
        _barrier.attach(st, barrier)
        st.rounded = 0
        core.reset_counters(ctx)
        views, gms = [], []
        for a in args:
            if isinstance(a, _GM):
                v = a.view()
                views.append(v)
                gms.append((a, v.nbytes))
            else:
                views.append(a)
        report = self.checked.report_gm_overreach
        set_gm_sizes(st, gms, report)
        try:
            if self.traced:
                self._run_traced(ctx, st, first, last, block_dim, views, args)
            else:
                self._run(ctx, self._order(first, last), block_num, views)
        except CompileError:
            raise
        except (KernelError, ZeroDivisionError, IndexError, ValueError, TypeError,
                AssertionError, ArithmeticError, AttributeError, ImportError,
                NotImplementedError) as e:
            # (interpret mode: an unsupported name or method -> the message plus the kernel's
            # file:line, e.g. "asc.LocalTensorAuto (pyasc) is not supported by ascend-emu")
            raise self._wrap(e, int(st.block_idx), block_dim, self._where(e, st)) from e
        finally:
            over = read_overreach(st, len(gms)) if report else None
            done = self._add_counters(id(args), core.read_counters(ctx), last - first, block_dim,
                                      over)
        if done:
            warn_overreach(self.name, gms, done)
        if self.checked.report_rounding and st.rounded:
            warnings.warn(f"kernel {self.name}: data_copy rounded count*sizeof down to a multiple "
                          f"of 32 bytes in {int(st.rounded)} call(s) of blocks "
                          f"[{first}, {last}); the tail was not copied (use data_copy_pad)",
                          RuntimeWarning, stacklevel=2)

    def _run_traced(self, ctx, st, first, last, block_dim, views, args):
        """Run blocks one at a time, taking each one's trace rows from the core's buffer."""
        for b in self._order(first, last):
            st.trace_n = st.trace_lost = 0
            self._run(ctx, np.array([b], dtype=np.int64), block_dim // self.per_block, views)
            if st.trace_lost:
                raise KernelError(
                    f"rt.profile(npu=True): a block must issue at most {len(ctx[3])} "
                    f"instructions to be recorded, got {int(st.trace_n + st.trace_lost)} in "
                    f"block_idx={b} (raise ASCEND_EMU_NPU_TRACE_ROWS)")
            rows = ctx[3][:int(st.trace_n)].copy()
            with self._lock:
                acc = self._traces.setdefault(id(args), [[], 0])
                acc[0].append(rows)
                acc[1] += 1
                if acc[1] >= block_dim:
                    del self._traces[id(args)]
                    while len(self._done) >= 64:        # never taken: keep the newest only
                        self._done.pop(next(iter(self._done)))
                    self._done[id(args)] = (np.concatenate(acc[0]), block_dim)

    def take_npu_trace(self, args):
        """(SoC name, a function returning the per-block `rt.npu.Instr` lists) of the finished
        launch on `args`, or None (rt's profiler calls this once per kernel task while the NPU
        view is on; decoding waits until the simulated view is asked for)."""
        with self._lock:
            got = self._done.pop(id(args), None)
        if got is None:
            return None
        rows, block_dim = got
        lines = self.trace_lines()
        return self.soc.name, lambda: record.decode(rows, lines, block_dim)

    def trace_lines(self):
        return record.INTERP_LINES.lines

    def _add_counters(self, launch_key, counts, nblocks, block_dim, over=None):
        """Sum the ranges of one launch; the total is complete when its last range finishes.
        `over` (checked mode, gmreach.read_overreach) is merged per argument; the call that
        completes the launch returns the merged over-reach (else None)."""
        with self._lock:
            acc = self._acc.setdefault(launch_key, [dict.fromkeys(counts, 0), 0, {}])
            for k, v in counts.items():
                acc[0][k] += v
            acc[1] += nblocks
            merge_overreach(acc[2], over)
            self.last_counters = dict(acc[0])
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

    def _wrap(self, e, block_idx, block_dim, where=None):
        if isinstance(e, GMReadError) and len(e.args) > 2 and \
                e.args[1] == "GlobalTensor.set_global_buffer" and self.written and \
                0 <= e.args[2] < len(self.gm_names) and self.gm_names[e.args[2]] in self.written:
            # binding more than an argument holds is checked at the bind, which reads nothing:
            # for an argument the kernel writes (an output), name it what it risks, a write
            e = GMWriteError(e.args[0].replace("GM read must", "GM write must"), *e.args[1:])
        msg = str(e)
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
        return rt.KernelFault(code, msg, block_idx)   # rt names the kernel and block_idx=<i>/<n>


class CompiledBinary(_Binary):
    interruptible = False       # nopython code: a device reset cannot stop it mid-range

    def __init__(self, name, soc, checked, param_names, run, lines, gm_names=(), traced=False,
                 kernel_type=KT.AICORE, module_file=""):
        super().__init__(name, soc, checked, param_names, gm_names, traced, kernel_type)
        self.run = run
        self.lines = lines      # st.src_line -> (file, line), from the generated module
        self.module_file = module_file
        self.compiled = False

    def trace_lines(self):
        return self.lines

    def _where(self, e, st):
        k = int(st.src_line)
        return self.lines[k] if 0 < k < len(self.lines) else None

    def _run(self, ctx, blocks, block_dim, views):
        # arrays go in as (address, length): the generated _run rebuilds them without reference
        # counts, so a fault leaks nothing (compiler/rawptr.py); ctx, blocks and views stay
        # alive here for the duration of the call
        mem, stage, st, tr = ctx
        c = (mem.ctypes.data, mem.size, stage.ctypes.data, stage.size, st.ctypes.data,
             tr.ctypes.data, tr.shape[0])
        blocks = np.ascontiguousarray(blocks, dtype=np.int64)
        flat = []
        for v in views:
            if isinstance(v, np.ndarray):
                flat += (v.ctypes.data, v.size)
            else:
                flat.append(v)
        args = (c, (blocks.ctypes.data, len(blocks)), block_dim, *flat)
        try:
            if not self.compiled:           # compile (or load) once, not from many threads
                with _BUILD_LOCK:
                    if not self.compiled:
                        self.run.compile(tuple(typeof(a) for a in args))
                        self.compiled = True
            self.run(*args)
        except NumbaError as e:      # typing fails at the first call: name the kernel's line
            raise typing_error(e, self.name, self.module_file, self.lines) from None


class InterpretedBinary(_Binary):
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

    def _run(self, ctx, blocks, block_dim, views):
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
                self.fn(*args)
                prims.kernel_end(ctx)
        finally:
            api.set_ctx(prev)
            api.set_launch_soc(prev_soc)


_BLAS_LIMIT = []


def single_threaded_blas():
    """Core workers each run BLAS (mmad); a multi-threaded BLAS under them oversubscribes the
    CPU. Like torch's intra-op setting this is process-wide: BLAS runs single-threaded after the
    first launch (threadpoolctl; undo with `threadpoolctl.threadpool_limits` in your code)."""
    if not _BLAS_LIMIT:
        import scipy.linalg.cython_blas  # noqa: F401  (the BLAS that Numba's np.dot calls)
        from threadpoolctl import threadpool_limits
        _BLAS_LIMIT.append(threadpool_limits(limits=1, user_api="blas"))


def _scalar(v, name, kernel):
    if isinstance(v, (bool, np.bool_)):
        return np.int8(v)
    if isinstance(v, int):
        if not -2**31 <= v < 2**31:
            raise E.AclError(E.ACL_ERROR_INVALID_PARAM,
                             f"{kernel}: int argument must fit int32 (pass np.int64 for wider "
                             f"values), got {name}={v}")
        return np.int32(v)
    if isinstance(v, float):
        return np.float32(v)
    if isinstance(v, np.generic):
        return v
    raise E.AclError(E.ACL_ERROR_INVALID_PARAM,
                     f"{kernel}: argument must be an array, rt.DeviceArray, int, float or numpy "
                     f"scalar, got {name}={type(v).__name__}")


def _torch_to_numpy(t):
    if str(t.device) != "cpu":
        raise E.AclError(E.ACL_ERROR_INVALID_PARAM,
                         f"kernel argument: torch tensors must be on the CPU, "
                         f"got device={t.device}")
    if str(t.dtype) == "torch.bfloat16":
        import torch
        return t.view(torch.int16).numpy().view(D.BFLOAT16)
    return t.numpy()


# cube instructions a kernel may issue directly (without the Matmul API): such a kernel's blocks
# own a whole AI Core (kernel type AICORE, see lang/prims/ktype.py)
_CUBE_CALLS = frozenset(("mmad", "load_data", "fixpipe"))


class JitFunction(KernelFunction):
    """A kernel (or helper) declared with `@asc.jit`. Launch with `kernel[block_dim](*args)` or
    `kernel[block_dim, stream](*args)` (pyasc syntax); keyword arguments name kernel parameters
    or options (OPTIONS)."""

    def __init__(self, fn, **options):
        super().__init__(fn)
        clash = set(self.param_names) & set(OPTIONS)
        if clash:
            raise TypeError(f"asc.jit: kernel parameters must not share a name with a jit "
                            f"option, got {sorted(clash)}")
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TypeError(f"asc.jit: unknown option {unknown[0]!r} for {self.__name__} "
                            f"(options: {', '.join(OPTIONS)})")
        if options.get("kernel_type") is not None:
            kernel_type_of(options["kernel_type"], f"asc.jit({self.__name__})")
        self.options = options
        self.gm_params = frozenset(         # parameters annotated asc.GlobalAddress
            n for n, p in inspect.signature(fn).parameters.items()
            if "GlobalAddress" in str(getattr(p.annotation, "__name__", p.annotation)))
        self._cache: dict = {}
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<asc.jit kernel {self.__name__}>"

    def __call__(self, *args, **kwargs):
        if api.in_kernel():  # a helper called from an interpreted kernel
            return self.fn(*args, **kwargs)
        raise TypeError(f"{self.__name__}: kernels are launched with "
                        f"{self.__name__}[block_dim](...) or [block_dim, stream]")

    def __getitem__(self, spec):
        spec = spec if isinstance(spec, tuple) else (spec,)
        if not 1 <= len(spec) <= 2:
            raise TypeError(f"{self.__name__}[...]: launch must be [block_dim] or "
                            f"[block_dim, stream], got {spec!r}")
        block_dim = spec[0]
        stream = spec[1] if len(spec) > 1 else None
        if not isinstance(block_dim, (int, np.integer)) or not 1 <= block_dim <= 65535:
            raise E.AclError(E.ACL_ERROR_RT_PARAM_INVALID,
                             f"{self.__name__}[]: block_dim must be in [1, 65535], got "
                             f"block_dim={block_dim!r}")
        return lambda *args, **kw: self.launch(int(block_dim), stream, args, kw)

    # -- launch ---------------------------------------------------------------------------------
    def bind_launch_args(self, args, kwargs):
        """(all kernel arguments in parameter order, options) of a launch's positional and
        keyword arguments: a keyword naming a parameter binds it (as pyasc binds the call with
        `inspect.signature(fn).bind`), one naming an option (OPTIONS) is an option; anything
        else is an error."""
        named, opts = {}, {}
        for k, v in kwargs.items():
            if k in self.param_names:
                named[k] = v
            elif k in OPTIONS:
                opts[k] = v
            else:
                raise TypeError(f"{self.__name__}: unknown launch option {k!r} (neither a "
                                f"parameter of the kernel ({', '.join(self.param_names)}) nor "
                                f"an option ({', '.join(OPTIONS)}))")
        if len(args) > len(self.param_names):
            raise TypeError(f"{self.__name__}: expected {len(self.param_names)} arguments "
                            f"({', '.join(self.param_names)}), got {len(args)}")
        full = list(args)
        for i, name in enumerate(self.param_names):
            if i < len(args):
                if name in named:
                    raise TypeError(f"{self.__name__}: got multiple values for argument "
                                    f"{name!r}")
                continue
            if name not in named:
                raise TypeError(f"{self.__name__}: missing a required argument: {name!r} "
                                f"(expected {len(self.param_names)} arguments: "
                                f"{', '.join(self.param_names)})")
            full.append(named[name])
        return tuple(full), opts

    # pyasc's kernel-type detection for Matmul kernels (pyasc scripts: ascendc.pyasc_compat);
    # False: a kernel of ours that registers a Matmul runs a whole AI Core per block (AICORE)
    detect_mix_as_pyasc = False

    def kernel_type(self, opts) -> int:
        """The kernel type of a launch (lang/prims/ktype.py): the `kernel_type` option, else
        detected as pyasc detects it (python/asc/runtime/compiler.py, DetectKernelTypePass: a
        kernel that registers a Matmul object is MIX_AIC_1_2, or AIC_ONLY with
        matmul_cube_only=True; the others AIV_ONLY), with two exceptions that keep this
        emulator's own convention (a block is a whole AI Core: cube and vector work in one
        instance, block_dim = AI Cores) for its kernels: a kernel issuing cube instructions
        itself (mmad, load_data, fixpipe) is AICORE, and so is a Matmul kernel declared with
        `ascendc.jit` (pyasc scripts' `asc.jit` detects MIX_AIC_1_2 as pyasc does; pass
        kernel_type="MIX_AIC_1_2" to get it with ascendc.jit)."""
        if opts.get("kernel_type") is not None:
            return kernel_type_of(opts["kernel_type"], self.__name__)
        calls = self._asc_calls()
        if "adv.register_matmul" in calls:
            if opts.get("matmul_cube_only"):
                return KT.AIC_ONLY
            return KT.MIX_AIC_1_2 if self.detect_mix_as_pyasc else KT.AICORE
        if calls & _CUBE_CALLS:
            return KT.AICORE
        return KT.AIV_ONLY

    def launch(self, block_dim, stream, args, kwargs):
        args, kwargs = self.bind_launch_args(args, kwargs)
        rt.ensure_device()
        single_threaded_blas()
        opts = {**self.options, **kwargs}
        interpret = O.interpret_mode(opts.get("interpret"))
        checked = O.resolve(opts.get("checked"))
        soc = rt.get_soc(opts.get("soc"))
        traced = rt.npu_view_on()
        ktype = self.kernel_type(opts)
        self._check_resident(block_dim, soc)
        consts, launch_args, sig, host_arrays = {}, [], [], []
        host_args = rt.array.HostArgs()
        try:
            for name, v in zip(self.param_names, args):
                if name in self.const_params:
                    consts[name] = v
                    continue
                if hasattr(v, "_kernel_record"):   # a tiling struct (asc.adv.TCubeTiling)
                    launch_args.append(v._kernel_record())
                    sig.append(("R", type(v).__name__))
                    continue
                gm = self._gm_arg(name, v, stream, host_arrays, len(launch_args))
                if gm is not None:
                    launch_args.append(gm)
                    sig.append(("GA", gm.dtype.name))
                elif name in self.gm_params:     # e.g. np.int64(ptr): not a typing dump later
                    raise E.AclError(E.ACL_ERROR_INVALID_PARAM,
                                     f"{self.__name__}: GlobalAddress argument {name!r} must be "
                                     f"an rt.DeviceArray, rt.DevicePtr, numpy array or CPU torch "
                                     f"tensor (an integer is not a device address), got "
                                     f"{name}={v!r}")
                else:
                    s = _scalar(v, name, self.__name__)
                    launch_args.append(s)
                    sig.append(("S", s.dtype.name))
            key = (interpret, checked, soc.name, tuple(sorted((k, repr(v)) for k, v in
                                                             consts.items())), tuple(sig), traced,
                   ktype)
            binary = self._binary(key, interpret, checked, soc, consts, sig, traced, ktype)
            for i, name, v in host_arrays:    # mapped if only read, else copied (rt.HostArgs)
                dev = host_args.add(v, binary.written is None or name in binary.written)
                launch_args[i] = _GM(dev.ptr, dev.nbytes, D.from_numpy(v.dtype), name, dev)
            # a MIX_AIC_1_2 launch runs block_dim groups: 2 * block_dim AIV instances
            task = rt.launch(binary, block_dim * binary.per_block, tuple(launch_args), stream)
            if host_arrays:   # a synchronous launch: its errors name the launch, as it was called
                (stream or rt.current_stream()).synchronize(
                    api=f"kernel {binary.name!r}[{block_dim}]", own=task)
                host_args.copy_back()
        finally:
            host_args.free()
        return None

    def _gm_arg(self, name, v, stream, host_arrays, index):
        if isinstance(v, rt.DeviceArray):
            return _GM(v.ptr, v.nbytes, D.from_numpy(v.dtype), name, v)
        if type(v).__module__.startswith("torch"):
            v = _torch_to_numpy(v)
        if isinstance(v, np.ndarray):
            if not v.flags.c_contiguous:
                raise E.AclError(E.ACL_ERROR_INVALID_PARAM,
                                 f"{self.__name__}: array arguments must be C-contiguous, got "
                                 f"{name} with strides {v.strides}")
            host_arrays.append((index, name, v))     # its device buffer: after the binary
            return _GM(0, v.nbytes, D.from_numpy(v.dtype), name)
        if isinstance(v, rt.HostPtr):
            raise E.AclError(E.ACL_ERROR_RT_AICORE_EXCEPTION,
                             f"kernel {self.__name__}: block_idx=0: argument {name!r} is a host "
                             f"address {int(v):#x} (offset 0), an illegal address for an AI Core; "
                             f"copy the data to device memory (rt.to_device / rt.memcpy) first")
        if isinstance(v, rt.DevicePtr):
            return _GM(v, v.size, D.uint8, name)
        return None

    def _asc_calls(self):
        if not hasattr(self, "_calls"):
            self._calls = asc_calls(self.fn)
        return self._calls

    def _check_resident(self, block_dim, soc):
        """A kernel calling sync_all needs all its blocks resident: no more than the SoC has."""
        if "sync_all" in self._asc_calls():
            limit, what = _barrier.resident_limit(soc, self._asc_calls())
            if block_dim > limit:
                raise E.AclError(E.ACL_ERROR_RT_PARAM_INVALID,
                                 f"{self.__name__}[]: block_dim must be <= {limit}, the "
                                 f"{soc.name}'s {what} count, for a kernel that calls "
                                 f"asc.sync_all (every block must be resident at once, or the "
                                 f"NPU hangs), got block_dim={block_dim}")

    def _binary(self, key, interpret, checked, soc, consts, sig, traced=False,
                ktype=KT.AICORE):
        b = self._cache.get(key)
        if b is not None:
            return b
        with self._lock, _BUILD_LOCK:
            b = self._cache.get(key)
            if b is not None:
                return b
            rt_params = [n for n in self.param_names if n not in consts]
            gm_names = [n for n, s in zip(rt_params, sig) if s[0] == "GA"]
            if interpret:
                b = InterpretedBinary(self.__name__, soc, checked, self.param_names, self.fn,
                                      consts, gm_names, traced, ktype)
            else:
                mod = load_module(kernel_module(self, consts, sig, soc), self.__name__)
                b = CompiledBinary(self.__name__, soc, checked, self.param_names, mod._run,
                                   mod._LINES, gm_names, traced, ktype, mod.__file__)
            b.needs_all_resident = "sync_all" in self._asc_calls()
            b.written = written_params(self.fn, gm_names)
            if b.written is not None:
                b.written_args = tuple(i for i, n in enumerate(rt_params) if n in b.written)
            self._cache[key] = b
            return b


def jit(fn=None, **options):
    """Mirrors pyasc `@asc.jit` / `@asc.jit(**options)`. Options: interpret (bool), checked
    (bool or CheckedOptions), soc (SoC name), kernel_type (pyasc's KernelType or its name;
    detected when not given, see JitFunction.kernel_type), matmul_cube_only; pyasc's other
    codegen/compile options are accepted and change nothing (OPTIONS)."""
    if fn is None:
        return lambda f: JitFunction(f, **options)
    return JitFunction(fn, **options)
