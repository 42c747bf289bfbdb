"""racecheck judges the scalar unit's element accesses (`get_value` / `set_value` of a local
tensor, the S pipe) like a pipe's: each hazard between the scalar unit and another pipe in a
minimal kernel (found, with its lines) next to the same kernel with the flag that orders the two
(clean under every tool, the result checked), in both modes; and the AIPP load read by the
scalar unit before anything orders it after the load."""
import inspect

import numpy as np
import pytest

import ascendc as asc

TILE = 64
E = asc.HardEvent

# cases: which two accesses, the second by (or of) the scalar unit
MTE2_THEN_S_READ, V_THEN_S_READ, S_WRITE_THEN_V, S_WRITE_THEN_MTE3, S_READ_THEN_MTE2, \
    V_READ_THEN_S_WRITE, MTE2_THEN_S_WRITE = range(7)


@asc.jit
def scalar_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, case: int, bad: int):
    """One of the cases above; `bad` leaves out the flag that orders the scalar access."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 2 * TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(tmp, TILE * 4)
    a = buf.get(asc.float32)
    b = tmp.get(asc.float32)
    asc.data_copy(a, xg, TILE)
    if case == MTE2_THEN_S_READ:
        if bad == 0:
            asc.set_flag(E.MTE2_S, 0)
            asc.wait_flag(E.MTE2_S, 0)
        v = a.get_value(3)                          # reads the copy
        asc.duplicate(b, v, TILE)
        asc.set_flag(E.V_MTE3, 0)
        asc.wait_flag(E.V_MTE3, 0)
        asc.data_copy(zg, b, TILE)
    elif case == V_THEN_S_READ:
        asc.set_flag(E.MTE2_V, 0)
        asc.wait_flag(E.MTE2_V, 0)
        asc.adds(a, a, 1.0, TILE)
        if bad == 0:
            asc.set_flag(E.V_S, 0)
            asc.wait_flag(E.V_S, 0)
        v = a.get_value(3)                          # reads the vector op's result
        asc.duplicate(b, v, TILE)
        asc.set_flag(E.V_MTE3, 0)
        asc.wait_flag(E.V_MTE3, 0)
        asc.data_copy(zg, b, TILE)
    elif case == S_WRITE_THEN_V or case == S_WRITE_THEN_MTE3:
        asc.set_flag(E.MTE2_S, 0)
        asc.wait_flag(E.MTE2_S, 0)
        a.set_value(3, -7.0)                        # writes over the copy
        if case == S_WRITE_THEN_V:
            asc.set_flag(E.MTE2_V, 0)
            asc.wait_flag(E.MTE2_V, 0)
            if bad == 0:
                asc.set_flag(E.S_V, 0)
                asc.wait_flag(E.S_V, 0)
            asc.adds(b, a, 1.0, TILE)               # reads the element
            asc.set_flag(E.V_MTE3, 0)
            asc.wait_flag(E.V_MTE3, 0)
            asc.data_copy(zg, b, TILE)
        else:
            asc.set_flag(E.MTE2_MTE3, 0)
            asc.wait_flag(E.MTE2_MTE3, 0)
            if bad == 0:
                asc.set_flag(E.S_MTE3, 0)
                asc.wait_flag(E.S_MTE3, 0)
            asc.data_copy(zg, a, TILE)              # copies the element out
    elif case == S_READ_THEN_MTE2:                  # no hazard: a scalar read is done at once
        asc.set_flag(E.MTE2_S, 0)
        asc.wait_flag(E.MTE2_S, 0)
        v = a.get_value(3)                          # reads the first copy
        if bad == 0:
            asc.set_flag(E.S_MTE2, 0)
            asc.wait_flag(E.S_MTE2, 0)
        asc.data_copy(a, xg[TILE:], TILE)           # copies in over it
        asc.set_flag(E.MTE2_V, 0)
        asc.wait_flag(E.MTE2_V, 0)
        asc.adds(b, a, v, TILE)
        asc.set_flag(E.V_MTE3, 0)
        asc.wait_flag(E.V_MTE3, 0)
        asc.data_copy(zg, b, TILE)
    elif case == V_READ_THEN_S_WRITE:
        asc.set_flag(E.MTE2_V, 0)
        asc.wait_flag(E.MTE2_V, 0)
        asc.set_flag(E.MTE2_S, 0)
        asc.wait_flag(E.MTE2_S, 0)
        asc.adds(b, a, 1.0, TILE)                   # reads the copy
        if bad == 0:
            asc.set_flag(E.V_S, 0)
            asc.wait_flag(E.V_S, 0)
        a.set_value(3, -7.0)                        # writes over an element it reads
        asc.set_flag(E.V_MTE3, 0)
        asc.wait_flag(E.V_MTE3, 0)
        asc.data_copy(zg, b, TILE)
    else:                                           # MTE2_THEN_S_WRITE
        if bad == 0:
            asc.set_flag(E.MTE2_S, 0)
            asc.wait_flag(E.MTE2_S, 0)
        a.set_value(3, -7.0)                        # writes over the copy in flight
        asc.set_flag(E.MTE2_MTE3, 0)
        asc.wait_flag(E.MTE2_MTE3, 0)
        asc.set_flag(E.S_MTE3, 0)
        asc.wait_flag(E.S_MTE3, 0)
        asc.data_copy(zg, a, TILE)


def line_of(kernel, text):
    """(file, line) of the kernel source line containing `text` (its first)."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return (inspect.getsourcefile(kernel.fn), [first + i for i, s in enumerate(lines)
                                               if text in s][0])


