"""`@asc.jit` and `kernel[block_dim, stream](...)`: argument binding and marshalling,
specialisation, and the choice of binary (binaries.py: interpreted or compiled) a launch runs.

The choice between interpret and compiled mode is made here only (options.interpret_mode).
"""
from __future__ import annotations

import inspect
import threading

import numpy as np

import rt
from rt import errors as E

from . import options as O
from .options import OPTIONS, kernel_type_of  # noqa: F401  (jit's own names, defined there)
from .binaries import BUILD_LOCK, CompiledBinary, GMArg, InterpretedBinary, sanitizer
from .lang import api, dtypes as D
from .lang.prims import ktype as KT
from .compiler.cache import load_module
from .compiler.codegen import kernel_module
from .compiler.frontend import asc_calls
from .compiler.gmwrites import written_params
from .lang import barrier as _barrier
from . import mix as _mix
from .compiler.syncscope import sync_scope
from .lang.kernel import KernelFunction


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
                     f"{kernel}: argument must be an array, rt.DeviceArray, int, float, numpy "
                     f"scalar or NamedTuple of those, got {name}={type(v).__name__}")


def _record(v, name, kernel):
    """A NamedTuple argument as the kernel gets it (read by field: `shape.s1`), its fields
    converted as scalar arguments are (nested NamedTuples likewise)."""
    if not (isinstance(v, tuple) and hasattr(type(v), "_fields")):
        return _scalar(v, name, kernel)
    return type(v)(*(_record(x, f"{name}.{f}", kernel) for f, x in zip(type(v)._fields, v)))


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
        if not isinstance(block_dim, (int, np.integer)) or isinstance(block_dim, bool) or \
                not 1 <= block_dim <= 65535:
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
        state = self._state(opts)
        host_arrays = []
        host_args = rt.array.HostArgs()
        try:
            binary, blocks, launch_args = self._bind(block_dim, args, opts, state, host_arrays)
            rec = getattr(_RECORDING, "launches", None)
            if rec is not None:         # record_launches(): replayable if all on the device
                rec.append(PreparedLaunch(self, block_dim, args, opts, state, binary, blocks,
                                          launch_args) if not host_arrays else None)
            for i, name, v in host_arrays:    # mapped if only read, else copied (rt.HostArgs)
                dev = host_args.add(v, binary.written is None or name in binary.written)
                launch_args[i] = GMArg(dev.ptr, dev.nbytes, D.from_numpy(v.dtype), name, dev)
            task = rt.launch(binary, blocks, tuple(launch_args), stream)
            if host_arrays:   # a synchronous launch: its errors name the launch, as it was called
                (stream or rt.current_stream()).synchronize(
                    api=f"kernel {binary.name!r}[{block_dim}]", own=task)
                host_args.copy_back()
        finally:
            host_args.free()
        return None

    def _state(self, opts) -> tuple:
        """(interpret, checked, soc, traced): the process-wide settings a launch's binary
        depends on besides its arguments (environment, defaults, NPU view, sanitizer)."""
        interpret = O.interpret_mode(opts.get("interpret"))
        checked = O.resolve(opts.get("checked"))
        soc = rt.get_soc(opts.get("soc"))
        traced = rt.npu_view_on()
        if sanitizer() is not None:       # ascendc/sanitize: checked, every access recorded
            checked, traced = O.SANITIZED, True
        return interpret, checked, soc, traced

    def _bind(self, block_dim, args, opts, state, host_arrays) -> tuple:
        """(binary, blocks to launch, argument list) of a launch in `state` (`_state`); host
        arrays among the arguments go to `host_arrays` (their slots are filled by the caller)."""
        interpret, checked, soc, traced = state
        ktype = self.kernel_type(opts)
        mix = _mix.mix_spec(ktype, self._sync_scope(), self._asc_calls(), checked)
        if mix is None:
            self._check_resident(block_dim, soc)
        _mix.check_block_dim(self.__name__, block_dim, soc, mix)
        consts, launch_args, sig = {}, [], []
        for name, v in zip(self.param_names, args):
            if name in self.const_params:
                consts[name] = v
                continue
            if hasattr(v, "_kernel_record") or hasattr(type(v), "_fields"):  # a struct
                launch_args.append(v._kernel_record() if hasattr(v, "_kernel_record") else
                                   _record(v, name, self.__name__))
                sig.append(("R", type(v).__name__))
                continue
            gm = self._gm_arg(name, v, host_arrays, len(launch_args))
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
                sig.append(("S", _dtype_name(s.dtype)))
        key = (interpret, checked, soc.name, tuple(sorted((k, repr(v)) for k, v in
                                                         consts.items())), tuple(sig), traced,
               ktype)
        binary = self._binary(key, interpret, checked, soc, consts, sig, traced, ktype, mix)
        # a MIX launch runs block_dim groups (rt.mixlaunch); a Matmul kernel detected as
        # MIX_AIC_1_2 runs its 2 * block_dim AIV instances on the core pool
        return binary, block_dim if mix is not None else block_dim * binary.per_block, \
            launch_args

    def _gm_arg(self, name, v, host_arrays, index):
        if isinstance(v, rt.DeviceArray):
            return GMArg(v.ptr, v.nbytes, D.from_numpy(v.dtype), name, v)
        if type(v).__module__.startswith("torch"):
            v = _torch_to_numpy(v)
        if isinstance(v, np.ndarray):
            if not v.flags.c_contiguous:
                raise E.AclError(E.ACL_ERROR_INVALID_PARAM,
                                 f"{self.__name__}: array arguments must be C-contiguous, got "
                                 f"{name} with strides {v.strides}")
            host_arrays.append((index, name, v))     # its device buffer: after the binary
            return GMArg(0, v.nbytes, D.from_numpy(v.dtype), name)
        if isinstance(v, rt.HostPtr):
            raise E.AclError(E.ACL_ERROR_RT_AICORE_EXCEPTION,
                             f"kernel {self.__name__}: block_idx=0: argument {name!r} is a host "
                             f"address {int(v):#x} (offset 0), an illegal address for an AI Core; "
                             f"copy the data to device memory (rt.to_device / rt.memcpy) first")
        if isinstance(v, rt.DevicePtr):
            return GMArg(v, v.size, D.uint8, name)
        return None

    def _asc_calls(self):
        if not hasattr(self, "_calls"):
            self._calls = asc_calls(self.fn)
        return self._calls

    def _sync_scope(self):
        if not hasattr(self, "_scope"):
            self._scope = sync_scope(self.fn)
        return self._scope

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
                ktype=KT.AICORE, mix=None):
        """The binary of cache `key`, built on first use. Its `mix` / `kfc` are set here, once,
        before any other thread can see it: both follow from parts of the key (the kernel type,
        the checked options) and the kernel's source, so every launch of one binary has the same
        ones and no launch writes them again (a launch writing them would race with another
        thread's launch of the same binary)."""
        b = self._cache.get(key)
        if b is not None:
            return b
        with self._lock, BUILD_LOCK:
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
            b.mix = mix
            b.kfc = mix is not None and _mix.serves_matmul(ktype, self._asc_calls())
            b.needs_all_resident = "sync_all" in self._asc_calls()
            b.written = written_params(self.fn, gm_names)
            if b.written is not None:
                b.written_args = tuple(i for i, n in enumerate(rt_params) if n in b.written)
            self._cache[key] = b
            return b


