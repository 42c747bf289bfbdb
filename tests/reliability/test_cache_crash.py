"""A compile killed while it writes the kernel cache never crashes a later process
(docs/guarantees.md, docs/compile-time.md): every cache file is replaced whole, an entry's data
file is written before the index line naming it, both under a lock on the index, and a data file
holds the build it was compiled for. A fresh process finding an entry a killed writer left half
made (index without data, data without index, a truncated file, an index naming an older
build's data) reports it in one warning line and compiles again, or loads the whole entry.

Real subprocesses with a cold ASCENDC_CACHE_DIR; the writer is SIGKILLed at chosen cache writes
through the ASCEND_EMU_CACHE_CRASH hook (lang/numba_link.py, crash_point)."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest
from numba import types

from ascendc.lang import numba_link

ROOT = Path(__file__).resolve().parents[2]

# a kernel with a helper (two cached functions in the generated module: two indexes, two data
# files), over a ragged length; the result is checked against numpy in the child
SCRIPT = textwrap.dedent("""
    import numpy as np, ascendc as asc

    @asc.jit
    def twice_plus(g, i):
        g.set_value(i, g.get_value(i) * 2 + 1)

    @asc.jit
    def k(x: asc.GlobalAddress, n: asc.ConstExpr[int]):
        g = asc.GlobalTensor(); g.set_global_buffer(x, n)
        for i in range(n):
            twice_plus(g, i)

    x = np.arange(13, dtype=np.float32)
    want = x * 2 + 1
    k[1](x, 13)
    print("RESULT", "ok" if np.array_equal(x, want) else f"wrong {x}")
