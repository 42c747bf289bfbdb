"""The kernel cache cannot be hijacked or broken (docs/guarantees.md): planted or truncated
modules are rewritten from the generated source before use, Numba's pickles are only read from a
directory only we can write, unusable directories fall back to a private one, and concurrent
loads in one process are safe."""
import os
import pickle
import stat
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from ascendc.compiler import cache

SRC = "VALUE = 41 + 1\n"


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    d = tmp_path / "kc"
    monkeypatch.setenv("ASCENDC_CACHE_DIR", str(d))
    monkeypatch.setattr(cache, "_DIRS", {})
    return d


def _name(stem, source):
    import hashlib
    return f"ascendc_gen_{stem}_" + hashlib.sha256(
        (cache.lang_fingerprint() + source).encode()).hexdigest()[:20]


def test_cache_dir_is_private(cache_env):
    d = cache.cache_dir()
    assert d == cache_env
    assert stat.S_IMODE(d.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE((d / "__pycache__").stat().st_mode) & 0o077 == 0


def test_a_planted_module_is_rewritten_not_executed(cache_env, tmp_path):
    stem = "planted"
    name = _name(stem, SRC)
    cache_env.mkdir(mode=0o700)
    marker = tmp_path / "pwned"
    (cache_env / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nVALUE = 42\n")
    with pytest.warns(RuntimeWarning, match="must hold the generated source, got a file that "
                                            "differs"):
        mod = cache.load_module(SRC, stem)
    assert mod.VALUE == 42 and not marker.exists()
    assert (cache_env / f"{name}.py").read_text() == SRC
    sys.modules.pop(name, None)


@pytest.mark.parametrize("content", ["", "VALUE = 4"], ids=["empty", "truncated"])
def test_a_truncated_module_heals(cache_env, content):
    stem = f"trunc{len(content)}"
    name = _name(stem, SRC)
    cache_env.mkdir(mode=0o700)
    (cache_env / f"{name}.py").write_text(content)
    with pytest.warns(RuntimeWarning, match="rewriting it"):
        assert cache.load_module(SRC, stem).VALUE == 42
    sys.modules.pop(name, None)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_group_writable_directory_is_refused_with_its_numba_index(cache_env, tmp_path):
    """A Numba index planted in a directory others can write is never unpickled: the whole
    directory is refused and a private one is used."""
    cache_env.mkdir()
    os.chmod(cache_env, 0o777)
    marker = tmp_path / "unpickled"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    (cache_env / "__pycache__").mkdir()
    stem = "evil"
    name = _name(stem, SRC)
    (cache_env / f"{name}.py").write_text(SRC)
    (cache_env / "__pycache__" / f"{name}.f-1.py311.nbi").write_bytes(pickle.dumps(Evil()))
    with pytest.warns(RuntimeWarning, match=r"ASCENDC_CACHE_DIR must be a directory only this user "
                                            r"can write, got .* is group- or world-writable"):
        d = cache.cache_dir()
    assert d != cache_env and stat.S_IMODE(d.stat().st_mode) == 0o700
    assert cache.load_module(SRC, stem).__file__.startswith(str(d))
    assert not marker.exists()
    sys.modules.pop(name, None)


def test_an_uncreatable_directory_falls_back(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ASCENDC_CACHE_DIR", str(blocker / "kernels"))
    monkeypatch.setattr(cache, "_DIRS", {})
    with pytest.warns(RuntimeWarning, match="cannot be created"):
        d = cache.cache_dir()
    assert d.is_dir() and os.access(d, os.W_OK)


def test_concurrent_loads_give_one_module(cache_env):
    src = "import time\nN = 0\nN += 1\n"
    got, errors = [], []

    def load():
        try:
            got.append(cache.load_module(src, "race"))
        except Exception as e:      # pragma: no cover - the failure being tested for
            errors.append(e)
    threads = [threading.Thread(target=load) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({id(m) for m in got}) == 1 and got[0].N == 1
    sys.modules.pop(got[0].__name__, None)


def test_a_compiled_kernel_still_caches_across_processes(tmp_path):
    """The first process compiles and writes Numba's cache; the second loads it (no recompile:
    Numba's index files stay as they were)."""
    code = textwrap.dedent("""
        import numpy as np, ascendc as asc
        @asc.jit
        def k(x: asc.GlobalAddress, n: asc.ConstExpr[int]):
            g = asc.GlobalTensor(); g.set_global_buffer(x, n)
            g.set_value(0, g.get_value(0) + 1)
        x = np.zeros(8, np.float32)
        k[1](x, 8)
        assert x[0] == 1
    """)
    script = tmp_path / "kernel_script.py"
    script.write_text(code)
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(tmp_path / "kc"))
    for _ in range(2):
        subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    idx = sorted((tmp_path / "kc" / "__pycache__").glob("*.nbi"))
    assert idx, "Numba wrote no cache index"
    before = [(p, p.stat().st_mtime_ns) for p in idx]
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    assert [(p, p.stat().st_mtime_ns) for p in idx] == before
    assert np.all([p.exists() for p, _ in before])


class _NewlineRepr:
    def __repr__(self):
        return "1\nimport os; os.system('echo INJECTED')\n#"


def _const_kernel_src():
    import ascendc as asc

    @asc.jit
    def const_kernel(x: asc.GlobalAddress, c: asc.ConstExpr[int]):
        g = asc.GlobalTensor(); g.set_global_buffer(x, 8)      # noqa: E702
        g.set_value(0, g.get_value(0) + 1)
    return const_kernel


@pytest.mark.parametrize("value", [np.arange(20), _NewlineRepr()], ids=["array", "newline-repr"])
def test_a_constexpr_repr_never_reaches_generated_code(value, capfd):
    k = _const_kernel_src()
    x = np.zeros(8, np.float32)
    k[1](x, value, interpret=False)
    assert x[0] == 1
    assert "INJECTED" not in capfd.readouterr().out


@pytest.mark.parametrize("which", ["nbi", "nbc"])
def test_a_truncated_numba_cache_heals(tmp_path, which):
    """A cut-short Numba index or data file used to break the kernel for good (an unpickling
    error reported as an AI-core fault at every launch); now it is dropped and recompiled."""
    code = textwrap.dedent("""
        import numpy as np, ascendc as asc
        @asc.jit
        def k(x: asc.GlobalAddress, n: asc.ConstExpr[int]):
            g = asc.GlobalTensor(); g.set_global_buffer(x, n)
            g.set_value(0, g.get_value(0) + 1)
        x = np.zeros(8, np.float32)
        k[1](x, 8)
        print("RESULT", x[0])
    """)
    script = tmp_path / "kernel_script.py"
    script.write_text(code)
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(tmp_path / "kc"))
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    files = sorted((tmp_path / "kc" / "__pycache__").glob(f"*.{which}"))
    assert files
    for f in files:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "RESULT 1.0" in p.stdout
    assert "must be whole, got" in p.stderr and "dropping it" in p.stderr


def test_source_fingerprints_are_taken_when_ascendc_is_imported():
    # a process must name cached kernels (and stamp cached primitives) after the sources it
    # imported, not after what the files hold at its first kernel load (they may have been edited
    # since: its old code would then be stored under the new sources' name)
    code = ("import ascendc; from ascendc.compiler import cache; "
            "from ascendc.lang import numba_link; "
            "print(cache.lang_fingerprint.cache_info().currsize, len(numba_link._LANG_DIGEST))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1"]
