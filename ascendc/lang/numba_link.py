"""How primitives and kernel glue compile and link under Numba: the one module of ascendc that
overrides Numba's internals (docs/numba.md).

Everything else in the kernel language uses Numba's public API (`njit`, `overload`,
`intrinsic`, `types`). The compile layer here subclasses or reads these private parts, all
checked against the Numba and llvmlite versions in TESTED_NUMBA / TESTED_LLVMLITE:

- `numba.core.registry.CPUDispatcher`, overriding
  - `get_call_template(args, kws)`: calls from jitted code are typed with unliteral arguments
    (PrimDispatcher);
  - `compile(sig)`: marks what is being compiled, PRIM or GLUE (PrimDispatcher,
    GlueDispatcher), and runs a first compile in a thread no stop reaches (compile_unstopped,
    reading `numba.core.compiler_lock.global_compiler_lock.is_locked()`);
  - `add_overload(cres)`: registers a compiled version a second time through
    `targetctx.insert_user_function(entry_point, fndesc, libs)`, with a CalledLibrary;
  - the `_cache` attribute, replaced by a PrimCache;
- the code library a caller links (`CompileResult.library`, a `CPUCodeLibrary`), wrapped by
  CalledLibrary, which answers for: `_get_module_for_linking()`, `_ensure_finalized()`,
  `_reload_init` (the loaders run before a cached caller's object code is linked), and uses
  `codegen._create_empty_module(name)`, `get_pointer_to_function(name)`;
- `CompileResult.reload_init`, `.fndesc` (`mangled_name`, `argtypes`, `restype`), `.objectmode`,
  `.entry_point`, `.signature`;
- `numba.core.caching.FunctionCache`: `_index_key(sig, codegen)` (its `(sig, magic,
  (code_hash, cells_hash))` shape), `_cache_file._source_stamp`, `_py_func`;
- `numba.core.caching.IndexDataCacheFile` (the dispatcher cache's `_cache_file`), overriding
  `save` / `load` / `_save_data` / `_load_data` / `_save_index` / `_load_index` and using
  `_data_name`, `_dump`,
  `_open_for_write`, `_data_path`, `_index_path`, `_version`, `_source_stamp` (CheckedCacheFile);
- `numba.core.serialize.dumps`, `numba.core.config.DISABLE_JIT`;
and llvmlite's public `binding.add_symbol` and `binding.parse_assembly` (llvmlite is pinned to
the release the tested Numba requires).

Importing it on a Numba or llvmlite outside the tested range warns (UntestedNumbaWarning);
tests/ascendc/test_numba_link.py fails there.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import pathlib
import pickle
import re
import threading
import warnings

import llvmlite
import numba
from llvmlite import binding as llvm_binding
from numba import types
from numba.core import config, serialize
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher, cpu_target

from .errors import KernelError
from .sealed import data_number, heal_warning, read_sealed_index, seal, unseal

# the versions the overrides above were checked against (pyproject.toml pins the same range)
TESTED_NUMBA = (">=0.68", "<0.69")
TESTED_LLVMLITE = (">=0.50", "<0.51")


class UntestedNumbaWarning(UserWarning):
    """Numba or llvmlite is outside the versions ascendc's compile layer was checked against."""


