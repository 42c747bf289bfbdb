"""The NPU view on recorded kernels (docs/design.md): interpret-mode recording of what each block
issues (ascendc/lang/record.py), replayed by rt.npu's pipe model through `asc.npu_trace`."""
# ruff: noqa: E702  (the kernel keeps the README's one-line statement pairs)
import numpy as np
import pytest

import ascendc as asc
import rt


@asc.jit
def add_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
               per_core: int, tile: asc.ConstExpr[int], buffer_num: asc.ConstExpr[int],
               extra: asc.ConstExpr[int]):
    """README.md "A complete kernel" with BUFFER_NUM as a parameter; `extra` > 0 adds that many
    vector multiplies per tile (a compute-heavier tile)."""
    base = asc.get_block_idx() * per_core
    xg = asc.GlobalTensor(); xg.set_global_buffer(x + base, per_core)
    yg = asc.GlobalTensor(); yg.set_global_buffer(y + base, per_core)
    zg = asc.GlobalTensor(); zg.set_global_buffer(z + base, per_core)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, buffer_num)
    qy = asc.TQue(asc.TPosition.VECIN, buffer_num)
    qz = asc.TQue(asc.TPosition.VECOUT, buffer_num)
    pipe.init_buffer(qx, buffer_num, tile * x.dtype.sizeof())
    pipe.init_buffer(qy, buffer_num, tile * y.dtype.sizeof())
    pipe.init_buffer(qz, buffer_num, tile * z.dtype.sizeof())
    for t in range(per_core // tile):
        xl = qx.alloc_tensor(x.dtype); yl = qy.alloc_tensor(y.dtype)
        asc.data_copy(xl, xg[t * tile:], tile); asc.data_copy(yl, yg[t * tile:], tile)
        qx.enque(xl); qy.enque(yl)
        xl = qx.deque(x.dtype); yl = qy.deque(y.dtype)
        zl = qz.alloc_tensor(z.dtype)
        asc.add(zl, xl, yl, tile)
        for _ in range(extra):
            asc.mul(zl, zl, yl, tile)
        qz.enque(zl); qx.free_tensor(xl); qy.free_tensor(yl)
        zl = qz.deque(z.dtype)
        asc.data_copy(zg[t * tile:], zl, tile)
        qz.free_tensor(zl)


def run_add(blocks=8, per_core=4096, tile=512, buffer_num=2, extra=0, n_cores=None):
    n = blocks * per_core
    x = np.linspace(0, 1, n, dtype=np.float32)
    y = np.linspace(1, 0, n, dtype=np.float32)
    z = np.zeros_like(x)
    tl = asc.npu_trace(add_kernel, blocks, x, y, z, per_core, tile, buffer_num, extra,
                       n_cores=n_cores)
    if not extra:
        np.testing.assert_allclose(z, x + y)      # the kernel really ran
    return tl


def test_recording_names_pipes_sizes_and_source_lines():
    tl = run_add(blocks=1, per_core=1024, tile=512)
    by_name = {}
    for ins, core, pipe, start, end in tl.records:
        by_name.setdefault(ins.name, []).append((ins, pipe))
    copies = by_name["data_copy"]
    assert sorted({(i.path, p) for i, p in copies}) == [("GM->UB", "MTE2"), ("UB->GM", "MTE3")]
    assert all(i.bytes == 512 * 4 for i, _ in copies)
    (add, pipe), _ = by_name["add"]
    assert pipe == "VECTOR" and add.repeats == 8 and add.elements == 512
    line = next(i for i, text in enumerate(open(__file__), 1) if "asc.add(zl, xl, yl" in text)
    assert add.src == f"{__file__}:{line}"
    kinds = {(i.name, p) for i, p in by_name["TQue.enque"] + by_name["TQue.deque"]}
    assert kinds == {("TQue.enque", "MTE2"), ("TQue.deque", "VECTOR"), ("TQue.enque", "VECTOR"),
                     ("TQue.deque", "MTE3")}
    assert not rt.npu_view_on()                   # off again after the trace


def test_double_buffering_overlaps_mte2_with_vector():
    one, two = run_add(buffer_num=1), run_add(buffer_num=2)
    # the README add is MTE2-bound: double buffering hides the vector and flag time only
    assert two.total_cycles < one.total_cycles
    mte2_bytes = [sum(r[0].bytes for r in t.records if r[2] == "MTE2") for t in (one, two)]
    assert mte2_bytes[0] == mte2_bytes[1]      # the same work; its HBM share differs a little
    assert one.pipe_busy("MTE2") == pytest.approx(two.pipe_busy("MTE2"), rel=1e-2)
    # with as much vector as MTE2 work per tile, one buffer serialises them, two overlap them
    one, two = run_add(buffer_num=1, extra=24), run_add(buffer_num=2, extra=24)
    assert two.total_cycles < 0.75 * one.total_cycles


def test_more_blocks_than_cores_run_in_waves():
    t = [run_add(blocks=b, per_core=1024, tile=512, n_cores=4).makespan for b in (1, 4, 5)]
    assert t[0] == t[1]                           # 4 cores: one wave, no GM contention
    assert t[2] == pytest.approx(2 * t[1], rel=0.02)


def test_same_inputs_give_identical_cycles():
    a, b = run_add(buffer_num=2), run_add(buffer_num=2)
    assert a.total_cycles == b.total_cycles
    assert [r[1:] for r in a.records] == [r[1:] for r in b.records]


@asc.jit
def scalar_loop_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """Doubles n floats element by element on the scalar unit (GetValue / SetValue in a loop):
    what a kernel looks like before its loop is vectorised."""
    xg = asc.GlobalTensor(); xg.set_global_buffer(x, n)
    zg = asc.GlobalTensor(); zg.set_global_buffer(z, n)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, n * 4)
    pipe.init_buffer(qo, 1, n * 4)
    xl = qi.alloc_tensor(x.dtype)
    asc.data_copy(xl, xg, n)
    qi.enque(xl)
    xl = qi.deque(x.dtype)
    asc.set_flag(asc.HardEvent.MTE2_S, 0)       # the VECIN hand-off orders V, not the scalar unit
    asc.wait_flag(asc.HardEvent.MTE2_S, 0)
    zl = qo.alloc_tensor(z.dtype)
    for i in range(n):
        zl.set_value(i, xl.get_value(i) * 2)
    asc.set_flag(asc.HardEvent.S_MTE3, 0)       # nor does the VECOUT one order the scalar unit
    asc.wait_flag(asc.HardEvent.S_MTE3, 0)      # before MTE3's copy out
    qo.enque(zl)
    qi.free_tensor(xl)
    zl = qo.deque(z.dtype)
    asc.data_copy(zg, zl, n)
    qo.free_tensor(zl)


