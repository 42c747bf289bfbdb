"""bench.npu_model (docs/npu-model.md §5): a few cheap rows interpreted, deterministic and
positive simulated times, and the printed table names the rows."""
import bench.npu_model as nm

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