_RECORDING = threading.local()
_DT_NAMES: dict = {}


def _dtype_name(dt) -> str:
    """numpy dtype -> its name, memoised (numpy computes dtype.name anew on each access)."""
    name = _DT_NAMES.get(dt)
    if name is None:
        name = _DT_NAMES[dt] = dt.name
    return name


class PreparedLaunch:
    """A launch recorded by `record_launches`: its binary and argument tuple, bound once.
    Calling it (`p(stream)`) queues the same launch again with `rt.launch` directly, without
    binding and converting the arguments anew; the binary is chosen again only if the settings
    it was chosen for changed since (`JitFunction._state`: interpret / checked defaults, the
    NPU view, the sanitizer). The arguments are the recorded ones: device buffers by address,
    scalars by value."""
    __slots__ = ("fn", "block_dim", "bound", "opts", "state", "binary", "blocks", "args")

    def __init__(self, fn, block_dim, bound, opts, state, binary, blocks, launch_args):
        self.fn, self.block_dim, self.bound, self.opts = fn, block_dim, bound, opts
        self._set(state, binary, blocks, launch_args)

    def _set(self, state, binary, blocks, launch_args):
        self.state, self.binary, self.blocks, self.args = state, binary, blocks, \
            tuple(launch_args)

    def __call__(self, stream=None):
        state = self.fn._state(self.opts)
        if state != self.state:
            self._set(state, *self.fn._bind(self.block_dim, self.bound, self.opts, state, []))
        return rt.launch(self.binary, self.blocks, self.args, stream)


class record_launches:
    """`with record_launches() as rec:` -> rec.launches, one `PreparedLaunch` per kernel launch
    the calling thread made inside (still run as usual), or None in place of a launch with host
    (numpy) arguments, which cannot be replayed. `rec.replayable`: every launch recorded."""

    def __enter__(self):
        self.outer = getattr(_RECORDING, "launches", None)
        self.launches = _RECORDING.launches = []
        return self

    def __exit__(self, *exc):
        _RECORDING.launches = self.outer
        return False

    @property
    def replayable(self) -> bool:
        return all(p is not None for p in self.launches)


def jit(fn=None, **options):
    """Mirrors pyasc `@asc.jit` / `@asc.jit(**options)`. Options: interpret (bool), checked
    (bool or CheckedOptions), soc (SoC name), kernel_type (pyasc's KernelType or its name;
    detected when not given, see JitFunction.kernel_type), matmul_cube_only; pyasc's other
    codegen/compile options are accepted and change nothing (OPTIONS)."""
    if fn is None:
        return lambda f: JitFunction(f, **options)
    return JitFunction(fn, **options)