""")
HEAL = "ascendc kernel cache: Numba's cache of "


def _env(kc, **extra):
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(kc), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("ASCEND_EMU_CACHE_CRASH", None)
    env.update(extra)
    return env


def _run(script, kc, **extra):
    return subprocess.run([sys.executable, str(script)], env=_env(kc, **extra),
                          capture_output=True, text=True, timeout=900)


def _ok(p):
    assert p.returncode == 0 and "RESULT ok" in p.stdout, (p.returncode, p.stderr[-3000:])
    return p


def _heal_lines(stderr):
    return [ln for ln in stderr.splitlines() if HEAL in ln]


def _cache_files(kc, ext):
    return sorted((kc / "__pycache__").glob(f"ascendc_gen_*.{ext}"))


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    p = tmp_path_factory.mktemp("crash") / "kernel_script.py"
    p.write_text(SCRIPT)
    return p


@pytest.fixture(scope="module")
def warm(script):
    """A complete kernel cache after one clean run (copied by each test that damages it)."""
    kc = script.parent / "kc_warm"
    assert not _heal_lines(_ok(_run(script, kc)).stderr)
    assert len(_cache_files(kc, "nbi")) >= 2 and len(_cache_files(kc, "nbc")) >= 2
    return kc


@pytest.mark.parametrize("crash", ["data:1", "index:1", "index-torn:1",
                                   pytest.param("data-torn:1", marks=pytest.mark.slow),
                                   pytest.param("data:2", marks=pytest.mark.slow),
                                   pytest.param("index-torn:2", marks=pytest.mark.slow)])
def test_a_writer_killed_at_a_cache_write_leaves_a_cache_that_loads_or_recompiles(
        script, tmp_path, crash):
    kc = tmp_path / "kc"
    killed = _run(script, kc, ASCEND_EMU_CACHE_CRASH=crash)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-3000:])
    assert "RESULT" not in killed.stdout
    if crash.endswith("-torn:1") or crash.endswith("-torn:2"):
        assert list((kc / "__pycache__").glob("*.tmp.*"))      # the half-written file's remains
    first = _ok(_run(script, kc))                 # completes (loads what is whole, compiles)
    assert "Traceback" not in first.stderr
    second = _ok(_run(script, kc))                # the entry is whole now: no warning
    assert not _heal_lines(second.stderr), second.stderr[-3000:]


def _damage(kc, how):
    nbi, nbc = _cache_files(kc, "nbi"), _cache_files(kc, "nbc")
    if how == "index without data":
        nbc[0].unlink()
    elif how == "data without index":
        nbi[0].unlink()
    elif how == "truncated data":
        nbc[0].write_bytes(nbc[0].read_bytes()[:nbc[0].stat().st_size // 2])
    elif how == "truncated index":
        nbi[0].write_bytes(nbi[0].read_bytes()[:nbi[0].stat().st_size // 2])
    elif how == "empty data":
        nbc[0].write_bytes(b"")


@pytest.mark.parametrize("how, heals", [("index without data", True),
                                        ("data without index", False),
                                        ("truncated data", True), ("truncated index", True),
                                        ("empty data", True)])
def test_a_torn_entry_on_disk_is_reported_and_recompiled(script, warm, tmp_path, how, heals):
    kc = tmp_path / "kc"
    shutil.copytree(warm, kc)
    _damage(kc, how)
    first = _ok(_run(script, kc))
    heal = _heal_lines(first.stderr)
    if heals:
        assert len(heal) == 1 and "must be whole, got" in heal[0], first.stderr[-3000:]
    else:
        assert not heal, first.stderr[-3000:]
    assert not _heal_lines(_ok(_run(script, kc)).stderr)


def test_a_kernel_compiled_against_a_cached_helper_loads_in_a_fresh_process(script, warm,
                                                                              tmp_path):
    """The segfault a killed compile left: the helper's entry saved, `_run`'s not. The next
    process loads the helper from the cache and compiles `_run`, linking the helper's code,
    which calls primitives by the symbols of the process that compiled the helper; `_run` was
    saved without the helper's primitive loaders (Numba rebuilds a cached library without
    them), so every fresh process loading that `_run` called an undefined symbol (SIGSEGV)."""
    kc = tmp_path / "kc"
    shutil.copytree(warm, kc)
    runs = [p for p in (kc / "__pycache__").iterdir() if "._run-" in p.name]
    assert runs
    for p in runs:
        p.unlink()
    second = _ok(_run(script, kc))             # the helper loaded, `_run` compiled and saved
    assert not _heal_lines(second.stderr), second.stderr[-3000:]
    for _ in range(2):                         # both loaded from the cache
        third = _run(script, kc)
        assert third.returncode == 0, (third.returncode, third.stderr[-3000:])
        _ok(third)


def _as_older_build(data, index):
    """Rewrite sealed data file `data` as if compiled for another source stamp than the one its
    index `index` holds (same key, same code): the stamp's bytes swapped in the pickle."""
    _version, ((fmt, stamp), _overloads) = numba_link.read_sealed_index(index)
    assert fmt == numba_link.CACHE_FORMAT and isinstance(stamp, bytes) and len(stamp) >= 16
    payload, why = numba_link.unseal(data.read_bytes())
    assert why is None and payload.count(stamp) == 1
    data.write_bytes(numba_link.seal(payload.replace(stamp, bytes(len(stamp)))))


def test_an_index_naming_an_older_builds_data_is_a_miss(script, warm, tmp_path):
    """A writer of a rebuild (the function's source stamp changed: a primitive after an edit
    under ascendc/lang) killed after its index but before its data file leaves the index naming
    a data file of the same key (so the same name) from the build before. That object code must
    not be loaded: a data file records its build, and one of another build is a miss, reported.
    (Here the data files are rewritten as another build's, sealed and keyed as before.)"""
    kc = tmp_path / "kc"
    shutil.copytree(warm, kc)
    data = _cache_files(kc, "nbc")
    for p in data:
        _as_older_build(p, p.parent / (p.name.rsplit(".", 2)[0] + ".nbi"))
    first = _ok(_run(script, kc))
    heal = _heal_lines(first.stderr)
    assert len(heal) == len(data), first.stderr[-3000:]
    assert all("data of another build" in ln and "under its index" in ln for ln in heal)
    assert not _heal_lines(_ok(_run(script, kc)).stderr)


