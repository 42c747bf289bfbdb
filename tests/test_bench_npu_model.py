"""bench.npu_model (docs/npu-model.md §5): a few cheap rows interpreted, deterministic and
positive simulated times, and the printed table names the rows."""
import bench.npu_model as nm
import bench.npu_model_fa as nmfa

CHEAP = ("M14-relu", "M3b")


def _rows(ids):
    known = {r.id: r for r in nm.ROWS}
    return [known[i] for i in ids]


def test_rows_are_described_and_ten_or_more():
    assert len(nm.ROWS) >= 10
    assert len({r.id for r in nm.ROWS}) == len(nm.ROWS)
    for r in nm.ROWS:
        assert r.published_us > 0 and r.role in ("fit", "held out") and r.source
    assert {r.role for r in nm.ROWS} == {"fit", "held out"}


def test_cheap_rows_are_deterministic_and_positive():
    for r in _rows(CHEAP):
        a, b = r.run("interpret"), r.run("interpret")
        assert a > 0
        assert a == b, f"{r.id}: two runs gave {a} and {b} µs"


def test_table_lists_the_rows(capsys):
    assert nm.main(["--rows", ",".join(CHEAP), "--mode", "interpret"]) == 0
    out = capsys.readouterr().out
    for rid in CHEAP:
        assert rid in out
    assert "geometric mean" in out and "published µs" in out


def test_heavy_rows_are_skipped_in_interpret_mode_unless_asked():
    heavy = next(r for r in nm.ROWS if r.heavy)
    (row, us, _), = nm.measure([heavy], "interpret", run_heavy=False)
    assert row is heavy and us is None
    assert "skipped" in nm.format_table([(heavy, None, 0.0)], "interpret")


def test_fa_stats_on_a_known_table():
    # ratios 0.5, 1, 2, 4: geomean sqrt(2), worst 4 (farthest in log), P90 (nearest rank 4 of 4)
    # |4 - 1| = 3; log sim is linear in log pub (log ratio grows with log pub): correlation 1
    pairs = [(10.0, 5.0), (20.0, 20.0), (40.0, 80.0), (80.0, 320.0)]
    st = nmfa.fa_stats(pairs)
    assert st["n"] == 4
    assert abs(st["geomean"] - 2 ** 0.5) < 1e-12
    assert st["worst"] == 4.0
    assert abs(st["p90_err"] - 3.0) < 1e-12
    assert abs(st["corr_log"] - 1.0) < 1e-12
    anti = nmfa.fa_stats([(10.0, 40.0), (20.0, 20.0), (40.0, 10.0)])
    assert abs(anti["corr_log"] + 1.0) < 1e-12 and anti["worst"] in (4.0, 0.25)
    assert nmfa.fa_stats([(10.0, None)]) == {"n": 0}


def test_fa_rows_use_the_published_tiling_and_block_count():
    fa = [r for r in nm.ROWS if r.id.startswith(("M9-", "M10-", "M11-", "M12-"))]
    assert len(fa) == 45
    for r in fa:
        s0 = int(r.shape.split()[0][3:])
        assert r.cores == min(s0 // 128, 24), r.id
        assert "tile (128,256,128)" in r.shape or (r.id == "M10-16384" and "(128,512,128)" in
                                                   r.shape), r.id
        assert r.role == ("fit" if r.id.startswith("M11-1c-") else "held out"), r.id
    assert {r.id for r in fa if r.long} == {"M9-4096", "M9-8192", "M10-4096", "M10-8192",
                                            "M10-16384"}


def test_long_rows_are_skipped_unless_asked():
    long_row = next(r for r in nm.ROWS if r.long)
    (row, us, _), = nm.measure([long_row], "compiled", run_heavy=True, run_long=False)
    assert row is long_row and us is None
    table = nm.format_table([(long_row, None, 0.0)], "compiled")
    assert "skipped" in table and "--long" in table


def test_a_fa_row_runs_the_mix_kernel_on_the_published_block_count():
    r = next(x for x in nm.ROWS if x.id == "M11-2c-1024")      # 2 blocks of 128 query rows
    tl = r.trace("interpret")
    assert tl.view == "streams" and tl.roles == ("AIC", "AIV", "AIV")
    busy = {kind: sum(1 for c, k in tl.core_kinds.items()
                      if k == kind and tl.busy.get(c, {}).get("CUBE" if kind == "AIC" else
                                                               "VECTOR", 0) > 0)
            for kind in ("AIC", "AIV")}
    assert busy == {"AIC": r.cores, "AIV": 2 * r.cores} and r.cores == 2
    assert tl.us > 0
