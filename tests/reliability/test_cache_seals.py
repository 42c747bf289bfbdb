"""Every cache heals itself (docs/guarantees.md): Numba's index and data files are sealed with a
SHA-256, so changed bytes in one (a flipped bit on disk, a bad copy) are detected, the entry is
dropped with one warning and rebuilt once; the run after that loads it silently. Before, a
flipped byte in a kernel's data file failed the kernel at every launch (507015), for good."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ascendc.lang import sealed

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
HEAL = "ascendc kernel cache: Numba's cache of "


def _run(script, env):
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0 and "RESULT 1.0" in p.stdout, p.stderr[-3000:]
    return p


def _flip(path, count=64):
    b = bytearray(path.read_bytes())
    mid = len(b) // 2
    for i in range(mid, min(mid + count, len(b))):
        b[i] ^= 0xFF
    path.write_bytes(bytes(b))


def _heal_lines(stderr):
    return [ln for ln in stderr.splitlines() if HEAL in ln]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A kernel cache (and, separately, a NUMBA_CACHE_DIR) after one run."""
    root = tmp_path_factory.mktemp("seals")
    script = root / "kernel_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(root / "kc"))
    env.pop("NUMBA_CACHE_DIR", None)
    assert not _heal_lines(_run(script, env).stderr)
    return root, script, env


def _copy_kc(warm, tmp_path):
    root, script, env = warm
    shutil.copytree(root / "kc", tmp_path / "kc")
    return script, dict(env, ASCENDC_CACHE_DIR=str(tmp_path / "kc")), tmp_path / "kc"


@pytest.mark.parametrize("which", ["nbc", "nbi"])
def test_flipped_bytes_in_the_kernel_cache_heal_once(warm, tmp_path, which):
    script, env, kc = _copy_kc(warm, tmp_path)
    files = sorted((kc / "__pycache__").glob(f"*.{which}"))
    assert len(files) == 1
    _flip(files[0])
    second = _run(script, env)           # right result, one warning naming the file
    heal = _heal_lines(second.stderr)
    assert len(heal) == 1, second.stderr[-3000:]
    assert "must be whole, got" in heal[0] and "dropping it" in heal[0]
    third = _run(script, env)            # rebuilt: loads without a warning
    assert not _heal_lines(third.stderr), third.stderr[-3000:]
    assert files[0].exists()


def test_flipped_bytes_in_numba_cache_dir_heal_once(tmp_path):
    """With NUMBA_CACHE_DIR set, the primitives' caches live there too: damaged ones (here every
    data file but the kernel's own) heal the same way, through the sealed cache file Numba reads
    them with when the cached kernel loads the primitives it calls."""
    script = tmp_path / "kernel_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(tmp_path / "kc"),
               NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    assert not _heal_lines(_run(script, env).stderr)
    data = [p for p in sorted((tmp_path / "nc").rglob("*.nbc"))
            if not p.name.startswith("ascendc_gen_")]
    assert data
    for p in data:
        _flip(p)
    second = _run(script, env)
    heal = _heal_lines(second.stderr)
    assert heal, second.stderr[-3000:]
    named = [next(p.name for p in data if p.name in ln) for ln in heal]
    assert len(set(named)) == len(named)              # one warning per damaged file read
    assert all("SHA-256 that does not match" in ln for ln in heal)
    assert not _heal_lines(_run(script, env).stderr)


def test_seal_detects_each_kind_of_damage():
    payload = b"\x80\x05K*."                     # pickle of 42
    blob = sealed.seal(payload)
    assert sealed.unseal(blob) == (payload, None)
    flipped = blob[:-2] + bytes([blob[-2] ^ 1]) + blob[-1:]
    assert "does not match" in sealed.unseal(flipped)[1]
    assert "does not match" in sealed.unseal(blob[:-1])[1]
    assert "no ascendc seal" in sealed.unseal(payload)[1]
    assert "does not match" in sealed.unseal(sealed.SEAL_MAGIC + b"\0" * 3)[1]
