"""bench.flash_attention (README command 1) on tiny shapes, interpreted: the simulated NPU
columns next to the CPU ones, forward and backward, the simulated views of the main S,
op_summary.csv's host and msprof columns, and `--tune`'s rankings with the defaults marked."""
import csv

import pytest

import bench.flash_attention as fa
import rt
from rt.opsummary import HOST_COLUMNS, SIM_COLUMNS

TINY = ["--mode", "interpret", "--heads", "2", "--head-dim", "32", "--repeats", "1"]


def _csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_main_writes_the_simulated_columns_and_files(tmp_path, capsys):
    out = tmp_path / "prof"
    assert fa.main(TINY + ["--seq", "48", "--sweep", "32", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    soc = rt.get_soc().name
    assert f"simulated {soc}" in text and "sim us" in text and "TFLOP/s" in text
    assert "top " in text and "source lines by simulated busy time" in text
    assert "pipe utilisation" in text
    for name in ("trace.json", "op_summary.csv", "results.csv", "npu_trace.json",
                 "PipeUtilization.csv", "code_exe.csv"):
        assert (out / name).is_file(), name
    rows = _csv(out / "results.csv")
    assert [int(r["S"]) for r in rows] == [32, 48]
    for r in rows:
        assert float(r["npu_sim_us"]) > 0 and float(r["npu_sim_tflops"]) > 0
        assert r["npu_sim_soc"] == f"simulated {soc}"
        assert float(r["ours_ms"]) > 0                       # the CPU columns are kept
    ops = {r["op_name"]: r for r in _csv(out / "op_summary.csv")}
    assert set(ops) == {fa.KERNEL, fa.KERNEL_BWD}
    op = ops[fa.KERNEL]
    assert list(op) == list(HOST_COLUMNS + SIM_COLUMNS)
    assert op["op_name"] == fa.KERNEL and int(op["calls"]) == 1   # the timed run only
    assert op["simulated_soc"] == f"simulated {soc}" and op["simulated_calls"] == "1"
    assert float(op["aicore_time(us)"]) == pytest.approx(float(rows[1]["npu_sim_us"]), abs=1e-3)
    assert 0 < float(op["aic_mac_ratio"]) <= 1 and 0 < float(op["aiv_vec_ratio"]) <= 1
    assert int(ops[fa.KERNEL_BWD]["calls"]) == 2     # one timed backward: prep, fused (f32)


def test_main_profiles_the_backward(tmp_path, capsys):
    out = tmp_path / "prof"
    assert fa.main(TINY + ["--seq", "48", "--sweep", "", "--causal", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fwd + bwd" in text and "backward (dq, dk, dv)" in text and "torch bwd" in text
    assert "backward, prep pass" in text and "backward, fused pass" in text    # one-pass, f32
    (row,) = _csv(out / "results.csv")
    assert row["bwd_correct"] == "True" and float(row["bwd_max_abs_err"]) < 1e-4
    assert float(row["bwd_ms"]) > 0 and float(row["bwd_npu_sim_us"]) > 0
    assert 0 < float(row["bwd_npu_peak_share"]) < 1
    for sub in ("backward_prep", "backward_fused"):
        for name in ("npu_trace.json", "PipeUtilization.csv", "code_exe.csv"):
            assert (out / sub / name).is_file(), (sub, name)


def test_no_backward_profiles_the_forward_alone(tmp_path, capsys):
    out = tmp_path / "fwd"
    assert fa.main(TINY + ["--seq", "32", "--sweep", "", "--no-backward", "--out",
                           str(out)]) == 0
    text = capsys.readouterr().out
    assert "fwd + bwd" not in text and "backward (dq, dk, dv)" not in text
    assert "fused pass" not in text
    (row,) = _csv(out / "results.csv")
    assert "bwd_ms" not in row and not (out / "backward_fused").exists()


def test_simulated_time_is_deterministic(tmp_path):
    a = [fa.main(TINY + ["--seq", "32", "--sweep", "", "--out", str(tmp_path / d)])
         for d in ("a", "b")]
    assert a == [0, 0]
    us = [_csv(tmp_path / d / "results.csv")[0]["npu_sim_us"] for d in ("a", "b")]
    assert us[0] == us[1]


def test_tune_ranks_the_candidates_and_marks_the_default(tmp_path, capsys):
    out = tmp_path / "t"
    assert fa.main(TINY + ["--seq", "48", "--sweep", "", "--tune", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ranked by simulated time" in text and "<- default" in text
    rows = _csv(out / "tune.csv")
    ranked = [r for r in rows if r["rank"]]
    assert [int(r["rank"]) for r in ranked] == list(range(1, len(ranked) + 1))
    us = [float(r["simulated_us"]) for r in ranked]
    assert us == sorted(us) and len(ranked) >= 2
    assert sum(r["is_default"] == "True" for r in rows) == 1
    assert "Backward tiling candidates" in text
    rows = _csv(out / "tune_backward.csv")
    ranked = [r for r in rows if r["rank"]]
    us = [float(r["simulated_us"]) for r in ranked]
    assert us == sorted(us) and len(ranked) >= 2
    assert sum(r["is_default"] == "True" for r in rows) == 1


def test_tune_only_ranks_the_given_tilings_alone(tmp_path, capsys):
    out = tmp_path / "t"
    assert fa.main(TINY + ["--seq", "48", "--tune-only", "--no-backward", "--tune-tilings",
                           "32,32,32;64,48,16", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Tiling candidates (the given) for S=48 ranked by simulated time" in text
    assert "Backward" not in text and "ours ms" not in text      # no profile, no backward
    rows = _csv(out / "tune.csv")
    assert sorted((r["s1_block"], r["s2_block"], r["kv_chunk"]) for r in rows) == \
        [("32", "32", "32"), ("64", "48", "16")]
    assert [r["rank"] for r in rows] == ["1", "2"]
    assert not (out / "trace.json").exists()


def test_tune_tilings_must_be_three_numbers(tmp_path):
    with pytest.raises(ValueError, match=r"--tune-tilings: each tiling must be "
                                         r"s1_block,s2_block,kv_chunk, got tiling='128,256'"):
        fa.main(TINY + ["--seq", "48", "--tune-only", "--no-backward", "--tune-tilings",
                        "128,256", "--out", str(tmp_path)])


def test_tune_backward_tilings_rank_the_given_backward_tilings_alone(tmp_path, capsys):
    out = tmp_path / "t"
    assert fa.main(TINY + ["--seq", "48", "--tune-only", "--no-tune-forward",
                           "--tune-backward-tilings", "32,32;16,48,1;32,32,0", "--out",
                           str(out)]) == 0
    text = capsys.readouterr().out
    assert "Backward tiling candidates (the given) for S=48 ranked by simulated time" in text
    assert "busiest pipe: of the longest launch" in text
    assert "Tiling candidates (the given)" not in text and "Tiling candidates (all)" not in text
    assert not (out / "tune.csv").exists()
    rows = _csv(out / "tune_backward.csv")
    assert sorted((r["s1_block"], r["s2_block"], r["one_pass"]) for r in rows) == \
        [("16", "48", "True"), ("32", "32", "False"), ("32", "32", "True")]
    assert [r["rank"] for r in rows] == ["1", "2", "3"]
    us = [float(r["simulated_us"]) for r in rows]
    assert us == sorted(us) and len(set(us)) == 3
    # the pipes of each candidate's longest launch (a MIX launch: its AICs' or AIVs' pipes)
    assert all(r["busiest_pipe"].split(" ")[0] in ("AIC", "AIV") and r["busiest_pipe"].split(
        " ")[1] in ("CUBE", "MTE1", "MTE2", "FIXPIPE", "VECTOR", "SCALAR", "MTE3") for r in rows)


def test_tune_backward_tilings_must_be_two_or_three_numbers(tmp_path):
    with pytest.raises(ValueError, match=r"--tune-backward-tilings: each tiling must be "
                                         r"s1_block,s2_block\[,one_pass 1\|0\], got "
                                         r"tiling='64,64,2'"):
        fa.main(TINY + ["--seq", "48", "--tune-only", "--no-tune-forward",
                        "--tune-backward-tilings", "32,32;64,64,2", "--out", str(tmp_path)])
