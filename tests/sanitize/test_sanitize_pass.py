"""The compiled passes of the sanitizer on hand-made trace rows: a block's pass (scan.block_pass:
ranges spanning racecheck's 512-byte pages, pending ranges of the same bytes replaced, partial
overlaps, the flush of more pending accesses than it keeps) and the launch's cross-core check
(gmscan.sweep: strided GM blocks that interleave or touch, an AIC -> AIV hand-over ordered or
not by a cross-core flag). Each case has its twin with the ordering added, which is clean."""
import numpy as np

from ascendc.lang import trace as T
from ascendc.lang.enums import HardEvent, PipeID
from ascendc.sanitize import gmrace
from ascendc.sanitize.analysis import BlockPass
from ascendc.sanitize.report import TOOLS

ALL = frozenset(TOOLS)
LEVELS = [("UB", 0, 8192), ("L1", 8192, 8192), ("L0C", 16384, 4096)]
UB, L0C, GM = 0, 4, -1
LINES = [("", 0)] + [("k.py", i) for i in range(1, 100)]
G0 = 1 << 30                    # a GM address


class Rows:
    def __init__(self):
        self.rows = []

    def _row(self, **cols):
        r = [0] * T.NCOL
        for k, v in cols.items():
            r[getattr(T, "C_" + k)] = v
        self.rows.append(r)
        return self

    def op(self, name, line, src=0, dst=0, **cols):
        return self._row(KIND=T.K_OP, OP=T.op(name), SRC_LV=src, DST_LV=dst, LINE=line, **cols)

    def local(self, lo, nbytes, write, line, fresh=-1):
        return self._row(KIND=T.K_ACCESS, DST_LV=0, A=lo, BYTES=nbytes, ID=int(write), M=fresh,
                         LINE=line)

    def gm(self, addr, nbytes, write, line, blk=0, step=0):
        return self._row(KIND=T.K_ACCESS, DST_LV=-1, A=addr, BYTES=nbytes, ID=int(write),
                         ELEMS=blk, REPEATS=step, LINE=line)

    def copy_in(self, lo, nbytes, line):          # MTE2: GM -> UB
        return self.op("data_copy", line, GM, UB).local(lo, nbytes, True, line)

    def vector_read(self, lo, nbytes, line):
        return self.op("adds", line).local(lo, nbytes, False, line)

    def flag(self, event, line, ident=0):
        self._row(KIND=T.K_SET, A=int(event), ID=ident, LINE=line)
        return self._row(KIND=T.K_WAIT, A=int(event), ID=ident, LINE=line)

    def barrier(self, pipe, line):
        return self._row(KIND=T.K_BARRIER, A=int(pipe), LINE=line)

    def array(self):
        return np.array(self.rows, np.int64).reshape(-1, T.NCOL)


def run(rows, tools=ALL):
    return BlockPass(tools, "k", "aiv(0)", LINES, LEVELS).run(rows.array())


def found(bp):
    return [(f.cls, f.kind, f.where[1], f.address, f.other[1][1] if f.other else None)
            for f in bp.findings]


def copies(ordered):
    """Three MTE2 copies (the second over the first's bytes, the third over part of them), then
    vector reads across 512-byte pages; `ordered`: barriers and the MTE2 -> V flag between."""
    r = Rows().copy_in(0, 1024, 10)
    if ordered:
        r.barrier(PipeID.PIPE_MTE2, 90)
    r.copy_in(0, 1024, 11)
    if ordered:
        r.barrier(PipeID.PIPE_MTE2, 90)
    r.copy_in(600, 100, 12)
    if ordered:
        r.flag(HardEvent.MTE2_V, 91)
    return r.vector_read(0, 1024, 20).vector_read(650, 50, 21)


def test_pending_ranges_of_the_same_bytes_keep_the_latest_line_across_pages():
    assert found(run(copies(False))) == [
        ("Sync1", "potential WAW hazard within MTE2", 11, "UB offset 0", 10),
        ("Sync1", "potential WAW hazard within MTE2", 12, "UB offset 600", 11),
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 20, "UB offset 0", 11),
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 21, "UB offset 650", 12)]
    assert found(run(copies(True))) == []


def test_overlapping_pending_copies_are_applied_in_issue_order():
    # a flag MTE3 waits for shows each copy done (no scan: all stay pending); nothing orders
    # the vector reads after them
    def kernel(last):
        r = Rows().copy_in(0, 1024, 10).flag(HardEvent.MTE2_MTE3, 90)
        r.copy_in(512, 88, 11).flag(HardEvent.MTE2_MTE3, 90)
        if last:
            r.copy_in(0, 1024, 12)      # the same bytes as line 10's: that one is replaced
        return r.vector_read(0, 1024, 20).vector_read(512, 88, 21)
    assert found(run(kernel(False))) == [
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 20, "UB offset 0", 10),
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 21, "UB offset 512", 11)]
    assert found(run(kernel(True))) == [
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 20, "UB offset 0", 12),
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 21, "UB offset 512", 12)]