def _release(version: str) -> tuple:
    """(major, minor, micro) of a version string such as "0.68.1" or "0.69.0rc1"."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if m is None:
        raise ValueError(f"check_numba_version: version must look like X.Y[.Z], "
                         f"got version={version!r}")
    return tuple(int(g or 0) for g in m.groups())


def in_range(version: str, tested: tuple) -> bool:
    """Is `version` inside `tested` = (">=X", "<Y")?"""
    low, high = (_release(b.lstrip("<>=")) for b in tested)
    return low <= _release(version) < high


def untested_message(numba_version: str, llvmlite_version: str) -> str | None:
    """What check_numba_version warns about these versions, or None if both are tested."""
    wrong = []
    if not in_range(numba_version, TESTED_NUMBA):
        wrong.append(f"Numba {numba_version}")
    if not in_range(llvmlite_version, TESTED_LLVMLITE):
        wrong.append(f"llvmlite {llvmlite_version}")
    if not wrong:
        return None
    return (f"ascendc: {' and '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} untested; "
            f"the compile layer overrides Numba internals checked against "
            f"numba{','.join(TESTED_NUMBA)} and llvmlite{','.join(TESTED_LLVMLITE)} "
            f"(ascendc/lang/numba_link.py, docs/numba.md): compiling primitives and kernels, "
            f"or loading them from the disk cache, may fail; install a tested version "
            f"(pip install 'numba{','.join(TESTED_NUMBA)}')")


def check_numba_version() -> str | None:
    """Warn (UntestedNumbaWarning) if the installed Numba or llvmlite is outside the tested
    range; returns the message, or None. Run once when ascendc is imported."""
    msg = untested_message(numba.__version__, llvmlite.__version__)
    if msg is not None:
        warnings.warn(msg, UntestedNumbaWarning, stacklevel=2)
    return msg


check_numba_version()


# ---- what is being compiled: a primitive (PRIM) or kernel glue (GLUE) ---------------------------

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
    """Kernel glue calls the larger primitives instead of inlining them (docs/compile-time.md;
    env ASCEND_EMU_PRIM_CALLS=0 inlines everything, as before)."""
    return os.environ.get("ASCEND_EMU_PRIM_CALLS", "1") != "0"


def prim_call_min_bytes() -> int:
    """Primitives whose optimised code (with the callees it inlines, as LLVM bitcode) has at
    least this many bytes are called from kernel glue; smaller ones, e.g. get_block_idx (~8 kB),
    stay inlined (env ASCEND_EMU_PRIM_CALL_MIN_BYTES)."""
    v = os.environ.get("ASCEND_EMU_PRIM_CALL_MIN_BYTES", "")
    return int(v) if v.isdigit() else 12000


# ---- linking: a called primitive, and its loader when a cached caller is loaded -----------------

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


# ---- dispatchers -------------------------------------------------------------------------------

def compile_unstopped(compile_once):
    """`compile_once()` in a thread nobody stops, this one waiting for it, unless this thread is
    compiling already (it holds Numba's compiler lock: nested, it must compile here).

    An interpreted kernel's first call of a primitive or helper compiles (or loads it from the
    cache), in a thread that a device reset or an op timeout stops with an exception raised at
    any bytecode (rt.launch): inside Numba's compiler that can leave its lock held (every later
    compile hangs) or break LLVM's state (a crash). The stop lands here once the compile is over."""
    if global_compiler_lock.is_locked():
        return compile_once()
    out = {}

    def run():
        try:
            out["cres"] = compile_once()
        except BaseException as e:                  # noqa: BLE001 - raised in the caller
            out["error"] = e
    t = threading.Thread(target=run, name="ascendc-compile", daemon=True)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["cres"]


class UnstoppedDispatcher(CPUDispatcher):
    """A CPUDispatcher whose compiles run through `compile_unstopped` (cached_njit's)."""

    def compile(self, sig):
        return compile_unstopped(lambda: super(UnstoppedDispatcher, self).compile(sig))


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
        def once():
            with compiling_as(PRIM):
                return CPUDispatcher.compile(self, sig)
        return compile_unstopped(once)

    def add_overload(self, cres):
        super().add_overload(cres)
        if prim_calls_enabled() and not cres.objectmode:
            # registered after Numba's own entry for the signature, so callers find this one
            self.targetctx.insert_user_function(cres.entry_point, cres.fndesc,
                                                [CalledLibrary(cres.library, cres, self)])


class GlueDispatcher(CPUDispatcher):
    """A CPUDispatcher whose compiles are marked GLUE: a generated kernel function
    (compiler/gluejit.py), which calls the larger primitives rather than inlining them."""

    def compile(self, sig):
        with compiling_as(GLUE):
            return super().compile(sig)

    def enable_caching(self):
        self._cache = CheckedFunctionCache(self.py_func)


# ---- the disk cache of primitives --------------------------------------------------------------

#: the layout of CheckedCacheFile's entries: 2 = data files holding (key, build, entry)
CACHE_FORMAT = 2


