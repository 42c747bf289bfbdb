"""bench.summary (the speed table of docs/performance.md): the row set and its order, the
formatting of values, goals and recorded rows, the record file, the rendering of
docs/performance.md, and a run of main with kernels.add on a tiny shape and the
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


def test_performance_doc_renders_each_row_with_its_date_and_command():
    record = {"fa": {"value": 0.71, "date": "2026-11-30", "command": "python -m bench.summary "
                     "--quick --rows fa", "source": "S=2048: ours 1 ms"},
              "add": {"range": [0.87, 1.05], "date": "2026-12-02", "source": "quiet runs"},
              "suite": {"seconds": 539.8, "date": "2026-12-01", "source": "a fresh clone"}}
    text = S.render_performance(record)
    lines = text.splitlines()
    assert lines[0] == S.DOC_BEGIN and lines[-1] == S.DOC_END
    rows = {r.split(" | ")[0][2:]: [c.strip() for c in r.strip("|").split("|")]
            for r in lines if r.startswith("| ") and not r.startswith("| what")}
    assert list(rows) == [s.what for s in S.ROWS.values()]           # every row, in order
    assert rows[S.ROWS["fa"].what][1:] == ["0.71x", ">= 1.00x", "no", "2026-11-30",
                                           "`python -m bench.summary --quick --rows fa`"]
    assert rows[S.ROWS["add"].what][1:] == ["0.87x to 1.05x", ">= 1.00x", "partly", "2026-12-02",
                                            "`python -m bench.summary --rows add`"]
    assert rows[S.ROWS["suite"].what][1:] == ["9.0 min", "<= 8.0 min", "no", "2026-12-01",
                                              "`python -m bench.summary --slow-rows --rows suite`"]
    assert rows[S.ROWS["matmul"].what][1:3] == ["not recorded", ">= 0.90x"]
    assert f"- {S.ROWS['add'].what}: quiet runs" in lines
    for key, entry in record.items():
        row = next(r for r in lines if r.startswith(f"| {S.ROWS[key].what} |"))
        cmd = entry.get("command") or S.row_command(key)
        assert f"| {entry['date']} | `{cmd}` |" in row


def test_the_performance_doc_keeps_the_text_around_its_table(tmp_path):
    doc = tmp_path / "performance.md"
    S.write_performance({}, doc)                                    # no file: header + table
    assert doc.read_text().startswith("# Performance\n\n" + S.DOC_BEGIN)
    doc.write_text(f"# P\nbefore\n{S.DOC_BEGIN}\nold table\n{S.DOC_END}\nafter\n")
    S.write_performance({"fa": {"value": 0.5, "date": "2026-01-02", "source": "x"}}, doc)
    text = doc.read_text()
    assert text.startswith("# P\nbefore\n" + S.DOC_BEGIN)
    assert text.endswith(S.DOC_END + "\nafter\n")
    assert "old table" not in text and "| 0.50x | >= 1.00x | no | 2026-01-02 |" in text


def test_a_run_records_only_rows_measured_at_their_default_size(tmp_path):
    path = tmp_path / "rec.json"
    S.save_record("suite", 500.0, "a test run", path)
    a = S.argparse.Namespace(quick=True, fa_seq=1024, matmul_n=S.MATMUL_N, add_n=S.ADD_N)
    results = [S.Result("fa", 0.5, "S=1024"), S.Result("matmul", 1.05, "n=2048"),
               S.Result("add", None, "failed"), S.Result("suite", 480.0, recorded="old")]
    assert S.record_results(results, a, "2 CPUs", path) == ["matmul"]
    rec = json.loads(path.read_text())
    assert set(rec) == {"suite", "matmul"} and rec["suite"]["seconds"] == 500.0
    assert rec["matmul"]["value"] == 1.05 and rec["matmul"]["source"] == "n=2048; 2 CPUs"
    assert rec["matmul"]["command"] == "python -m bench.summary --quick --rows matmul"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", rec["matmul"]["date"])


def test_the_shipped_performance_doc_is_rendered_from_the_shipped_record():
    text = S.PERFORMANCE_DOC.read_text()
    assert S.render_performance(S.load_record()) in text


def test_main_prints_every_row_once(monkeypatch, capsys, tmp_path):
    shipped = S.load_record()
    (tmp_path / "rec.json").write_text(json.dumps(shipped))
    monkeypatch.setattr(S, "RECORD", tmp_path / "rec.json")          # the shipped files stay
    monkeypatch.setattr(S, "PERFORMANCE_DOC", tmp_path / "performance.md")

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
    doc = (tmp_path / "performance.md").read_text()                  # mocked rows recorded
    assert "| 1.00x | >= 1.00x | yes |" in doc and "--quick --rows fa`" in doc


def test_rows_must_be_known_keys(capsys):
    with pytest.raises(SystemExit):
        S.main(["--rows", "add,nope"])
    assert "--rows must be keys of fa, fa_causal" in capsys.readouterr().err


def test_a_kernel_row_alone_runs_in_a_fresh_process():
    """--rows matmul alone used to fail: the runtime was initialised only by an earlier row."""
    root = pathlib.Path(S.__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "bench.summary", "--rows", "matmul", "--quick",
                        "--matmul-n", "64", "--no-docs"], cwd=root, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(root)))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| kernels.matmul 2048^3 fp32 (DeviceArray) vs numpy @ | " in r.stdout