def run(kernel, args, interpret, **kw):
    with asc.sanitize(**kw) as san:
        kernel[1](*args, interpret=interpret)
    return san.report


def expected(case, x):
    """z of the ordered kernel."""
    z = x[:TILE].copy()
    if case == MTE2_THEN_S_READ:
        z[:] = x[3]
    elif case == V_THEN_S_READ:
        z[:] = x[3] + 1
    elif case == S_WRITE_THEN_V:
        z[3] = -7.0
        z += 1
    elif case in (S_WRITE_THEN_MTE3, MTE2_THEN_S_WRITE):
        z[3] = -7.0
    elif case == S_READ_THEN_MTE2:
        z = x[TILE:] + x[3]
    else:
        z += 1
    return z


# (case, class, kind, the reported line, the other side's line)
HAZARDS = [
    (MTE2_THEN_S_READ, "Sync2", "potential RAW hazard between MTE2 and SCALAR",
     "v = a.get_value(3)                          # reads the copy",
     ("MTE2 wrote at", "asc.data_copy(a, xg, TILE)")),
    (V_THEN_S_READ, "Sync2", "potential RAW hazard between VECTOR and SCALAR",
     "v = a.get_value(3)                          # reads the vector",
     ("VECTOR wrote at", "asc.adds(a, a, 1.0, TILE)")),
    (S_WRITE_THEN_V, "Sync2", "potential RAW hazard between SCALAR and VECTOR",
     "asc.adds(b, a, 1.0, TILE)               # reads the element",
     ("SCALAR wrote at", "a.set_value(3, -7.0)                        # writes over the copy")),
    (S_WRITE_THEN_MTE3, "Sync2", "potential RAW hazard between SCALAR and MTE3",
     "asc.data_copy(zg, a, TILE)              # copies the element out",
     ("SCALAR wrote at", "a.set_value(3, -7.0)                        # writes over the copy")),
    (V_READ_THEN_S_WRITE, "Write3", "potential WAR hazard between VECTOR and SCALAR",
     "a.set_value(3, -7.0)                        # writes over an element it reads",
     ("VECTOR read at", "asc.adds(b, a, 1.0, TILE)                   # reads the copy")),
    (MTE2_THEN_S_WRITE, "Sync2", "potential WAW hazard between MTE2 and SCALAR",
     "a.set_value(3, -7.0)                        # writes over the copy in flight",
     ("MTE2 wrote at", "asc.data_copy(a, xg, TILE)")),
]


