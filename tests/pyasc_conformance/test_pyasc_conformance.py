"""pyasc conformance: pyasc's own tutorials and kernel tests, unchanged, on ascend-emu.

The upstream files are NOT vendored: pyasc (github hicann/pyasc) is under the CANN Open Software
License v2.0, whose §2/§3.1 allow use and distribution only "for use in systems with Huawei AI
Processors" and forbid developing or distributing software "for use in systems with processors
other than Huawei AI processors"; a CPU emulator's test suite is not that. Point PYASC_SRC at
your own checkout of pyasc (pinned commit below) to run this module; without it every case skips.

- tutorials (`python/tutorials/*/*.py`) run as `python -m ascendc.run script.py` in a
  subprocess; a pass is exit status 0 AND the tutorial's closing "run success." log line (each
  checks its result with `assert torch.allclose(...)`, so a mismatch exits 1; -O is refused);
- kernel tests (`python/test/{kernels,generalization}/**/test_*.py`) run under
  `python -m pytest -p ascendc.pyasc_compat.pytest_plugin` in a subprocess; a pass is exit
  status 0 with at least one test passed and none skipped;
- both modes: interpret (`ASCENDC_INTERPRET=1`) and compiled (`ASCENDC_INTERPRET=0`), checked
  mode on (`ASCENDC_CHECKED=1`) as in the rest of the suite.
Known failures are the one table KNOWN_FAILURES; they are strict xfails, so a fix shows up as an
XPASS failure until the table is updated (FLAKY lists the few that fail some runs by design).
The generalization/ files allocate torch tensors on device "npu": while the compat layer is
active, torch has that device (ascendc/pyasc_compat/npu_device.py), backed by emulated device
memory laid out as torch_npu's caching allocator lays it out.

Since CI cannot fetch pyasc, the upstream tutorials and kernels/ tests that pass here also have
test-for-test rewrites that run without PYASC_SRC: test_rewritten_tutorials.py (01-05) and
test_rewritten_kernel_tests.py (kernels/test_vadd, test_matmul, test_matmul_torch,
test_bilinear_interpolation), written independently (rewritten_common.py says how). The
generalization/ files are not rewritten; what they needed beyond those is tested in
tests/ascendc/test_pyasc_{npu_device,struct,quant,transpose,transpose_ext,copy,trans5hd,
bilinear,batch_matmul}.py (TQue(VECCALC): tests/ascendc/test_state.py).
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PINNED_COMMIT = "cecba26ace65efbe00a042e7a2e9b9b9e29896f4"
SRC = os.environ.get("PYASC_SRC")

TUTORIALS = ["01_add/add.py", "02_add_framework/add_framework.py",
             "03_matmul_mix/matmul_mix.py", "04_matmul_cube_only/matmul_cube_only.py",
             "05_matmul_leakyrelu/matmul_leakyrelu.py"]
KERNEL_TESTS = [
    "kernels/test_vadd.py", "kernels/test_matmul.py", "kernels/test_matmul_torch.py",
    "kernels/test_bilinear_interpolation.py", "kernels/insert_sync/test_matmul.py",
    "kernels/insert_sync/test_quant.py", "kernels/insert_sync/test_quant_dynamic.py",
    "kernels/insert_sync/test_softmax.py", "kernels/insert_sync/test_vadd.py",
    "kernels/insert_sync/test_vadd_scalar.py",
    "generalization/adv/test_matmul.py", "generalization/adv/test_matmul_iterate_all.py",
    "generalization/adv/test_matmul_iterate_batch.py", "generalization/adv/test_matmul_quant.py",
    "generalization/adv/test_quant.py", "generalization/basic/test_aipp.py",
    "generalization/basic/test_axpy.py", "generalization/basic/test_copy.py",
    "generalization/basic/test_duplicate.py", "generalization/basic/test_trans_5hd_addr_tensor.py",
    "generalization/basic/test_trans_5hd_tensor_list.py", "generalization/basic/test_transpose.py",
    "generalization/basic/test_transpose_ext.py", "generalization/basic/test_vadd.py",
    "generalization/basic/test_vadd_bits.py", "generalization/basic/test_vadd_l0.py",
    "generalization/basic/test_vadd_sw.py", "generalization/basic/test_vadd_tiling.py",
    "generalization/basic/test_vadds.py", "generalization/basic/test_vsqrt.py",
]
MATMULS = {"03_matmul_mix/matmul_mix.py", "04_matmul_cube_only/matmul_cube_only.py",
           "05_matmul_leakyrelu/matmul_leakyrelu.py"} | \
    {t for t in KERNEL_TESTS if "matmul" in t}

_BOTH = ("interpret", "compiled")


def _both(reason):
    return {m: reason for m in _BOTH}


# name -> {mode: reason}: THE table of known failures (measured at PINNED_COMMIT). The
# generalization/ files use torch tensors on device "npu": the compat layer provides that device
# (ascendc/pyasc_compat/npu_device.py), so what is listed for them is the kernel language
KNOWN_FAILURES = {
    "generalization/adv/test_matmul_quant.py": _both("its only test is marked skip upstream "
                                                     "(Tensor self not implemented for "
                                                     "DT_INT32): nothing passes"),
    "generalization/basic/test_duplicate.py": _both(
        "writes 512-element tiles past the end of a 1000-element CPU tensor (elements [756, "
        "1268)): beyond its device copy's allocation (1008 elements), a GM trap here; on an "
        "NPU it overwrites whatever follows"),
}

# pass most runs, fail some by design: not strict (a strict xfail would fail when they pass)
FLAKY = {
    "generalization/adv/test_quant.py": _both(
        "AscendQuant quantises a float32 source from its half value (CANN's steps), the "
        "test's reference from float32: about 4% of runs of each float32 case differ by 1 on an "
        "element near a .5 boundary"),
}

# compiled mode, wall seconds of the whole subprocess (startup + compile + run) with an empty
# kernel cache (ASCENDC_CACHE_DIR; the package's own njit primitives already cached), 2 cores,
# load average 1-3 while measured (2026-12-01, the whole module in 679 s); interpret mode
# takes 3-17 s per file under the same load
COLD_COMPILE_SECONDS = {
    "01_add/add.py": 6, "02_add_framework/add_framework.py": 5, "03_matmul_mix/matmul_mix.py": 10,
    "04_matmul_cube_only/matmul_cube_only.py": 10, "05_matmul_leakyrelu/matmul_leakyrelu.py": 11,
    "kernels/test_vadd.py": 4, "kernels/test_matmul.py": 18, "kernels/test_matmul_torch.py": 19,
    "kernels/test_bilinear_interpolation.py": 14, "kernels/insert_sync/test_matmul.py": 20,
    "kernels/insert_sync/test_quant.py": 14, "kernels/insert_sync/test_quant_dynamic.py": 8,
    "kernels/insert_sync/test_softmax.py": 6, "kernels/insert_sync/test_vadd.py": 4,
    "kernels/insert_sync/test_vadd_scalar.py": 5, "generalization/adv/test_matmul.py": 11,
    "generalization/adv/test_matmul_iterate_all.py": 12,
    "generalization/adv/test_matmul_iterate_batch.py": 17,
    "generalization/adv/test_matmul_quant.py": 4, "generalization/adv/test_quant.py": 14,
    "generalization/basic/test_aipp.py": 12, "generalization/basic/test_axpy.py": 10,
    "generalization/basic/test_copy.py": 13, "generalization/basic/test_duplicate.py": 11,
    "generalization/basic/test_trans_5hd_addr_tensor.py": 10,
    "generalization/basic/test_trans_5hd_tensor_list.py": 12,
    "generalization/basic/test_transpose.py": 8, "generalization/basic/test_transpose_ext.py": 12,
    "generalization/basic/test_vadd.py": 13, "generalization/basic/test_vadd_bits.py": 14,
    "generalization/basic/test_vadd_l0.py": 12, "generalization/basic/test_vadd_sw.py": 12,
    "generalization/basic/test_vadd_tiling.py": 16, "generalization/basic/test_vadds.py": 13,
    "generalization/basic/test_vsqrt.py": 8,
}


def _cases(names):
    out = []
    for name in names:
        for mode in _BOTH:
            marks = []
            reason = KNOWN_FAILURES.get(name, {}).get(mode)
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            flaky = FLAKY.get(name, {}).get(mode)
            if flaky:
                marks.append(pytest.mark.xfail(strict=False, reason=flaky))
            if name in MATMULS and mode == "compiled":
                marks.append(pytest.mark.slow)
            out.append(pytest.param(name, mode, marks=marks, id=f"{name}-{mode}"))
    return out


@pytest.fixture(scope="module")
def pyasc_src():
    if not SRC:
        pytest.skip("set PYASC_SRC to a checkout of github hicann/pyasc (commit "
                    f"{PINNED_COMMIT[:8]}); its licence does not allow vendoring it here")
    src = pathlib.Path(SRC)
    if not (src / "python" / "tutorials").is_dir():
        pytest.skip(f"PYASC_SRC={SRC} is not a pyasc checkout (no python/tutorials)")
    try:
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = ""
    if head and head != PINNED_COMMIT:
        pytest.skip(f"PYASC_SRC is at {head[:8]}; the known-failure table is for "
                    f"{PINNED_COMMIT[:8]}")
    return src


def _env(mode):
    env = dict(os.environ)
    env.pop("PYTHONOPTIMIZE", None)          # the tutorials check with `assert`
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                       if env.get("PYTHONPATH") else []))
    env["ASCENDC_INTERPRET"] = "1" if mode == "interpret" else "0"
    env["ASCENDC_CHECKED"] = "1"
    return env


def _run(cmd, cwd, mode, timeout=1800):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=_env(mode), capture_output=True, text=True,
                       timeout=timeout)
    return p, time.perf_counter() - t0


@pytest.mark.parametrize("name, mode", _cases(TUTORIALS))
def test_tutorial(pyasc_src, name, mode):
    script = pyasc_src / "python" / "tutorials" / name
    p, dt = _run([sys.executable, "-m", "ascendc.run", str(script)], script.parent, mode)
    out = p.stdout + p.stderr
    print(f"{name} [{mode}]: exit {p.returncode} in {dt:.1f}s")
    assert p.returncode == 0 and "run success." in out, \
        f"{name} [{mode}] exit status {p.returncode}:\n{out[-4000:]}"


@pytest.mark.parametrize("name, mode", _cases(KERNEL_TESTS))
def test_kernel_test(pyasc_src, name, mode):
    test_root = pyasc_src / "python" / "test"
    p, dt = _run([sys.executable, "-m", "pytest", "-p", "ascendc.pyasc_compat.pytest_plugin",
                  "-p", "no:cacheprovider", "-q", "-rs", "--rootdir", str(test_root),
                  "-c", os.devnull, name], test_root, mode)
    out = p.stdout + p.stderr
    print(f"{name} [{mode}]: exit {p.returncode} in {dt:.1f}s")
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    ok = p.returncode == 0 and re.search(r"\b\d+ passed", summary) and "skipped" not in summary
    assert ok, f"{name} [{mode}] exit status {p.returncode}:\n{out[-4000:]}"


# the tutorial run under the NPU view: which side of each AI Core group did the work
_SIDES = """
import json
import sys
from collections import Counter
import rt
from ascendc import run
with rt.profile(npu=True) as prof:
    status = run.main([sys.argv[1]])
