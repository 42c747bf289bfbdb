"""racecheck across the cores of a MIX launch: GM handed between an AIC and its AIVs (or between
AIVs) is clean when cross-core flags or sync_all order it, and a missing or misplaced flag is a
multi-core GM race naming both instances and both lines, in both modes."""
import inspect

import numpy as np
import pytest

import ascendc as asc

import xcore_kernels as K

TILE = K.TILE
GROUPS = 2


def line_of(kernel, text, nth=0):
    lines, first = inspect.getsourcelines(kernel.fn)
    hits = [first + i for i, s in enumerate(lines) if text in s]
    return (inspect.getsourcefile(kernel.fn), hits[nth])


def handoff(bad, interpret, **kw):
    x = np.arange(GROUPS * 2 * TILE, dtype=np.float32)
    ws = np.zeros_like(x)
    z = np.zeros(2 * x.size, np.float32)
    with asc.sanitize(**kw) as san:
        K.handoff_kernel[GROUPS](x, ws, z, bad, interpret=interpret)
    return san.report, x, z


def neighbour(bad, interpret, **kw):
    x = np.arange(GROUPS * 2 * TILE, dtype=np.float32)
    ws = np.zeros_like(x)
    z = np.zeros_like(x)
    with asc.sanitize(**kw) as san:
        K.neighbour_kernel[GROUPS](x, ws, z, bad, interpret=interpret)
    return san.report, x, z


def races(report):
    got = [f for f in report.findings if f.cls == "GMRace"]
    assert got, report.format()
    return got


def test_aic_to_aiv_handoff_ordered_by_mode_2_flags_is_clean(interpret):
    rep, x, z = handoff(0, interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z, np.concatenate([x * 2 + 1, x * 3 + 1]))


@pytest.mark.parametrize("bad", [1, 2])
def test_aiv_reading_the_workspace_before_its_flag_holds_the_copy_is_a_race(interpret, bad):
    rep, _, _ = handoff(bad, interpret, tool="racecheck")
    got = races(rep)
    assert {f.cls for f in rep.findings} == {"GMRace"}, rep.format()
    f = got[0]
    g = int(f.block[4:-1]) // 2
    assert f.kind == f"potential RAW/WAR hazard on GM between aic({g}) and {f.block}"
    assert f.block.startswith("aiv(")
    assert f.where == line_of(K._add_to, "asc.data_copy(a, src, n)")
    assert f.other == (f"aic({g}) (SCALAR) wrote at",
                       line_of(K.handoff_kernel, "wg.set_value(i, xg.get_value(i) * (2.0 + r))"))
    assert f.address.startswith("GM argument 'ws' offset ")
    assert f"{f.block} (MTE2) reads 4 bytes aic({g}) writes" in f.detail
    assert {f.block for f in got} == {"aiv(0)", "aiv(1)", "aiv(2)", "aiv(3)"}
    text = rep.format()
    assert "(multi-core GM race)" in text and "multi-core GM race racecheck" in text


def test_aic_overwriting_the_workspace_before_free_is_a_race(interpret):
    rep, _, _ = handoff(3, interpret, tool="racecheck")
    got = races(rep)
    assert {f.block for f in got} == {"aiv(0)", "aiv(1)", "aiv(2)", "aiv(3)"}
    assert all(f.other[0].startswith(f"aic({int(f.block[4:-1]) // 2}) (SCALAR)") for f in got)


