"""Generated kernel modules live as real files in a cache directory, so Numba's `cache=True`
disk cache works across processes. The file name is a hash of the generated source and of the
kernel language's own sources (a change to a primitive invalidates every cached kernel).

What a cache directory is trusted with: Numba unpickles its `__pycache__` index and
data files, and a kernel module is Python code, so a directory anyone else can write to could
run their code in our process. Hence:
- the directory is created 0700 and used only if it belongs to us and is not group- or
  world-writable (nor is its `__pycache__`); otherwise a warning names the problem and a private
  temporary directory is used instead (Numba's pickles from the refused one are never read);
- a module is compiled from the source the compiler generated in this process, never from the
  file's contents: the file only gives Numba a path and a stamp, and a file that differs from
  the source (planted, truncated, empty) is rewritten before use;
- loading is thread-safe (one lock; a module is published in `sys.modules` only once executed)
  and temporary files have unique names, so concurrent loads in one process cannot collide;
- an uncreatable or read-only directory falls back to the private directory too;
- a process killed while it writes the cache (SIGKILL, a timeout) leaves nothing a later
  process executes: every file is written to a temporary name and renamed whole (`_write`;
  Numba's index and data files likewise, under a per-function lock, data before index, each
  data file holding the build it was compiled for: lang/numba_link.py's CheckedCacheFile), so a
  later load finds a whole entry, or a torn one that it reports and recompiles; temporary files
  such a writer left are removed once STALE_TEMP_SECONDS old;
- when NUMBA_CACHE_DIR is set, Numba keeps every cache=True function's index and data there
  (ours and the generated kernels'), so that directory is checked the same way (it, its
  subdirectories and their files must be ours and not group- or world-writable) before Numba
  may read it, at ascendc's import and at each kernel load; an unsafe one is replaced by a
  private directory, with a warning.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import threading
import time
import types
import warnings
from functools import lru_cache
from pathlib import Path

from ..lang.sealed import read_sealed_index, unseal

_LOCK = threading.RLock()
_DIRS: dict = {}          # requested path -> the directory actually used
_PRIVATE: list = []       # the fallback directory, once made
_NUMBA_DIRS: dict = {}    # NUMBA_CACHE_DIR as set -> the directory Numba is given


def _private_dir() -> Path:
    if not _PRIVATE:
        _PRIVATE.append(Path(tempfile.mkdtemp(prefix="ascend-emu-kernels-")))   # mode 0700
    return _PRIVATE[0]


def unsafe_reason(p: Path) -> str | None:
    """Why directory `p` must not hold our kernels (None if it may): another owner, or group /
    world write permission, on it or on its `__pycache__`."""
    for d in (p, p / "__pycache__"):
        try:
            st = d.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return f"{d} is not a directory"
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return f"{d} is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{d} is group- or world-writable (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _unsafe_tree_reason(root: Path) -> str | None:
    """Like `unsafe_reason` for a Numba cache root: the root, each subdirectory Numba made in it
    (one per source directory) and each file in those."""
    why = unsafe_reason(root)
    if why is not None:
        return why
    uid = os.getuid() if hasattr(os, "getuid") else None
    for sub in root.iterdir():
        entries = [sub] + (sorted(sub.iterdir()) if sub.is_dir() and not sub.is_symlink()
                           else [])
        for e in entries:
            st = e.lstat()
            kind = stat.S_ISDIR(st.st_mode) if e == sub else stat.S_ISREG(st.st_mode)
            if stat.S_ISLNK(st.st_mode) or not kind:
                return f"{e} is a {'symlink' if stat.S_ISLNK(st.st_mode) else 'special file'}"
            if uid is not None and st.st_uid != uid:
                return f"{e} is owned by uid {st.st_uid}, not by this user (uid {uid})"
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return f"{e} is group- or world-writable (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def guard_numba_cache_dir() -> None:
    """Point Numba away from an unsafe NUMBA_CACHE_DIR before it reads a pickle from there (a
    planted index or data file would run code in this process)."""
    from numba.core import config
    config.reload_config()          # what Numba's compiler would see now
    d = config.CACHE_DIR
    if not d:
        return
    with _LOCK:
        got = _NUMBA_DIRS.get(d)
        if got is None:
            p = Path(d)
            try:
                p.mkdir(mode=0o700, parents=True, exist_ok=True)
                why = _unsafe_tree_reason(p)
            except OSError as e:
                why = f"{p} cannot be used ({e.strerror or e})"
            got = str(p)
            if why is not None:
                got = _NUMBA_DIRS.get("") or tempfile.mkdtemp(prefix="ascend-emu-numba-")
                _NUMBA_DIRS[""] = _NUMBA_DIRS[got] = got
                warnings.warn(f"ascendc kernel cache: NUMBA_CACHE_DIR must be a directory only "
                              f"this user can write, got {why}; Numba caches into the private "
                              f"directory {got} instead (its pickles there are never read)",
                              RuntimeWarning, stacklevel=3)
            _NUMBA_DIRS[d] = got
        config.CACHE_DIR = got


def numba_cache_path(py_file: Path) -> Path:
    """The directory Numba keeps the index and data files of `py_file`'s functions in."""
    from numba.core import caching, config
    if config.CACHE_DIR:
        return Path(config.CACHE_DIR) / caching._CacheLocator.get_suitable_cache_subpath(
            str(py_file))
    return py_file.parent / "__pycache__"