r, = prof.npu_runs()
side = {}
for i, blk in enumerate(r.blocks):
    c = side.setdefault(r.roles[i % len(r.roles)], Counter())
    c.update(x.pipe for x in blk)
    c["mmad"] += sum(x.name == "mmad" for x in blk)
print("SIDES", json.dumps([status, r.roles, side]))
"""


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_tutorial_03_serves_its_matmul_on_the_aics(pyasc_src, mode):
    """Tutorial 03 unchanged, its AIC side executing: every mmad, L1 -> L0 load and fixpipe of
    the run is in an AIC's stream (Ascend C's KfcServer, ascendc/adv/kfc.py), none in an
    AIV's, and the results check out (exit 0)."""
    script = pyasc_src / "python" / "tutorials" / "03_matmul_mix" / "matmul_mix.py"
    p, _ = _run([sys.executable, "-c", _SIDES, str(script)], script.parent, mode)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("SIDES")]
    assert p.returncode == 0 and line, p.stdout[-2000:] + p.stderr[-4000:]
    status, roles, sides = json.loads(line[0][len("SIDES "):])
    assert status == 0 and roles == ["AIC", "AIV", "AIV"]
    assert sides["AIC"]["mmad"] == 384 and sides["AIV"]["mmad"] == 0
    assert {"CUBE", "MTE1", "FIXPIPE"} <= set(sides["AIC"])
    assert not {"CUBE", "MTE1", "FIXPIPE", "MTE2"} & set(sides["AIV"])