class CheckedCacheFile(IndexDataCacheFile):
    """Numba's index and data files of a cached function, each pickle sealed with its SHA-256.

    Numba trusts the bytes it reads back: a data file with a flipped byte unpickles into a
    different object-code blob (a wrong result, or the same fault at every launch, for good),
    a damaged index into an unpickling error. Here a file whose seal does not match is reported
    with a warning and removed; the function compiles again and Numba's save rewrites it.

    Numba also names a new entry's data file by the first number its index does not use; two
    processes saving different entries at once (another signature, or the other link mode)
    took the same number, and the index could end up naming the other entry's object code:
    its entry point called with this signature's arguments (a segfault). Here the file is named
    by a hash of the key (`data_number`) and holds the key, and an entry whose data file holds
    another key is a miss (compiled again).

    A process killed while saving (SIGKILL, a timeout) leaves an entry half made. Each file is
    written whole or not at all (a temporary file, then `os.replace`); an entry is its data
    file, written first, then the index line naming it, both under a lock on the index
    (`_entry_lock`: concurrent savers of one function take turns). The data file also holds
    the build it was compiled for (`build_tag`: Numba's version and the index's source stamp),
    so an index naming a data file left by an older build of the same function (same key, same
    file name: a writer killed between the two files of a rebuild) is a miss too. What a load
    finds torn (a named data file missing, another entry's or another build's data) is reported
    with a warning and compiled again; nothing of it is executed."""

    def build_tag(self) -> tuple:
        return (self._version, self._source_stamp)

    def save(self, key, data):
        name = self._data_name(data_number(key))
        with _entry_lock(self._index_path):
            self._save_data(name, (key, self.build_tag(), data))
            overloads = self._load_index()
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)

    def load(self, key):
        name = self._load_index().get(key)
        if name is None:
            return None
        try:
            got = self._load_data(name)
        except OSError:             # removed while the index still named it
            heal_warning(self._index_path, f"an entry naming {name}, which is missing (a torn "
                                           f"save)")
            return None
        if got is None:             # damaged: reported and removed by _load_data
            return None
        if not (isinstance(got, tuple) and len(got) == 3 and got[0] == key):
            why = "another entry's data"
        elif got[1] != self.build_tag():
            why = f"data of another build ({got[1]!r}, not {self.build_tag()!r})"
        else:
            return got[2]
        heal_warning(self._data_path(name), f"{why} under its index (a torn save)")
        return None

    def _write(self, path, kind, parts):
        """Write `parts` (bytes) to `path` through a temporary file (`crash_point`: test hook)."""
        blob = b"".join(parts)
        with self._open_for_write(path) as f:
            if crash_point(kind + "-torn", path):
                f.write(blob[:len(blob) // 2])
                f.flush()
                _kill_self()
            f.write(blob)
        if crash_point(kind, path):
            _kill_self()

    def _save_data(self, name, data):
        self._write(self._data_path(name), "data", [seal(self._dump(data))])

    def _load_data(self, name):
        path = self._data_path(name)
        with open(path, "rb") as f:
            blob = f.read()
        payload, why = unseal(blob)
        if why is None:
            try:
                return pickle.loads(payload)
            except Exception as e:  # noqa: BLE001 - sealed by another writer of a wrong pickle
                why = f"an unreadable pickle ({type(e).__name__})"
        heal_warning(path, why)
        _unlink(path)
        return None                 # Numba compiles and `save` rewrites this entry

    def _index_stamp(self):
        """The index's stamp: the source stamp and CACHE_FORMAT (an index written before the
        data files held their build is stale, silently, not a torn entry)."""
        return (CACHE_FORMAT, self._source_stamp)

    def _save_index(self, overloads):
        payload = self._dump((self._index_stamp(), overloads))
        self._write(self._index_path, "index",
                    [pickle.dumps(self._version, protocol=-1), seal(payload)])

    def _load_index(self):
        try:
            version, entry = read_sealed_index(self._index_path)
        except FileNotFoundError:
            return {}
        except Exception as e:      # noqa: BLE001 - any damage: drop and rebuild the index
            heal_warning(self._index_path, f"{type(e).__name__}: {e}")
            _unlink(self._index_path)
            return {}
        if version != self._version or entry[0] != self._index_stamp():
            return {}               # another Numba, or stale: rewritten by the next save
        return entry[1]


@contextlib.contextmanager
def _entry_lock(index_path):
    """An exclusive lock on the cache entries of one function (a `.lock` file next to its
    index; the kernel releases it when its holder dies). Without fcntl: no lock (each file is
    still replaced whole, and `load` checks that data and index belong together)."""
    try:
        import fcntl
    except ImportError:         # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(str(index_path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)            # releases the lock


def crash_point(kind: str, path) -> bool:
    """Test hook (env ASCEND_EMU_CACHE_CRASH="<kind>:<n>", kind one of data, index, data-torn,
    index-torn): True at the n-th write of that kind of a generated kernel module's cache file
    (names starting ascendc_gen_) in this process; the caller then SIGKILLs the process, after
    the file was replaced (data, index) or with half of it written to the temporary file
    (-torn): what a killed compile leaves behind. Unset: always False."""
    spec = os.environ.get("ASCEND_EMU_CACHE_CRASH")
    if not spec or not os.path.basename(str(path)).startswith("ascendc_gen_"):
        return False
    want, _, n = spec.partition(":")
    if want != kind:
        return False
    _CRASH_COUNT[kind] = _CRASH_COUNT.get(kind, 0) + 1
    return _CRASH_COUNT[kind] == int(n or 1)


_CRASH_COUNT: dict = {}


def _kill_self() -> None:
    import signal
    os.kill(os.getpid(), signal.SIGKILL)


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def link_mode() -> str:
    """The linking a compiled entry was made with, part of every cache key here: "calls" (the
    larger primitives called, PRIM_CALLS on) or "inlined" (ASCEND_EMU_PRIM_CALLS=0). The two
    give different object code for the same source and signature (a called primitive is only
    declared, with a loader to run first), so processes in different modes must not share
    entries."""
    return "calls" if prim_calls_enabled() else "inlined"


class CheckedFunctionCache(FunctionCache):
    """Numba's FunctionCache with sealed files (CheckedCacheFile), its entries keyed by the
    link mode too (`link_mode`)."""

    def __init__(self, py_func):
        super().__init__(py_func)
        cf = self._cache_file
        self._cache_file = CheckedCacheFile(cf._cache_path, self._impl.filename_base,
                                            cf._source_stamp)

    def _index_key(self, sig, codegen):
        sig_key, magic, hashes = super()._index_key(sig, codegen)
        return sig_key, (*magic, link_mode()), hashes

    def load_overload(self, sig, target_context):
        """Numba's load, with the loaders the entry ran (its `reload_init`: the primitives its
        object code calls, PrimLoader) put back on the rebuilt code library. Numba rebuilds the
        library with none, and a caller compiled in this process links the library and takes
        its loaders from it: a kernel's `_run` linking a helper loaded from the cache was saved
        without the helper's loaders, so a fresh process loading that `_run` never defined the
        primitive symbols the helper's inlined code calls (a call to address 0: a segfault at
        the first launch, in every process, after a compile killed between the helper's save
        and `_run`'s)."""
        cres = super().load_overload(sig, target_context)
        if cres is not None and cres.reload_init:
            cres.library._reload_init.update(cres.reload_init)
        return cres


def target_features() -> set:
    """The CPU features Numba compiles for, as the set of enabled names: its code generator's
    feature string (the host's, less what NUMBA_ENABLE_AVX=0 takes away, or
    NUMBA_CPU_FEATURES; the string its cache keys carry); empty when it cannot be read."""
    try:
        feats = cpu_target.target_context.codegen().magic_tuple()[2]
    except Exception:       # noqa: BLE001 - no features known: the narrowest vectors
        return set()
    return {f[1:] for f in feats.split(",") if f.startswith("+")}


def cached_njit(**options):
    """`numba.njit(cache=True, **options)` with a CheckedFunctionCache (`cache=` is accepted, so
    generated code can use it as `njit`)."""
    options.pop("cache", None)

    def deco(fn):
        if config.DISABLE_JIT:
            return fn
        # as numba.njit(cache=True, **options) builds it, with compiles no stop interrupts
        disp = UnstoppedDispatcher(py_func=fn, locals={},
                                   targetoptions={**options, "nopython": True, "boundscheck": None})
        disp._cache = CheckedFunctionCache(fn)
        return disp
    return deco


class PrimCache(CheckedFunctionCache):
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