def test_a_read_found_after_thousands_of_pending_accesses_were_flushed():
    def kernel(ordered):
        r = Rows().copy_in(0, 64, 10).flag(HardEvent.MTE2_V, 11).vector_read(0, 64, 20)
        for i in range(5000):           # more than the pass keeps pending: flushed on the way
            r.vector_read(1024 + 64 * (i % 3), 600, 21)
        if ordered:
            r.flag(HardEvent.V_MTE2, 22)
        return r.copy_in(32, 64, 30)
    assert found(run(kernel(False))) == [
        ("Write3", "potential WAR hazard between VECTOR and MTE2", 30, "UB offset 32", 20)]
    assert found(run(kernel(True))) == []


def test_a_partial_overlap_is_reported_at_its_first_shared_byte():
    r = Rows().copy_in(1000, 100, 10).vector_read(1090, 40, 20)     # shares [1090, 1100)
    assert found(run(r)) == [
        ("Sync2", "potential RAW hazard between MTE2 and VECTOR", 20, "UB offset 1090", 10)]
    r = Rows().copy_in(1000, 100, 10).vector_read(1100, 40, 20)     # touches, shares nothing
    assert found(run(r)) == []


def test_initcheck_and_memcheck_on_the_same_rows():
    r = Rows()._row(KIND=T.K_REGION, A=512, BYTES=512, ID=T.REGION_ALLOC, LINE=5)
    r.copy_in(512, 256, 10).flag(HardEvent.MTE2_V, 11)
    r.vector_read(512, 512, 20).local(512, 512, False, 20, fresh=288)   # the unwritten half
    r._row(KIND=T.K_REGION, A=512, BYTES=512, ID=T.REGION_FREE, LINE=6)
    r.vector_read(512, 64, 21)
    assert found(run(r, frozenset(("memcheck", "initcheck")))) == [
        ("Read2", "uninitialized read of size 512", 20,
         "UB offset 800 (the access starts at UB offset 512)", 5),
        ("Read1", "read of size 64 through a freed tensor", 21, "UB offset 512", 6)]


def test_set_flags_left_pending_and_set_twice():
    r = Rows()._row(KIND=T.K_SET, A=int(HardEvent.MTE2_V), ID=1, LINE=30)
    r._row(KIND=T.K_SET, A=int(HardEvent.MTE2_V), ID=1, LINE=31)
    r._row(KIND=T.K_WAIT, A=int(HardEvent.MTE2_V), ID=1, LINE=32)
    assert found(run(r, frozenset(("synccheck",)))) == [
        ("Sync4", "event id set twice", 31, "", 30),
        ("Sync3", "set_flag without its wait_flag", 31, "", None)]


# -- across the instances of a MIX launch ----------------------------------------------------

def aic(ordered_flag=True, stride=True):
    """The AIC writes 64-byte rows every 128 bytes of GM (fixpipe), then sets flag 1 (mode 2)."""
    r = Rows().op("fixpipe", 40, L0C, GM)
    r.gm(G0, 1024, True, 40, *((64, 128) if stride else (0, 0)))
    if ordered_flag:
        r.op("cross_core_set_flag", 41, A=1, B=2, ID=int(PipeID.PIPE_FIX))
    return r


def aiv(read_at, before_wait, ordered_flag=True):
    r = Rows()
    if before_wait:
        r.copy_in(0, 32, 50).gm(G0 + read_at, 32, False, 50)
    if ordered_flag:
        r.op("cross_core_wait_flag", 51, A=1, B=2, ID=int(PipeID.PIPE_MTE2))
    return r.copy_in(64, 32, 52).gm(G0 + read_at, 32, False, 52)


def cross(a, v):
    tracks = []
    for label, role, rows in (("aic(0)", "AIC", a), ("aiv(0)", "AIV", v)):
        bp = run(rows)
        tracks.append(gmrace.Track(label, role, 0, bp.gm, bp.points))
    return [(f.cls, f.block, f.where[1], f.address, f.other) for f in
            gmrace.check("k", tracks, lambda i: ("k.py", i), lambda a: ("ws", a - G0))]


def test_a_read_before_the_wait_is_a_race_and_after_it_is_ordered():
    race = ("GMRace", "aiv(0)", 50, "GM argument 'ws' offset 0",
            ("aic(0) (FIXPIPE) wrote at", ("k.py", 40)))
    assert cross(aic(), aiv(0, before_wait=True)) == [race]
    assert cross(aic(), aiv(0, before_wait=False)) == []
    # with no flag at all, the read after where the wait was is a race too
    assert cross(aic(ordered_flag=False), aiv(0, False, ordered_flag=False)) == [
        ("GMRace", "aiv(0)", 52, "GM argument 'ws' offset 0",
         ("aic(0) (FIXPIPE) wrote at", ("k.py", 40)))]


def test_strided_rows_that_interleave_do_not_touch_and_a_span_does():
    # the gap between two 64-byte rows is not written: no race, flag or not
    assert cross(aic(ordered_flag=False), aiv(64, True, ordered_flag=False)) == []
    assert cross(aic(ordered_flag=False, stride=False), aiv(64, True, ordered_flag=False)) == [
        ("GMRace", "aiv(0)", 50, "GM argument 'ws' offset 64",
         ("aic(0) (FIXPIPE) wrote at", ("k.py", 40)))]