@pytest.mark.parametrize("interpret", [True, False], ids=["interpret", "compiled"])
def test_a_scalar_loop_is_scalar_bound(interpret):
    n = 2048
    x = np.arange(n, dtype=np.float32)
    z = np.zeros_like(x)
    tl = asc.npu_trace(scalar_loop_kernel, 1, x, z, n, interpret=interpret)
    np.testing.assert_array_equal(z, 2 * x)
    busy = {p: tl.pipe_busy(p) for p in ("SCALAR", "VECTOR", "MTE2", "MTE3")}
    assert max(busy, key=busy.get) == "SCALAR"
    assert busy["SCALAR"] > 0.8 * tl.makespan        # the scalar unit is the bottleneck
    # 2 scalar instructions per element, each at least the model's issue cost
    assert busy["SCALAR"] >= 2 * n * rt.npu.pipe_model(tl.soc).scalar_issue_cycles


def test_npu_trace_compiled_matches_interpret_exactly():
    n = 8 * 4096
    args = lambda: (np.linspace(0, 1, n, dtype=np.float32),   # noqa: E731
                    np.linspace(1, 0, n, dtype=np.float32), np.zeros(n, np.float32),
                    4096, 512, 2, 0)
    a = asc.npu_trace(add_kernel, 8, *args(), interpret=True)
    b = asc.npu_trace(add_kernel, 8, *args(), interpret=False)
    assert a.total_cycles == b.total_cycles
    assert [(r[0].name, r[0].src, r[1:]) for r in a.records] == \
        [(r[0].name, r[0].src, r[1:]) for r in b.records]