@pytest.mark.parametrize("bad", [0, 2])
def test_aivs_ordered_by_mode_1_or_sync_all_are_clean(interpret, bad):
    rep, x, z = neighbour(bad, interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    t = x.reshape(-1, TILE) + 1
    other = t.reshape(GROUPS, 2, TILE)[:, ::-1].reshape(-1, TILE) if bad == 0 else \
        np.roll(t, -1, 0)
    np.testing.assert_array_equal(z.reshape(-1, TILE), other + 1)


@pytest.mark.parametrize("bad,pairs", [
    (1, {("aiv(0)", "aiv(1)"), ("aiv(1)", "aiv(0)"), ("aiv(2)", "aiv(3)"), ("aiv(3)", "aiv(2)")}),
    (3, {("aiv(1)", "aiv(0)"), ("aiv(2)", "aiv(1)"), ("aiv(3)", "aiv(2)"), ("aiv(0)", "aiv(3)")}),
])
def test_aivs_without_the_flag_their_copy_waits_for_race(interpret, bad, pairs):
    rep, _, _ = neighbour(bad, interpret, tool="racecheck")
    got = races(rep)
    assert {f.cls for f in rep.findings} == {"GMRace"}, rep.format()
    # (writer, reader): the reader's MTE2 copy of the writer's MTE3 tile
    assert {(f.other[0].split()[0], f.block) for f in got} == pairs
    for f in got:
        assert f.where == line_of(K._add_to, "asc.data_copy(a, src, n)")
        assert f.other[1] == line_of(K._add_to, "asc.data_copy(dst, b, n)")
        assert f.other[0].endswith("(MTE3) wrote at")
        assert "reads 256 bytes" in f.detail


def test_memcheck_alone_does_not_judge_the_order(interpret):
    rep, _, _ = handoff(1, interpret, tool="memcheck")
    assert rep.count() == 0, rep.format()


def test_two_aivs_of_a_group_writing_the_same_gm_tile_stomp(interpret):
    rep, _, _ = neighbour(4, interpret, tool="racecheck")
    got = [f for f in rep.findings if f.cls == "Stomp"]
    assert {f.cls for f in rep.findings} == {"Stomp"}, rep.format()
    assert {f.block for f in got} <= {"aiv(0)", "aiv(1)", "aiv(2)", "aiv(3)"}
    assert {f.address for f in got} == {"GM argument 'z' offset 0",
                                        f"GM argument 'z' offset {2 * TILE * 4}"}
    for f in got:
        assert f.where == line_of(K._add_to, "asc.data_copy(dst, b, n)")
    # the clean twin (bad=0: each AIV writes its own tile) is
    # test_aivs_ordered_by_mode_1_or_sync_all_are_clean


# ---- a served Matmul (asc.adv.Matmul in a MIX kernel): its messages order GM as flags do -------

def served(bad, interpret, m=128, n=64, k=64, **kw):
    rng = np.random.default_rng(1)
    x = rng.integers(-5, 5, (m, k)).astype(np.float16)
    a = np.zeros_like(x)
    b = rng.integers(-5, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-5, 5, n).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    t = K.served_tiling(m, n, k, 2, 64, 32)         # 2 AIVs of one group, 2 tiles each
    ws = np.zeros(1 << 16, np.uint8)
    with asc.sanitize(**kw) as san:
        K.served_kernel[1](x, a, b, c, bias, t, ws, bad, interpret=interpret)
    np.testing.assert_array_equal(c, x.astype(np.float32) @ b.astype(np.float32) + bias)
    return san.report


def test_a_served_matmuls_messages_order_the_workspace_and_the_operands(interpret):
    # the AIC's fixpipe into an AIV's workspace slot, that AIV's copy out of it and the next
    # tile's fixpipe over it are ordered by the answer and the next call; the bias table is
    # reloaded per tile after the previous tile's mmad
    rep = served(0, interpret, check_all=True)
    assert rep.count() == 0, rep.format()


def test_an_operand_written_without_the_barrier_before_the_call_races_with_the_server(
        interpret):
    rep = served(1, interpret, tool="racecheck")
    got = races(rep)
    assert {f.cls for f in rep.findings} == {"GMRace"}, rep.format()
    assert {f.block for f in got} == {"aic(0)"}
    assert {f.other[0] for f in got} == {"aiv(0) (MTE3) wrote at", "aiv(1) (MTE3) wrote at"}
    for f in got:
        assert f.where == line_of(K.served_kernel, "asc.adv.register_matmul(")
        assert f.other[1] == line_of(K._copy_to, "asc.data_copy(dst, b, n)")
        assert f.address.startswith("GM argument 'a' offset ")
        assert "aic(0) (MTE2) reads" in f.detail
