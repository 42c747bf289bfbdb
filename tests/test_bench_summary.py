"""bench.summary (issue 12's table): the row set and its order, the formatting of values, goals
and recorded rows, the record file, and a run of main with kernels.add on a tiny shape and the
slower rows mocked. No timing is asserted."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import bench.summary as S


def test_values_are_formatted_by_unit():
    assert S.fmt_value(0.234, "x") == "0.23x"
    assert S.fmt_value(7.24, "s") == "7.2 s"
    assert S.fmt_value(330, "s") == "5.5 min"
    assert S.fmt_value(None, "s") == "n/a"


def test_the_table_has_every_row_in_order_with_goal_and_met():
    values = {"fa": 0.23, "fa_causal": 1.2, "matmul": 0.9, "add": None, "add_device": 1.6,
              "compile_add": 2.5, "compile_matmul": 93.0, "compile_adv_mm": 7.4,
              "compile_fa": 15.0, "main_job": 330.0,
              "suite": 870.0}
    results = [S.Result(k, v, recorded="2026-11-30, a test" if k in S.SLOW else "")
               for k, v in values.items()]
    text = S.format_table(results, "(context)")
    lines = text.splitlines()
    assert lines[:2] == ["| what | now | goal | met? |", "|---|---|---|---|"]
    rows = [ln for ln in lines[2:] if ln.startswith("| ")]
    assert [r.split(" | ")[0][2:] for r in rows] == [s.what for s in S.ROWS.values()]
    cells = {k: [c.strip() for c in r.strip("|").split("|")] for k, r in zip(S.ROWS, rows)}
    assert cells["fa"][1:] == ["0.23x", ">= 1.00x", "no"]
    assert cells["fa_causal"][1:] == ["1.20x", ">= 1.00x", "yes"]
    assert cells["matmul"][3] == "yes"                               # the goal itself is met
    assert cells["add"][1:] == ["n/a", ">= 1.00x", "?"]
    assert cells["compile_add"][1:] == ["2.5 s", "<= 3.0 s", "yes"]
    assert cells["compile_fa"][3] == "yes" and cells["compile_matmul"][3] == "no"
    assert cells["compile_adv_mm"][1:] == ["7.4 s", "<= 15.0 s", "yes"]
    assert cells["main_job"][1:] == ["5.5 min (recorded)", "<= 2.0 min", "no"]
    assert cells["suite"][1:] == ["14.5 min (recorded)", "<= 8.0 min", "no"]
    assert "- full test suite on a fresh clone: RECORDED, not measured in this run " \
           "(2026-11-30, a test)" in lines
    assert lines[-1] == "(context)"


def test_recorded_rows_come_from_the_record_file(tmp_path):
    path = tmp_path / "rec.json"
    missing = S.recorded("suite", path)
    assert missing.value is None and "run with --slow-rows" in missing.recorded
    S.save_record("suite", 481.26, "a test run", path)
    assert json.loads(path.read_text())["suite"]["seconds"] == 481.3
    r = S.recorded("suite", path)
    assert r.value == 481.3 and re.fullmatch(r"\d{4}-\d\d-\d\d, a test run", r.recorded)
    assert S.is_met(r) == "no"


def test_the_shipped_record_has_both_slow_rows():
    rec = S.load_record()
    assert set(rec) >= set(S.SLOW)
    for key in S.SLOW:
        assert rec[key]["seconds"] > 0 and rec[key]["date"] and rec[key]["source"]


def test_main_prints_every_row_once(monkeypatch, capsys):
    def fake(key):
        return lambda *a, **k: S.Result(key, 1.0, "mocked")
    monkeypatch.setattr(S, "measure_fa", lambda causal, *a, **k:
                        fake("fa_causal" if causal else "fa")())
    monkeypatch.setattr(S, "measure_matmul", lambda *a, **k: fake("matmul")())
    monkeypatch.setattr(S, "measure_compile", lambda key: fake(key)())
    assert S.main(["--quick", "--add-n", "65536"]) == 0          # kernels.add runs for real
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert len(rows) == len(S.ROWS)
    for spec, row in zip(S.ROWS.values(), rows):
        assert row.startswith(f"| {spec.what} | ")
    assert "kernels.add 16M fp32 (numpy in, numpy out) vs np.add: n=65536: ours" in out
    assert out.count("(recorded)") == 2 and "RECORDED, not measured in this run" in out
    assert re.search(r"numpy BLAS threads \d+ before the first launch", out)


def test_rows_must_be_known_keys(capsys):
    with pytest.raises(SystemExit):
        S.main(["--rows", "add,nope"])
    assert "--rows must be keys of fa, fa_causal" in capsys.readouterr().err


def test_a_kernel_row_alone_runs_in_a_fresh_process():
    """--rows matmul alone used to fail: the runtime was initialised only by an earlier row."""
    root = pathlib.Path(S.__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "bench.summary", "--rows", "matmul", "--quick",
                        "--matmul-n", "64"], cwd=root, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(root)))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| kernels.matmul 2048^3 fp32 (DeviceArray) vs numpy @ | " in r.stdout