def cache_dir() -> Path:
    """The directory kernel modules are cached in: ASCENDC_CACHE_DIR (default
    ~/.cache/ascend-emu/kernels) if it is safe and writable, else a private temporary one."""
    d = os.environ.get("ASCENDC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "ascend-emu", "kernels")
    with _LOCK:
        got = _DIRS.get(d)
        if got is not None:
            return got
        p = Path(d)
        why = None
        try:
            p.mkdir(mode=0o700, parents=True, exist_ok=True)
            (p / "__pycache__").mkdir(mode=0o700, exist_ok=True)
            why = unsafe_reason(p)
            if why is None and not os.access(p, os.W_OK | os.X_OK):
                why = f"{p} is not writable"
        except OSError as e:
            why = f"{p} cannot be created ({e.strerror or e})"
        if why is not None:
            fallback = _private_dir()
            warnings.warn(f"ascendc kernel cache: ASCENDC_CACHE_DIR must be a directory only this "
                          f"user can write, got {why}; compiling into the private directory "
                          f"{fallback} instead (kernels are not shared across processes)",
                          RuntimeWarning, stacklevel=3)
            p = fallback
        _DIRS[d] = p
        return p


@lru_cache(maxsize=1)
def lang_fingerprint() -> str:
    """Hash of ascendc's sources: cached kernels are only valid for the code that made them."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


# Taken when ascendc is imported, not at the first kernel load: a process whose modules were
# imported before an edit to ascendc's sources must not store its (old) code under the edited
# sources' fingerprint, where later processes would load it (a stale kernel module that crashes).
lang_fingerprint()
guard_numba_cache_dir()


def _write(path: Path, source: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)  # atomic: concurrent processes never see a half-written file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _matches(path: Path, source: str) -> bool:
    try:
        return path.read_text() == source
    except (OSError, UnicodeDecodeError):
        return False


def load_module(source: str, stem: str):
    """The module of `source` (a kernel specialisation): executed from `source` itself, with its
    file (rewritten if it differs) under a content-hashed name in `cache_dir()`."""
    digest = hashlib.sha256((lang_fingerprint() + source).encode()).hexdigest()[:20]
    name = f"ascendc_gen_{stem}_{digest}"
    with _LOCK:
        mod = sys.modules.get(name)
        if mod is not None:
            return mod
        guard_numba_cache_dir()
        path = cache_dir() / f"{name}.py"
        if not _matches(path, source):
            if path.exists():
                warnings.warn(f"ascendc kernel cache: {path} must hold the generated source, got "
                              f"a file that differs (planted or truncated); rewriting it",
                              RuntimeWarning, stacklevel=2)
                _drop_numba_cache(path)
            _write(path, source)
        else:
            _remove_stale_temps(path)
            damaged = _damaged_numba_cache(path)
            if damaged:
                warnings.warn(f"ascendc kernel cache: Numba's cache of {path.name} must be whole, "
                              f"got {damaged}; dropping it (the kernel recompiles)",
                              RuntimeWarning, stacklevel=2)
                _drop_numba_cache(path)
        mod = types.ModuleType(name)
        mod.__file__ = str(path)
        exec(compile(source, str(path), "exec"), mod.__dict__)
        sys.modules[name] = mod
        return mod


def _damaged_numba_cache(path: Path) -> str | None:
    """What is wrong with Numba's cache files of module `path` (an index or a data file it names
    missing, cut short or with changed bytes: their SHA-256 seals, lang/numba_link.py's
    CheckedCacheFile), or None. Numba would otherwise load a wrong object-code blob or raise an
    unpickling error at the kernel's first launch, every time (the directory is one only we can
    write, so reading the index here is safe)."""
    for idx in numba_cache_path(path).glob(f"{path.stem}.*.nbi"):
        try:
            _version, entry = read_sealed_index(idx)
        except Exception as e:      # noqa: BLE001 - any failure means Numba would fail too
            return f"{idx.name} unreadable ({type(e).__name__}: {e})"
        for name in (entry[1].values() if entry is not None else ()):
            data = idx.parent / str(name)
            try:
                _payload, why = unseal(data.read_bytes())
            except OSError:
                why = "missing"
            if why is not None:
                return f"{data.name} {why}"
    return None


#: a temporary cache file older than this (seconds) was left by a writer that died (a live one
#: replaces its temporary file within the save, milliseconds)
STALE_TEMP_SECONDS = 600.0


def _remove_stale_temps(path: Path) -> None:
    """Remove the temporary files a killed writer left of module `path` (ours: `<name>.*.tmp`,
    Numba's: `<name>.*.tmp.<uid>`), once they are STALE_TEMP_SECONDS old. They are never read
    (a file is only used once replaced under its final name); this keeps them from piling up."""
    now = time.time()
    for d, pattern in ((path.parent, f"{path.stem}.*.tmp"),
                       (numba_cache_path(path), f"{path.stem}.*.tmp.*")):
        for f in d.glob(pattern):
            try:
                if now - f.lstat().st_mtime > STALE_TEMP_SECONDS:
                    f.unlink()
            except OSError:
                pass


def _drop_numba_cache(path: Path) -> None:
    """Remove Numba's index and data files of module `path` (they belong to another source)."""
    for f in numba_cache_path(path).glob(f"{path.stem}.*"):
        f.unlink(missing_ok=True)