def test_concurrent_cold_compiles_of_one_kernel_share_a_whole_entry(script, tmp_path):
    """Three processes compile the same kernel into one cold directory at once (each writes the
    module, the same entries' data files and the indexes); all succeed and a fourth loads the
    result without a warning."""
    kc = tmp_path / "kc"
    procs = [subprocess.Popen([sys.executable, str(script)], env=_env(kc),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0 and "RESULT ok" in out, err[-3000:]
    assert not _heal_lines(_ok(_run(script, kc)).stderr)


# ---- the cache file itself, in one process ----------------------------------------------------

def _key(ty):
    return ((ty,), ("x86_64-unknown-linux-gnu", "generic", "", "calls"), ("code", "cells"))


def test_data_of_another_build_under_the_same_name_is_not_loaded(tmp_path):
    old = numba_link.CheckedCacheFile(str(tmp_path), "ascendc_gen_f-1", (1.0, 10))
    new = numba_link.CheckedCacheFile(str(tmp_path), "ascendc_gen_f-1", (2.0, 10))
    k = _key(types.int64)
    old.save(k, "object code of build 1")
    name = old._load_index()[k]
    stale = (tmp_path / name).read_bytes()
    new.save(k, "object code of build 2")
    assert new.load(k) == "object code of build 2" and old.load(k) is None
    (tmp_path / name).write_bytes(stale)        # build 2's index, build 1's data file
    with pytest.warns(RuntimeWarning, match="data of another build .* under its index"):
        assert new.load(k) is None
    new.save(k, "object code of build 2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert new.load(k) == "object code of build 2"


def test_savers_of_one_function_in_threads_each_leave_a_whole_entry(tmp_path):
    """Savers of different entries of one function at once (threads here; the lock is a file
    lock, so processes alike): no entry is lost from the index, each loads as saved."""
    tys = (types.int8, types.int16, types.int32, types.int64, types.float32, types.float64)
    start = threading.Barrier(len(tys))
    errors = []

    def saver(ty):
        try:
            view = numba_link.CheckedCacheFile(str(tmp_path), "ascendc_gen_g-1", (1.0, 10))
            start.wait()
            view.save(_key(ty), f"code for {ty}")
        except BaseException as e:      # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=saver, args=(ty,)) for ty in tys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    fresh = numba_link.CheckedCacheFile(str(tmp_path), "ascendc_gen_g-1", (1.0, 10))
    assert len(fresh._load_index()) == len(tys)
    assert all(fresh.load(_key(ty)) == f"code for {ty}" for ty in tys)


def test_the_crash_hook_is_off_unless_asked(monkeypatch):
    monkeypatch.delenv("ASCEND_EMU_CACHE_CRASH", raising=False)
    assert not numba_link.crash_point("data", "/x/ascendc_gen_f.1.nbc")
    monkeypatch.setenv("ASCEND_EMU_CACHE_CRASH", "index:2")
    monkeypatch.setattr(numba_link, "_CRASH_COUNT", {})
    assert not numba_link.crash_point("index", "/x/prim.nbi")        # not a kernel module's
    assert not numba_link.crash_point("data", "/x/ascendc_gen_f.nbc")
    assert not numba_link.crash_point("index", "/x/ascendc_gen_f.nbi")
    assert numba_link.crash_point("index", "/x/ascendc_gen_f.nbi")
    assert not numba_link.crash_point("index", "/x/ascendc_gen_f.nbi")


def test_temporary_files_of_a_killed_writer_are_removed_once_stale(tmp_path, monkeypatch):
    from ascendc.compiler import cache
    kc = tmp_path / "kc"
    monkeypatch.setenv("ASCENDC_CACHE_DIR", str(kc))
    monkeypatch.setattr(cache, "_DIRS", {})
    src, stem = "VALUE = 7\n", "temps"
    mod = cache.load_module(src, stem)
    name = mod.__name__
    sys.modules.pop(name)
    pyc = cache.numba_cache_path(kc / f"{name}.py")
    pyc.mkdir(exist_ok=True)
    old = [kc / f"{name}.a1b2.tmp", pyc / f"{name}._run-3.py311.nbi.tmp.0123456789abcdef"]
    fresh = [kc / f"{name}.c3d4.tmp", pyc / f"{name}._run-3.py311.1.nbc.tmp.fedcba9876543210"]
    other = kc / "ascendc_gen_other_0.a1b2.tmp"      # another module's: not this load's business
    for f in old + fresh + [other]:
        f.write_bytes(b"half")
    stale = os.stat(old[0]).st_mtime - cache.STALE_TEMP_SECONDS - 5
    for f in old + [other]:
        os.utime(f, (stale, stale))
    assert cache.load_module(src, stem).VALUE == 7
    sys.modules.pop(name)
    assert [f.exists() for f in old + fresh + [other]] == [False, False, True, True, True]
