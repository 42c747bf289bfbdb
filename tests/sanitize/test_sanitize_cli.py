"""`python -m ascendc.sanitize`: runs an unmodified script with every launch sanitized, prints
the report, exit status non-zero when errors were found."""
import os
import pathlib
import subprocess
import sys

import pytest

from ascendc.sanitize.__main__ import parse

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {here!r})
import sanitize_kernels as K
import rt
bad = int(sys.argv[1])
x = np.arange(8 * K.TILE, dtype=np.float32)
z = np.zeros(8 * K.TILE, np.float32)
K.flags_kernel[1](x, z, bad)
if len(sys.argv) > 2:
    kept = rt.malloc(1024)
print("script done", sys.argv[1:], bool(np.array_equal(z[:2 * K.TILE], x[:2 * K.TILE])))
"""


def sanitize(tmp_path, opts, *rest):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(here=str(HERE)))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ascendc.sanitize", *opts, "--interpret",
                           str(script), *rest], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


def test_a_race_is_reported_and_the_status_is_1(tmp_path):
    r = sanitize(tmp_path, ["--tool", "racecheck"], "1")
    assert r.returncode == 1, r.stderr
    assert "script done ['1']" in r.stdout          # the script ran to its end
    assert "====== ERROR: potential RAW hazard between MTE2 and MTE3 (ErrorSync2)" in r.stderr
    assert "======    in block aiv(0)" in r.stderr
    assert "sanitize_kernels.py:" in r.stderr
    # (the second copy-in also lands over the first with MTE2 not known drained: Sync1)
    assert "====== ERROR SUMMARY: 2 errors" in r.stderr
    assert "ErrorSync2         racecheck   1" in r.stderr
    assert "ErrorSync1         racecheck   1" in r.stderr


def test_a_clean_script_exits_0(tmp_path):
    r = sanitize(tmp_path, ["--check-all"], "0")
    assert r.returncode == 0, r.stderr
    assert "====== ERROR SUMMARY: 0 errors" in r.stderr


def test_leak_check_and_log_file(tmp_path):
    log = tmp_path / "san.log"
    r = sanitize(tmp_path, ["--leak-check=yes", f"--log-file={log}"], "0", "keep")
    assert r.returncode == 1, r.stderr
    text = log.read_text()
    assert "====== ERROR: device memory of size 1024 never freed (ErrorLeak)" in text
    assert "script.py:" in text
    assert "ERROR SUMMARY" not in r.stderr


def test_options_are_parsed_as_mssanitizer_spells_them():
    assert parse(["--tool=initcheck", "--leak-check", "yes", "s.py", "--tool", "x"]) == (
        {"tool": "initcheck", "leak_check": True, "check_all": False, "log_file": None,
         "interpret": False}, ["s.py", "--tool", "x"])
    with pytest.raises(ValueError, match="--tool must be one of memcheck, racecheck, initcheck, "
                                         "synccheck, got --tool=addr"):
        parse(["--tool", "addr", "s.py"])
    with pytest.raises(ValueError, match="--leak-check must be yes or no, got --leak-check=1"):
        parse(["--leak-check=1", "s.py"])


def test_a_bad_option_exits_2(tmp_path):
    r = sanitize(tmp_path, ["--frobnicate"], "0")
    assert r.returncode == 2
    assert "unknown option --frobnicate" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("opts,bug,cls", [
    (["--tool", "memcheck"], "oob", "ErrorWrite2"),
    (["--tool", "racecheck"], "race", "ErrorSync2"),
    (["--tool", "initcheck"], "uninit", "ErrorRead2"),
    (["--tool", "synccheck"], "unpaired", "ErrorSync3"),
    (["--leak-check", "yes"], "leak", "ErrorLeak"),
    (["--check-all"], None, None),
])
def test_the_example_of_each_tool_reports_as_docs_show(opts, bug, cls):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "ascendc.sanitize", *opts,
                        "examples/sanitize_demo.py", *([bug] if bug else [])],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    if cls is None:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "====== ERROR SUMMARY: 0 errors" in r.stderr
        return
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"({cls})" in r.stderr
    assert "#0 examples/sanitize_demo.py:" in r.stderr
    report = "".join(line + "\n" for line in r.stderr.splitlines() if line.startswith("======"))
    assert report in (ROOT / "docs" / "sanitizer.md").read_text(), report   # as pasted there


def test_a_merged_report_names_its_lowest_blocks_whatever_order_they_ran_in():
    from ascendc.sanitize.report import Finding, Report
    lines = {}
    shuffled = (5, 11, 0, 9, 2, 7, 1, 10, 3, 8, 4, 6)
    for order in (tuple(range(12)), tuple(range(11, -1, -1)), shuffled):
        report = Report()
        for b in order:
            report.add(Finding("Sync3", "set_flag without its wait_flag", "k", f"aiv({b})",
                               ("k.py", 3)))
        lines[order] = report.format()
        assert report.findings[0].block == "aiv(0)"
    assert len(set(lines.values())) == 1
    text = next(iter(lines.values()))
    assert "in block aiv(0)\n" in text
    assert ("found 12 times, in blocks aiv(0) aiv(1) aiv(2) aiv(3) aiv(4) aiv(5) aiv(6) aiv(7) "
            "...\n") in text


def test_a_launch_key_reused_after_a_launch_a_fault_cut_short_starts_a_new_launch():
    """A session keys a launch by the id of its argument tuple, which a later launch gets once
    the tuple is freed. A launch a fault ended before blocks 2 and 3 ran (the sweep's
    raise_faults), then two launches under its key, their blocks from two workers' ranges: each
    launch gets its own blocks (they mixed: the next launch's block 2 went to the faulted one,
    and a block 0 of each of the two later ones made one launch, a multi-core stomp of a block
    with itself in the fuzz test of kernels.add)."""
    from ascendc.sanitize.report import Finding
    from ascendc.sanitize.session import Session

    class Binary:
        name = "k"

        def trace_lines(self):
            return []

    class GMArg:
        pass

    san, binary = Session("memcheck", raise_faults=True), Binary()

    def block(gms, b, faulted=False):
        label = f"aiv({b})"
        f = Finding("Fault" if faulted else "Read2", "k", "k", label, None)
        san._collect(binary, (7, 4), None, gms, None, [f], faulted, label)
    a, b, c = ([(GMArg(), 64), (GMArg(), 64)] for _ in range(3))
    block(a, 0)
    block(a, 1, faulted=True)
    for i in (2, 3, 0, 1):
        block(b, i)
    for i in (0, 2, 1, 3):
        block(c, i)
    got = [(faulted, sorted(f.block for f in found)) for _, faulted, found in san.launches]
    every = ["aiv(0)", "aiv(1)", "aiv(2)", "aiv(3)"]
    assert got == [(True, ["aiv(0)", "aiv(1)"]), (False, every), (False, every)]
