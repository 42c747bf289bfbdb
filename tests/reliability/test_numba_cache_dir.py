"""Every cache Numba reads is checked like the kernel cache's own directories: with
NUMBA_CACHE_DIR set, Numba keeps the index and data pickles of every cache=True function there,
so a directory (or a subdirectory, or a file in it) others can write is never read from."""
import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")]

SCRIPT = textwrap.dedent("""
    import numpy as np, ascendc as asc
    @asc.jit
    def k(x: asc.GlobalAddress, n: asc.ConstExpr[int]):
        g = asc.GlobalTensor(); g.set_global_buffer(x, n)
        g.set_value(0, g.get_value(0) + 1)
    x = np.zeros(8, np.float32)
    k[1](x, 8)
    print("RESULT", x[0])
""")


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _run(script, env):
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A clean kernel cache and NUMBA_CACHE_DIR after one run (compiled once per module)."""
    root = tmp_path_factory.mktemp("numba_cache")
    script = root / "kernel_script.py"
    script.write_text(SCRIPT)
    p = _run(script, dict(os.environ, ASCENDC_CACHE_DIR=str(root / "kc"),
                          NUMBA_CACHE_DIR=str(root / "nc")))
    assert p.returncode == 0 and "RESULT 1.0" in p.stdout, p.stderr[-2000:]
    assert "NUMBA_CACHE_DIR must be" not in p.stderr
    return root


def _copy(warm, tmp_path):
    shutil.copytree(warm / "nc", tmp_path / "nc", symlinks=True)
    script = warm / "kernel_script.py"   # same kernel source and module path (Numba's keys)
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(warm / "kc"),
               NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    return script, env, tmp_path / "nc"


@pytest.mark.parametrize("opened", ["root", "file"])
def test_planted_pickles_in_numba_cache_dir_are_never_read(warm_cache, tmp_path, opened):
    script, env, nc = _copy(warm_cache, tmp_path)
    indexes = sorted(nc.rglob("*.nbi"))
    assert indexes                     # Numba wrote its index under NUMBA_CACHE_DIR
    marker = tmp_path / "unpickled"
    for idx in indexes:                # as a co-user of a shared cache would plant them
        idx.write_bytes(pickle.dumps(_Evil(str(marker))))
    if opened == "root":
        os.chmod(nc, 0o777)
    else:
        os.chmod(indexes[0], 0o666)
    second = _run(script, env)
    assert not marker.exists(), "a planted Numba pickle was unpickled"
    assert second.returncode == 0 and "RESULT 1.0" in second.stdout, second.stderr[-2000:]
    assert "NUMBA_CACHE_DIR must be a directory only this user can write" in second.stderr
    assert "group- or world-writable" in second.stderr


def test_a_private_numba_cache_dir_is_reused(warm_cache, tmp_path):
    script, env, nc = _copy(warm_cache, tmp_path)
    before = sorted(nc.rglob("*.nb*"))
    p = _run(script, env)
    assert p.returncode == 0 and "RESULT 1.0" in p.stdout, p.stderr[-2000:]
    assert "NUMBA_CACHE_DIR must be" not in p.stderr
    assert before and sorted(nc.rglob("*.nb*")) == before      # loaded there, nothing added
    assert os.stat(nc).st_mode & 0o077 == 0
