"""The sanitizer finds each error class (npu-check name, kind, lines) in a minimal kernel and
nothing in the near-identical correct one, in both modes."""
import inspect
import warnings

import numpy as np
import pytest

import ascendc as asc
import rt

import sanitize_kernels as K

TILE = K.TILE


def line_of(kernel, text, nth=0):
    """(file, line) of the nth kernel source line containing `text`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    hits = [first + i for i, s in enumerate(lines) if text in s]
    return (inspect.getsourcefile(kernel.fn), hits[nth])


def run(kernel, blocks, args, interpret, tool="memcheck", launch=None, **kw):
    with asc.sanitize(tool, **kw) as san:
        kernel[blocks](*args, interpret=interpret, **(launch or {}))
    return san.report


def only(report, cls):
    got = [f for f in report.findings if f.cls == cls]
    assert got, report.format()
    assert {f.cls for f in report.findings} == {cls}, report.format()
    return got[0]


def data():
    return np.arange(8 * TILE, dtype=np.float32), np.zeros(8 * TILE, np.float32)


# -- memcheck ------------------------------------------------------------------------------------

def test_gm_read_out_of_bounds_is_reported_and_the_other_blocks_go_on(interpret):
    x, z = data()
    rep = run(K.gm_oob_kernel, 8, (x, z, 8 * TILE - 16, 3), interpret)
    f = only(rep, "Read3")
    assert f.kind == f"illegal read of size {TILE * 4}"
    assert f.block == "aiv(3)"
    assert f.address.startswith(f"GM argument 'x' offset {(8 * TILE - 16) * 4}")
    assert f.where == line_of(K.gm_oob_kernel, "asc.data_copy(a, xg[start:], TILE)")
    assert rep.count() == 1
    ok = np.ones(8 * TILE, bool)
    ok[3 * TILE:4 * TILE] = False
    np.testing.assert_array_equal(z[ok], x[ok])      # blocks other than 3 ran to their end
    assert "====== ERROR: illegal read of size 256 (ErrorRead3)" in rep.format()
    assert "====== ERROR SUMMARY: 1 error" in rep.format()


def test_gm_write_out_of_bounds_is_write2(interpret):
    x = np.arange(16 * TILE, dtype=np.float32)
    z = np.zeros(8 * TILE, np.float32)
    rep = run(K.gm_oob_kernel, 8, (x, z, 8 * TILE - 16, 3), interpret)
    f = only(rep, "Write2")
    assert f.address.startswith(f"GM argument 'z' offset {(8 * TILE - 16) * 4}")
    assert f.where == line_of(K.gm_oob_kernel, "asc.data_copy(zg[start:], a, TILE)")


def test_gm_in_bounds_is_clean_and_overreach_inside_the_allocation_only_warns(interpret):
    x, z = data()
    rep = run(K.gm_oob_kernel, 8, (x, z, 0, -1), interpret)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z, x)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        rep = run(K.gm_oob_kernel, 8, (x, z, 7 * TILE + 8, 7), interpret)
    assert rep.count() == 0, rep.format()
    assert any("accessed past its end" in str(m.message) for m in w)


@pytest.mark.parametrize("bad,cls,kind,line", [
    (1, "Read1", "read of size 256 through a freed tensor", "asc.adds(b, a, 1.0, TILE)"),
    (5, "Write1", "write of size 256 through a freed tensor", "asc.adds(b, a, 1.0, TILE)"),
    (3, "Free", "double free", "qi.free_tensor(a)"),
    (4, "Leak", "tensor never freed", None),
])
def test_tensor_lifetime_errors(interpret, bad, cls, kind, line):
    x, z = data()
    rep = run(K.adds_kernel, 1, (x, z, bad), interpret)
    f = only(rep, cls)
    assert f.kind == kind
    if line is not None:
        nth = 2 if bad == 3 else 0
        assert f.where == line_of(K.adds_kernel, line, nth)
    if cls == "Read1":
        assert f.other == ("freed at", line_of(K.adds_kernel, "qi.free_tensor(a)"))
    if cls == "Write1":
        assert f.other == ("freed at", line_of(K.adds_kernel, "qo.free_tensor(b)"))


def test_tensor_lifetime_clean(interpret):
    x, z = data()
    rep = run(K.adds_kernel, 1, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z[:TILE], x[:TILE] + 1)


@pytest.mark.parametrize("shift,rshift,cls,line", [
    (1, 8, "Write4", "asc.data_copy_pad(a[shift:], xg, "),
    (8, 3, "Read4", "asc.data_copy_pad(zg, a[rshift:], p)"),
    (8, 8, None, None)])
def test_misaligned_local_address(interpret, shift, rshift, cls, line):
    x, z = data()
    rep = run(K.pad_align_kernel, 1, (x, z, shift, rshift), interpret,
              check_all=cls is None)
    if cls is None:
        assert rep.count() == 0, rep.format()
        np.testing.assert_array_equal(z[:16], x[:16])
    else:
        f = only(rep, cls)
        assert f.kind == ("misaligned write" if cls == "Write4" else "misaligned read")
        assert "32-byte aligned" in f.detail
        assert f.where == line_of(K.pad_align_kernel, line)


@pytest.mark.parametrize("what,cls,line", [
    (1, "Buffer2", "t = q.deque(F32)"), (2, "Buffer1", "t = q.alloc_tensor(F32)"),
    (3, "Buffer4", "other.free_tensor(t)"), (4, "Buffer0", "u = late.alloc_tensor(F32)"),
    (5, "Buffer3", "v = t[80:]"), (0, None, None)])
def test_queue_misuse(interpret, what, cls, line):
    x, _ = data()
    rep = run(K.queue_kernel, 1, (x, what), interpret, check_all=cls is None)
    if cls is None:
        assert rep.count() == 0, rep.format()
    else:
        f = only(rep, cls)
        assert f.where == line_of(K.queue_kernel, line, 1 if what == 2 else 0)


def test_device_memory_never_freed_is_a_leak_with_leak_check():
    with asc.sanitize("memcheck", leak_check="yes") as san:
        kept = rt.malloc(4096)                                      # never freed
        freed = rt.malloc(4096)
        rt.free(freed)
    f = only(san.report, "Leak")
    assert f.kind == "device memory of size 4096 never freed"
    assert f.where[1] == inspect.currentframe().f_lineno - 5
    rt.free(kept)
    with asc.sanitize("memcheck", leak_check=True) as san:
        p = rt.malloc(4096)
        rt.free(p)
    assert san.report.count() == 0, san.report.format()


# -- initcheck -----------------------------------------------------------------------------------

def test_uninitialised_read_names_the_read_and_the_allocation(interpret):
    x, z = data()
    rep = run(K.adds_kernel, 1, (x, z, 2), interpret, tool="initcheck")
    f = only(rep, "Read2")
    assert f.kind == "uninitialized read of size 256"
    assert f.where == line_of(K.adds_kernel, "asc.adds(b, a, 1.0, TILE)")
    assert f.other == ("allocated at", line_of(K.adds_kernel, "a = qi.alloc_tensor(F32)"))
    assert f.address.startswith("UB offset 128")
    rep = run(K.adds_kernel, 1, (x, z, 0), interpret, tool="initcheck")
    assert rep.count() == 0, rep.format()


# -- racecheck -----------------------------------------------------------------------------------

def test_raw_between_pipes_without_a_flag(interpret):
    x, z = data()
    rep = run(K.flags_kernel, 1, (x, z, 1), interpret, tool="racecheck")
    # without the flag, MTE2 has not drained when it copies in again over the same bytes either
    assert {f.cls for f in rep.findings} == {"Sync1", "Sync2"}, rep.format()
    f = [f for f in rep.findings if f.cls == "Sync2"][0]
    assert f.kind == "potential RAW hazard between MTE2 and MTE3"
    assert f.where == line_of(K.flags_kernel, "asc.data_copy(zg, a, TILE)")
    assert f.other == ("MTE2 wrote at", line_of(K.flags_kernel, "asc.data_copy(a, xg, TILE)"))


def test_a_barrier_of_one_pipe_does_not_order_another(interpret):
    x, z = data()
    rep = run(K.flags_kernel, 1, (x, z, 7), interpret, tool="racecheck")
    f = only(rep, "Sync2")      # MTE2 drained (no Sync1), but MTE3 is not ordered after it
    assert f.kind == "potential RAW hazard between MTE2 and MTE3"
    assert f.where == line_of(K.flags_kernel, "asc.data_copy(zg, a, TILE)")
    rep = run(K.flags_kernel, 1, (x, z, 8), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z[:2 * TILE], x[:2 * TILE])


def test_war_write_over_data_not_yet_read(interpret):
    x, z = data()
    rep = run(K.flags_kernel, 1, (x, z, 2), interpret, tool="racecheck")
    f = only(rep, "Write3")
    assert f.kind == "potential WAR hazard between MTE3 and MTE2"
    assert f.where == line_of(K.flags_kernel, "asc.data_copy(a, xg[TILE:], TILE)")
    assert f.other == ("MTE3 read at", line_of(K.flags_kernel, "asc.data_copy(zg, a, TILE)"))


def test_flags_kernel_is_clean_under_every_tool(interpret):
    x, z = data()
    rep = run(K.flags_kernel, 1, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z[:2 * TILE], x[:2 * TILE])


def test_multi_core_gm_stomp(interpret):
    x, z = data()
    rep = run(K.stomp_kernel, 4, (x, z, 0), interpret, tool="racecheck")
    f = only(rep, "Stomp")
    assert f.address == "GM argument 'z' offset 0"
    assert f.where == line_of(K.stomp_kernel, "asc.data_copy(zg[b * TILE * spread:], a, TILE)")
    rep = run(K.stomp_kernel, 4, (x, z, 1), interpret, tool="racecheck")
    assert rep.count() == 0, rep.format()


# -- synccheck -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad,cls,kind,line", [
    (3, "Sync3", "set_flag without its wait_flag", "asc.set_flag(asc.HardEvent.MTE3_MTE2, 2)"),
    (4, "Sync4", "event id set twice", "asc.set_flag(asc.HardEvent.MTE2_MTE3, 1)"),
    (5, "Sync3", "wait_flag without its set_flag", "asc.wait_flag(asc.HardEvent.MTE3_MTE2, 3)"),
    (6, "Sync4", "event id out of range", "asc.set_flag(asc.HardEvent.MTE3_MTE2, 9)"),
])
def test_unpaired_and_duplicate_flags(interpret, bad, cls, kind, line):
    x, z = data()
    rep = run(K.flags_kernel, 1, (x, z, bad), interpret, tool="synccheck")
    f = only(rep, cls)
    assert f.kind == kind
    assert f.where == line_of(K.flags_kernel, line, 1 if bad == 4 else 0)


# -- the report ----------------------------------------------------------------------------------

def test_errors_are_deduplicated_and_counted(interpret):
    x, z = data()
    rep = run(K.stomp_kernel, 4, (x, z, 0), interpret, tool="racecheck")
    text = rep.format()
    assert len(rep.findings) == 1
    assert "====== ERROR: write of size 256 to GM bytes another block writes " \
           "(multi-core GM stomp)" in text
    assert "======    multi-core GM stomp" in text


def test_bad_tool_is_rejected():
    with pytest.raises(ValueError, match="tool must be one of memcheck, racecheck, initcheck, "
                                         "synccheck, got tool='addrcheck'"):
        asc.sanitize("addrcheck")


# -- Sync1 and cross-core flags ------------------------------------------------------------------

def test_copies_filling_each_others_gaps_need_no_barrier(interpret):
    # a strided local destination is recorded block by block, not as one range of its bytes
    x, z = data()
    rep = run(K.interleave_kernel, 1, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    blocks = np.stack([x[:TILE].reshape(-1, 8), x[TILE:2 * TILE].reshape(-1, 8)], 1)
    np.testing.assert_array_equal(z[:2 * TILE], blocks.ravel())


def test_strided_copies_over_the_same_blocks_without_the_barrier_are_sync1(interpret):
    x, z = data()
    rep = run(K.interleave_kernel, 1, (x, z, 1), interpret, tool="racecheck")
    f = only(rep, "Sync1")
    assert f.where == line_of(K.interleave_kernel, "asc.data_copy(a[8 - 8 * bad:], xg[TILE:]")
    assert f.other == ("MTE2 wrote at", line_of(K.interleave_kernel, "asc.data_copy(a, xg, "))
    assert f.address == "UB offset 0"


def test_overlapping_copies_of_one_pipe_without_its_barrier_are_sync1(interpret):
    x, z = data()
    rep = run(K.overlap_kernel, 1, (x, z, 1), interpret, tool="racecheck")
    f = only(rep, "Sync1")
    assert f.kind == "potential WAW hazard within MTE2"
    assert f.where == line_of(K.overlap_kernel, "asc.data_copy(a[TILE // 2:], xg[TILE:], TILE)")
    assert f.other == ("MTE2 wrote at", line_of(K.overlap_kernel, "asc.data_copy(a, xg, TILE)"))
    assert f.address == "UB offset 128"
    assert "no pipe_barrier(PIPE_MTE2) orders the two copies" in rep.format()
    assert "ErrorSync1" in rep.format()


def test_overlapping_copies_with_the_barrier_are_clean(interpret):
    x, z = data()
    z[:] = 0
    rep = run(K.overlap_kernel, 1, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z[:TILE // 2], x[:TILE // 2])
    np.testing.assert_array_equal(z[TILE // 2:TILE + TILE // 2], x[TILE:2 * TILE])


def test_a_cross_core_set_never_waited_for_is_sync3(interpret):
    x = np.zeros(8, np.float32)
    rep = run(K.xflag_kernel, 2, (x, 1), interpret, tool="synccheck")
    got = [f for f in rep.findings if f.cls == "Sync3"]
    assert {f.cls for f in rep.findings} == {"Sync3"}, rep.format()
    assert {f.kind for f in got} == {"cross_core_set_flag without its cross_core_wait_flag"}
    assert {f.block for f in got} == {"aiv(0)", "aiv(1)", "aiv(2)", "aiv(3)"}
    f = got[0]
    assert f.where == line_of(K.xflag_kernel, "asc.cross_core_set_flag(FULL, 2, ", 1)
    assert "1 set(s) of flag_id=1 for aiv(" in f.detail
    assert rep.count() == 4
    assert "ErrorSync3" in rep.format()


def test_a_cross_core_wait_no_set_releases_is_sync3(interpret):
    x = np.zeros(8, np.float32)
    with asc.sanitize("synccheck") as san:
        with pytest.raises(rt.AclError, match="cross-core deadlock"):
            K.xflag_kernel[2](x, 2, interpret=interpret)
    got = [f for f in san.report.findings if f.cls == "Sync3"]
    assert got, san.report.format()
    assert {f.kind for f in got} == {"cross_core_wait_flag never released by a set"}
    assert {f.block for f in got} <= {"aiv(0)", "aiv(1)", "aiv(2)", "aiv(3)"}
    assert got[0].where == line_of(K.xflag_kernel, "asc.cross_core_wait_flag(FREE, 2, ")


def test_cross_core_flags_that_pair_up_are_clean(interpret):
    x = np.zeros(8, np.float32)
    rep = run(K.xflag_kernel, 2, (x, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()


# -- casts and reductions record what they read and write -----------------------------------------

@pytest.mark.parametrize("bad,line", [(1, "asc.cast(h, w, asc.RoundMode.CAST_NONE, TILE)"),
                                      (2, "asc.reduce_sum(o, w, scratch, TILE)")])
def test_casts_and_reductions_reading_unwritten_memory_are_read2(interpret, bad, line):
    x, z = data()
    rep = run(K.cast_reduce_kernel, 1, (x, z, bad), interpret, tool="initcheck")
    f = only(rep, "Read2")
    assert f.where == line_of(K.cast_reduce_kernel, line)
    assert f.kind == f"uninitialized read of size {TILE * 4}"
    assert f.other == ("allocated at",
                       line_of(K.cast_reduce_kernel, "w = tmp.get_with_offset(TILE, TILE * 4"))


def test_casts_and_reductions_of_written_memory_are_clean(interpret):
    x, z = data()
    rep = run(K.cast_reduce_kernel, 1, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    assert z[0] == x[:TILE].sum()
    np.testing.assert_array_equal(z[1:TILE], x[1:TILE])


# -- the cube pipes as producers and consumers; compare / select records ---------------------------

@pytest.mark.parametrize("bad,pipes,line", [
    (1, ("MTE2", "MTE1"), "asc.load_data(a2, a1, "),
    (2, ("MTE1", "CUBE"), "asc.mmad(cl, a2, b2, "),
    (3, ("CUBE", "FIXPIPE"), "asc.fixpipe(cg, cl, "),
])
def test_cube_pipes_without_their_flag_are_sync2(interpret, bad, pipes, line):
    rng = np.random.default_rng(bad)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    rep = run(K.cube_flags_kernel, 1, (a, b, c, bad), interpret, tool="racecheck",
              launch={"kernel_type": "AIC_ONLY"})
    f = only(rep, "Sync2")
    assert f.kind == f"potential RAW hazard between {pipes[0]} and {pipes[1]}"
    assert f.where == line_of(K.cube_flags_kernel, line)
    assert f.block == "aic(0)"


def test_cube_pipes_ordered_by_flags_are_clean(interpret):
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    rep = run(K.cube_flags_kernel, 1, (a, b, c, 0), interpret, check_all=True,
              launch={"kernel_type": "AIC_ONLY"})
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("bad,line", [
    (1, "asc.compare_scalar(mask, other, 0.0, asc.CMPMODE.GT, TILE)"),
    (2, "asc.select(o, mask, other, 0.0, asc.SELMODE.VSEL_TENSOR_SCALAR_MODE, TILE)"),
])
def test_compare_and_select_reading_unwritten_memory_are_read2(interpret, bad, line):
    x, z = data()
    rep = run(K.compare_select_kernel, 1, (x - 100.0, z, bad), interpret, tool="initcheck")
    f = only(rep, "Read2")
    assert f.where == line_of(K.compare_select_kernel, line)
    assert f.other == ("allocated at", line_of(K.compare_select_kernel,
                                               "other = tmp.get_with_offset(TILE, 32, F32)"))


@pytest.mark.parametrize("bad", [0, 3])
def test_compare_and_select_of_written_memory_are_clean(interpret, bad):
    x = np.random.default_rng(bad).standard_normal(TILE).astype(np.float32)
    z = np.zeros(TILE, np.float32)
    rep = run(K.compare_select_kernel, 1, (x, z, bad), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z, np.maximum(x, 0))


def test_softmax_and_transpose_record_their_reads_and_writes(interpret):
    x = np.random.default_rng(1).standard_normal((8, TILE)).astype(np.float32)
    z = np.zeros_like(x)
    rep = run(K.softmax_rows_kernel, 1, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(z, e / e.sum(1, keepdims=True), rtol=1e-6)
    h = np.arange(256).astype(np.float16)
    zh = np.zeros_like(h)
    rep = run(K.transpose_kernel, 1, (h, zh, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(zh, h.reshape(16, 16).T.reshape(-1))


def test_softmax_and_transpose_of_unwritten_memory_are_read2(interpret):
    x = np.ones((8, TILE), np.float32)
    rep = run(K.softmax_rows_kernel, 1, (x, np.zeros_like(x), 1), interpret, tool="initcheck")
    f = only(rep, "Read2")
    assert f.other == ("allocated at", line_of(K.softmax_rows_kernel,
                                               "other = tmp.get_with_offset("))
    assert f.kind == f"uninitialized read of size {TILE * 4}"      # one per row
    assert f.where == line_of(K.softmax_rows_kernel, "asc.adv.softmax(")
    h = np.ones(256, np.float16)
    rep = run(K.transpose_kernel, 1, (h, np.zeros_like(h), 1), interpret, tool="initcheck")
    f = only(rep, "Read2")
    assert f.where == line_of(K.transpose_kernel, "asc.transpose(o, src)")
    assert f.kind == "uninitialized read of size 512"


# -- sync_all ------------------------------------------------------------------------------------

def test_sync_all_skipped_by_one_block_is_sync3(interpret):
    x, z = data()
    with asc.sanitize("synccheck") as san:
        with pytest.raises(rt.AclError, match="every block must call sync_all the same number"):
            K.sync_all_kernel[4](x, z, 1, interpret=interpret)
    f = only(san.report, "Sync3")
    assert f.kind == "sync_all not matched across blocks"
    assert f.where == line_of(K.sync_all_kernel, "asc.sync_all()")


def test_sync_all_called_by_every_block_is_clean(interpret):
    x, z = data()
    want = np.roll(x[:4 * TILE], -TILE)
    rep = run(K.sync_all_kernel, 4, (x, z, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(x[:4 * TILE], want)


# -- the sweep's session: faults still end their launch ------------------------------------------

def test_raise_faults_ends_the_launch_with_the_checked_mode_error(interpret):
    from ascendc.sanitize.session import Session
    x, z = data()
    with Session("memcheck", raise_faults=True) as san:
        with pytest.raises(rt.AclError, match="GM read must stay inside argument 'x'"):
            K.gm_oob_kernel[8](x, z, 8 * TILE - 16, 3, interpret=interpret)
        K.gm_oob_kernel[8](x, z, 0, -1, interpret=interpret)
    assert [(name, faulted) for name, faulted, _ in san.launches] == [
        ("gm_oob_kernel", True), ("gm_oob_kernel", False)]
    assert [f.cls for f in san.launches[0][2]] == ["Read3"]
    assert san.launches[1][2] == []
    np.testing.assert_array_equal(z, x[:8 * TILE])


# -- fixpipe to GM rows at a stride: each row recorded, not the span -------------------------------

@pytest.mark.parametrize("bad", [0, 1, 2])
def test_fixpipe_rows_of_blocks_interleaved_in_gm(interpret, bad):
    nb = 4
    rng = np.random.default_rng(bad)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 16 * nb)).astype(np.float16)
    c = np.zeros((16, 16 * nb), np.float32)
    rep = run(K.fixpipe_cols_kernel, nb, (a, b, c, bad), interpret, check_all=True,
              launch={"kernel_type": "AIC_ONLY"})
    want = a.astype(np.float32) @ b.astype(np.float32)
    if bad == 0:
        assert rep.count() == 0, rep.format()
        np.testing.assert_array_equal(c, want)
    elif bad == 2:          # atomic adds of every block into column 0: racecheck exempts them
        assert rep.count() == 0, rep.format()
        np.testing.assert_array_equal(c[:, :16], want.reshape(16, nb, 16).sum(1))
    else:
        f = only(rep, "Stomp")
        assert f.where == line_of(K.fixpipe_cols_kernel, "asc.fixpipe(cg[col:], cl, ")
        assert f.kind == "write of size 64 to GM bytes another block writes"


# -- the NPU view under the sanitizer --------------------------------------------------------------

@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_the_npu_view_records_the_same_under_the_sanitizer(mode):
    x, z = data()
    plain = asc.npu_trace(K.flags_kernel, 1, x, z, 0, interpret=mode == "interpret")
    with asc.sanitize(check_all=True) as san:
        tl = asc.npu_trace(K.flags_kernel, 1, x, z, 0, interpret=mode == "interpret")
    assert san.report.count() == 0, san.report.format()

    def recs(t):
        return [(i.name, core, pipe, start, end) for i, core, pipe, start, end in t.records]
    assert recs(tl) == recs(plain)
    assert len(recs(tl)) >= 4


@pytest.mark.parametrize("bad", [0, 1])
def test_strided_copies_of_blocks_interleaved_in_gm(interpret, bad):
    x = np.arange(8 * 32, dtype=np.float32)
    z = np.zeros_like(x)
    rep = run(K.strided_rows_kernel, 4, (x, z, bad), interpret, check_all=True)
    if bad == 0:
        assert rep.count() == 0, rep.format()
        np.testing.assert_array_equal(z, x)
    else:
        f = only(rep, "Stomp")
        assert f.where == line_of(K.strided_rows_kernel, "asc.data_copy(zg[out:], a, ")
        assert f.kind == "write of size 32 to GM bytes another block writes"
        assert f.address == "GM argument 'z' offset 0"