@pytest.mark.parametrize("case, cls, kind, line, other", HAZARDS)
def test_scalar_access_unordered_is_reported(interpret, case, cls, kind, line, other):
    x = np.arange(2 * TILE, dtype=np.float32) + 0.5
    z = np.zeros(TILE, np.float32)
    rep = run(scalar_kernel, (x, z, case, 1), interpret, tool="racecheck")
    assert [f.cls for f in rep.findings] == [cls], rep.format()
    f = rep.findings[0]
    assert f.kind == kind
    assert f.where == line_of(scalar_kernel, line)
    assert f.other == (other[0], line_of(scalar_kernel, other[1]))
    assert f.address.startswith("UB offset 12")
    assert f"(Error{cls})" in rep.format()


@pytest.mark.parametrize("case", [h[0] for h in HAZARDS] + [S_READ_THEN_MTE2])
def test_scalar_access_ordered_by_its_flag_is_clean(interpret, case):
    x = np.arange(2 * TILE, dtype=np.float32) + 0.5
    z = np.zeros(TILE, np.float32)
    rep = run(scalar_kernel, (x, z, case, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z, expected(case, x))


def test_a_copy_over_an_element_get_value_read_needs_no_flag(interpret):
    """A get_value is done before the scalar unit issues anything after it (the value is in a
    register): a copy in over the element it read, with no S_MTE2, is no WAR hazard."""
    x = np.arange(2 * TILE, dtype=np.float32) + 0.5
    z = np.zeros(TILE, np.float32)
    rep = run(scalar_kernel, (x, z, S_READ_THEN_MTE2, 1), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    np.testing.assert_array_equal(z, expected(S_READ_THEN_MTE2, x))


# -- the AIPP load (GM -> L1 by MTE2) read by the scalar unit ----------------------------------

PIX_W, PIX_H = 4, 2                 # the image: 2 rows of 4 RGB888 pixels
L1_BYTES = PIX_W * PIX_H * 32       # int8 output: 32 channels (C0) a pixel


@asc.jit
def aipp_read_kernel(img: asc.GlobalAddress, z: asc.GlobalAddress, n: int, bad: int):
    """Load the image into an A1 tensor through AIPP and copy its first n bytes to z element by
    element; `bad` reads it without the hand-off (queue step, then MTE2 -> S)."""
    ig = asc.GlobalTensor()
    ig.set_global_buffer(img)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q1 = asc.TQue(asc.TPosition.A1, 1)
    pipe.init_buffer(que=q1, num=1, len=L1_BYTES)
    asc.set_aipp_functions(ig, asc.AippInputFormat.RGB888_U8, asc.AippParams(dtype=asc.int8))
    params = asc.LoadImageToLocalParams(
        horiz_size=PIX_W, vert_size=PIX_H, horiz_start_pos=0, vert_start_pos=0,
        src_horiz_size=PIX_W, top_pad_size=0, bot_pad_size=0, left_pad_size=0,
        right_pad_size=0)
    t = q1.alloc_tensor(asc.int8)
    asc.load_image_to_local(t, params)
    if bad == 0:
        q1.enque(t)
        t = q1.deque(asc.int8)
        asc.set_flag(E.MTE2_S, 0)
        asc.wait_flag(E.MTE2_S, 0)
    for i in range(n):
        zg.set_value(i, t.get_value(i))
    q1.free_tensor(t)


def test_aipp_load_read_before_its_hand_off_is_sync2(interpret):
    img = (np.arange(PIX_W * PIX_H * 3) * 5 % 120).astype(np.uint8)
    z = np.zeros(64, np.int8)
    rep = run(aipp_read_kernel, (img, z, 64, 1), interpret, tool="racecheck")
    # one finding per element read (each its own address), all at the one line
    assert [f.cls for f in rep.findings] == ["Sync2"] * 64, rep.format()
    assert [f.address for f in rep.findings] == [f"L1 offset {i}" for i in range(64)]
    f = rep.findings[0]
    assert f.kind == "potential RAW hazard between MTE2 and SCALAR"
    assert f.where == line_of(aipp_read_kernel, "zg.set_value(i, t.get_value(i))")
    assert f.other == ("MTE2 wrote at",
                       line_of(aipp_read_kernel, "asc.load_image_to_local(t, params)"))
    assert all(g.where == f.where and g.kind == f.kind for g in rep.findings)


def test_aipp_load_read_after_its_hand_off_is_clean(interpret):
    img = (np.arange(PIX_W * PIX_H * 3) * 5 % 120).astype(np.uint8)
    z = np.zeros(64, np.int8)
    rep = run(aipp_read_kernel, (img, z, 64, 0), interpret, check_all=True)
    assert rep.count() == 0, rep.format()
    # pixel 0 and 1 (32 channels each: R, G, B, then the channel padding value 0)
    px = img.reshape(PIX_H * PIX_W, 3)
    np.testing.assert_array_equal(z[0:3], px[0].astype(np.int8))
    np.testing.assert_array_equal(z[32:35], px[1].astype(np.int8))
    assert not z[3:32].any() and not z[35:].any()


# -- the pass on hand-made rows: what orders the scalar unit's accesses --------------------------

def _rows(*spec):
    """Rows of ("op", name, src level, dst level, line) / ("acc", lo, nbytes, write, line) /
    ("bar", PipeID) / ("flag", HardEvent)."""
    from ascendc.lang import trace as T
    out = []
    for s in spec:
        r = [0] * T.NCOL
        if s[0] == "op":
            r[T.C_KIND], r[T.C_OP], r[T.C_SRC_LV], r[T.C_DST_LV], r[T.C_LINE] = (
                T.K_OP, T.op(s[1]), s[2], s[3], s[4])
        elif s[0] == "acc":
            r[T.C_KIND], r[T.C_A], r[T.C_BYTES], r[T.C_ID], r[T.C_M], r[T.C_LINE] = (
                T.K_ACCESS, s[1], s[2], int(s[3]), -1, s[4])
        elif s[0] == "bar":
            r[T.C_KIND], r[T.C_A] = T.K_BARRIER, int(s[1])
        else:
            r[T.C_KIND], r[T.C_A] = T.K_SET, int(s[1])
            out.append(r)
            r = list(r)
            r[T.C_KIND] = T.K_WAIT
        out.append(r)
    return np.array(out, np.int64).reshape(-1, T.NCOL)


def _pass(rows):
    from ascendc.sanitize.analysis import BlockPass
    lines = [("", 0)] + [("k.py", i) for i in range(1, 20)]
    bp = BlockPass({"racecheck"}, "k", "aiv(0)", lines, [("UB", 0, 4096)]).run(rows)
    return [(f.cls, f.kind, f.where[1]) for f in bp.findings]


@pytest.mark.parametrize("between, found", [
    ((), [("Sync2", "potential RAW hazard between SCALAR and VECTOR", 3)]),
    ((("bar", asc.PipeID.PIPE_V),), [("Sync2", "potential RAW hazard between SCALAR and "
                                               "VECTOR", 3)]),     # a barrier of V only
    ((("bar", asc.PipeID.PIPE_ALL),), []),
    ((("flag", E.S_V),), []),
    ((("flag", E.S_MTE3),), [("Sync2", "potential RAW hazard between SCALAR and VECTOR", 3)]),
])
def test_what_orders_a_vector_read_after_set_value(between, found):
    rows = _rows(("op", "LocalTensor.set_value", 0, 0, 1), ("acc", 64, 4, True, 1), *between,
                 ("op", "adds", 0, 0, 3), ("acc", 0, 256, False, 3))
    assert _pass(rows) == found


def test_scalar_ops_other_than_element_accesses_are_not_judged():
    """An access row after another scalar op (a system value) is not the scalar unit's."""
    rows = _rows(("op", "data_copy", -1, 0, 1), ("acc", 0, 256, True, 1),
                 ("op", "get_block_idx", 0, 0, 2), ("acc", 0, 4, False, 2),
                 ("op", "LocalTensor.get_value", 0, 0, 3), ("acc", 0, 4, False, 3))
    assert _pass(rows) == [("Sync2", "potential RAW hazard between MTE2 and SCALAR", 3)]
