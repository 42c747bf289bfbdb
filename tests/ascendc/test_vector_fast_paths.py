"""The contiguous fast paths of the vector primitives give, bit for bit, what the lane-by-lane
walk of Ascend C's repeat semantics gives: binary repeat forms with a prefix mask and block
stride 1 (in place, apart, overlapping, src1 broadcast per block as brcb leaves it, or not),
value-only whole_reduce_max/min (NaNs, +0/-0 ties, infinities) and whole_reduce_sum four
repeats at a time (ragged repeat counts, overlapping dst); and a kernel using them gives numpy's
answer in both modes."""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ascendc as asc
from ascendc.lang.params import BinaryRepeatParams
from ascendc.lang.prims import reduce as R
from ascendc.lang.prims import vector as V

from prim_core import Arena

F32, F16, I32, I16 = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int16))


def lane(r, j, pb, blk, rep):
    return r * rep * pb + (j // pb) * blk * pb + j % pb


def walk(buf, repeat, n_on, pb, strides, fn):
    """Lane-by-lane reference on the one flat array holding every operand: strides is
    ((offset, blk, rep) of dst, of src0, of src1)."""
    (doff, dblk, drep), (aoff, ablk, arep), (boff, bblk, brep) = strides
    for r in range(repeat):
        for j in range(n_on):
            x = buf[aoff + lane(r, j, pb, ablk, arep)]
            y = buf[boff + lane(r, j, pb, bblk, brep)]
            buf[doff + lane(r, j, pb, dblk, drep)] = fn(x, y)


OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.fmax}


def op_ref(name, dt):
    if name == "max":      # the primitive's max: x if (x > y or x != x) else y
        return lambda x, y: x if (x > y or x != x) else y
    if name == "div" and dt.kind == "i":
        return lambda x, y: dt.type(0) if y == 0 else dt.type(int(x / y))
    if name == "div":
        return lambda x, y: np.divide(x, y, dtype=dt)
    f = OPS[name]
    return lambda x, y: f(x, y, dtype=dt) if dt.kind == "f" else dt.type(f(x, y))


def fill(n, dt, seed):
    rng = np.random.default_rng(seed)
    if dt.kind == "i":
        return rng.integers(-50, 50, n).astype(dt)
    x = rng.standard_normal(n).astype(dt)
    x[::37] = 0.0
    x[5::41] = -0.0
    return x


def run_binary(dt, name, n_on, repeat, p, offs, seed=0, prepare=None):
    A = Arena()
    store, buf = A.new(8192, dt, fill(8192, dt, seed))
    if prepare:
        prepare(buf)
    ref = buf.copy()
    d0, a0, b0 = offs
    getattr(V, name + "_rep")(A.ctx, store[d0:], store[a0:], store[b0:], n_on, repeat,
                              BinaryRepeatParams(*p), True)
    pb = 32 // dt.itemsize
    with np.errstate(all="ignore"):
        walk(ref, repeat, n_on, pb, ((d0, p[0], p[3]), (a0, p[1], p[4]), (b0, p[2], p[5])),
             op_ref(name, dt))
    np.testing.assert_array_equal(buf.view(np.uint8), ref.view(np.uint8))


CASES = [   # (dst_blk, src0_blk, src1_blk, dst_rep, src0_rep, src1_rep), (dst, src0, src1 offsets)
    ((1, 1, 1, 8, 8, 8), (0, 0, 4096)),            # in place on src0, dense rows
    ((1, 1, 1, 32, 32, 8), (0, 0, 4096)),          # in place, rows of a wider tile (the folds)
    ((1, 1, 1, 8, 32, 32), (4096, 0, 64)),         # apart: dst <- two strided sources
    ((1, 1, 1, 8, 8, 8), (8, 0, 4096)),            # dst one block after src0: overlapping
    ((1, 1, 1, 8, 8, 8), (0, 4096, 8)),            # dst overlaps src1 one block later
    ((1, 1, 1, 8, 8, 8), (2048, 0, 2048)),         # dst is src1
    ((1, 1, 0, 32, 32, 1), (0, 0, 6144)),          # src1 broadcast per block, in place
    ((1, 1, 0, 8, 32, 1), (4096, 0, 6144)),        # src1 broadcast per block, apart
    ((1, 1, 0, 8, 8, 1), (0, 0, 16)),              # src1 broadcast inside dst's span: walk
]


@pytest.mark.parametrize("dt", [F32, I32, I16, F16], ids=str)
@pytest.mark.parametrize("n_on", [1, 9, 64, 128])
@pytest.mark.parametrize("p,offs", CASES)
def test_binary_rep_runs_match_lane_walk(dt, n_on, p, offs):
    if n_on > 256 // dt.itemsize:
        pytest.skip("more lanes than a repeat has")
    for name in ("add", "sub", "max") if dt.kind == "f" else ("add", "mul"):
        run_binary(dt, name, n_on, 5, p, offs, seed=n_on)


def brcb_like(off, rows, pb):
    """Fill buf[off:] as brcb leaves it: each row's value in a 32 B block."""
    def prepare(buf):
        for r in range(rows):
            buf[off + r * pb:off + (r + 1) * pb] = buf.dtype.type(r - 2.5)
    return prepare


@pytest.mark.parametrize("odd", [None, 7.0, -0.0, np.nan], ids=str)
@pytest.mark.parametrize("name", ["sub", "mul", "max", "div"])
def test_block_broadcast_uniform_and_not(odd, name):
    """brcb's blocks take the scalar run; a block whose lanes differ (by value, by the sign of
    zero, by a NaN) is walked; the walk's answer either way (div: by zero too)."""
    def prepare(buf):
        brcb_like(6144, 6, 8)(buf)
        buf[6144 + 4 * 8:6144 + 5 * 8] = 0.0        # row 4 divides by +0
        if odd is not None:                          # -0.0 among row 4's +0.0, others in row 2
            buf[6144 + (4 if odd == 0 else 2) * 8 + 3] = odd
    run_binary(F32, name, 64, 6, (1, 1, 0, 32, 32, 1), (0, 0, 6144), prepare=prepare)
    run_binary(F32, name, 40, 6, (1, 1, 0, 8, 32, 1), (4096, 0, 6144), prepare=prepare)


def test_int_division_by_zero_in_runs():
    def prepare(buf):
        buf[4096:4096 + 64:3] = 0
    run_binary(I32, "div", 64, 3, (1, 1, 1, 8, 8, 0), (2048, 0, 4096), prepare=prepare)


def whole_walk_minmax(row, is_max):
    best = row[0]
    for v in row:
        if np.isnan(v):
            return v
        if (v > best) if is_max else (v < best):
            best = v
    return best


@pytest.mark.parametrize("dt", [F32, I32, I16, F16], ids=str)
@pytest.mark.parametrize("op", ["max", "min"])
def test_whole_reduce_value_only_runs(dt, op):
    lanes = 256 // dt.itemsize
    rows, n_on, stride = 9, lanes - 5, 2 * lanes      # rows of a tile twice a repeat wide
    A = Arena()
    x, xl = A.new(rows * stride, dt, fill(rows * stride, dt, 3))
    if dt.kind == "f":
        xl[0 * stride:0 * stride + n_on] = 0.0
        xl[0 * stride + 4] = -0.0                       # row 0: +0/-0 ties, first wins
        xl[1 * stride:1 * stride + n_on] = -0.0
        xl[1 * stride + 6] = 0.0
        xl[2 * stride + 3] = np.nan                     # row 2: two NaNs, the first wins
        xl[2 * stride + 9] = -np.nan
        xl[3 * stride + 1] = np.inf                     # row 3: infinities
        xl[3 * stride + 2] = -np.inf
        xl[4 * stride + n_on] = np.nan                  # row 4: NaN in a masked-off lane
    d, dl = A.new(rows, dt, 0)
    pb = 32 // dt.itemsize
    getattr(R, "whole_reduce_" + op)(A.ctx, d, x, n_on, rows, 1, 1, stride // pb,
                                     R.ORDER_ONLY_VALUE, True)
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[dt.itemsize]
    for r in range(rows):
        want = whole_walk_minmax(xl[r * stride:r * stride + n_on], op == "max")
        assert dl[r:r + 1].view(bits)[0] == np.array([want], dt).view(bits)[0], (r, dl[r], want)


@pytest.mark.parametrize("rows", [1, 4, 7, 13])
@pytest.mark.parametrize("n_on", [5, 64])
def test_whole_reduce_sum_four_at_a_time(rows, n_on):
    A = Arena()
    rng = np.random.default_rng(rows)
    x, xl = A.new(rows * 128, F32, (rng.standard_normal(rows * 128) * 1e4).astype(np.float32))
    d, dl = A.new(32, F32, 0)
    R.whole_reduce_sum(A.ctx, d, x, n_on, rows, 2, 1, 16, True)
    want = [np.float32(sum(float(v) for v in xl[r * 128:r * 128 + n_on])) for r in range(rows)]
    np.testing.assert_array_equal(dl[0:2 * rows:2], want)


def test_whole_reduce_sum_dst_inside_src_keeps_repeat_order():
    """dst overlapping src: each repeat reads what the previous repeats wrote, as walked."""
    A = Arena()
    x, xl = A.new(9 * 64, F32, np.arange(9 * 64, dtype=np.float32) % 7)
    ref = xl.copy()
    R.whole_reduce_sum(A.ctx, x[64:], x, 64, 8, 64, 1, 8, True)
    for r in range(8):
        ref[64 + r * 64] = np.float32(sum(float(v) for v in ref[r * 64:(r + 1) * 64]))
    np.testing.assert_array_equal(xl, ref)


@asc.jit
def _softmax_rows_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, rows: asc.ConstExpr[int],
                         cols: asc.ConstExpr[int]):
    """Row softmax of a rows x cols tile with the repeat forms FlashAttention uses: folds of
    64-lane chunks, whole_reduce, brcb and a block-broadcast sub, then exp and the sums."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, rows * cols)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y, rows * cols)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, 1)
    calc = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qin, 1, rows * cols * 4)
    pipe.init_buffer(qout, 1, rows * cols * 4)
    pipe.init_buffer(calc, rows * 64 * 4 + rows * 4 + rows * 8 * 4)
    fold = calc.get_with_offset(rows * 64, 0, asc.float32)
    red = calc.get_with_offset(rows, rows * 64 * 4, asc.float32)
    bc = calc.get_with_offset(rows * 8, rows * 64 * 4 + rows * 4, asc.float32)
    t = qin.alloc_tensor(asc.float32)
    asc.data_copy(t, xg, rows * cols)
    qin.enque(t)
    t = qin.deque(asc.float32)
    rs = cols // 8
    asc.max(fold, t, t[64:], 64, rows, asc.BinaryRepeatParams(src0_rep_stride=rs,
                                                              src1_rep_stride=rs))
    for c in range(128, cols, 64):
        asc.max(fold, fold, t[c:], 64, rows, asc.BinaryRepeatParams(src1_rep_stride=rs))
    asc.whole_reduce_max(red, fold, 64, rows, 1, 1, 8, asc.ReduceOrder.ORDER_ONLY_VALUE)
    asc.brcb(bc, red, rows // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    o = qout.alloc_tensor(asc.float32)
    for c in range(0, cols, 64):
        asc.sub(o[c:], t[c:], bc, 64, rows,
                asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=rs, src0_rep_stride=rs,
                                       src1_rep_stride=1))
    asc.exp(o, o, rows * cols)
    asc.add(fold, o, o[64:], 64, rows, asc.BinaryRepeatParams(src0_rep_stride=rs,
                                                              src1_rep_stride=rs))
    for c in range(128, cols, 64):
        asc.add(fold, fold, o[c:], 64, rows, asc.BinaryRepeatParams(src1_rep_stride=rs))
    asc.whole_reduce_sum(red, fold, 64, rows, 1, 1, 8)
    asc.brcb(bc, red, rows // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    for c in range(0, cols, 64):
        asc.div(o[c:], o[c:], bc, 64, rows,
                asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=rs, src0_rep_stride=rs,
                                       src1_rep_stride=1))
    qout.enque(o)
    qin.free_tensor(t)
    o = qout.deque(asc.float32)
    asc.data_copy(yg, o, rows * cols)
    qout.free_tensor(o)


def test_softmax_kernel_with_fast_paths(interpret):
    rows, cols = 16, 256
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32) * 4
    x[3, 17] = np.nan                               # a NaN row stays NaN
    y = np.zeros_like(x)
    _softmax_rows_kernel[1](x, y, rows, cols, interpret=interpret)
    with np.errstate(invalid="ignore"):
        e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-7)
    assert np.isnan(y[3]).all()



MASKED_STORE_CHILD = textwrap.dedent("""
    import re
    import numpy as np
    from tests.ascendc.prim_core import Arena
    from ascendc.lang.prims import vector as V
    A = Arena()
    x = np.array([1.5, -2.0, np.nan, -0.0, 0.0, np.inf, -np.inf, 3.0] * 8, np.float32)
    a, al = A.new(x.size, np.float32, x)
    b, _ = A.new(x.size, np.float32, np.float32(0.5))
    V.max_count(A.ctx, a, a, b, x.size)
    assert np.array_equal(al, np.where((x > 0.5) | (x != x), x, np.float32(0.5)), equal_nan=True)
    al[:] = x
    V.relu_count(A.ctx, a, a, x.size)
    assert np.array_equal(al, np.where((x > 0) | (x != x), x, np.float32(0)), equal_nan=True)
    al[:] = x
    V.exp_count(A.ctx, a, a, x.size)
    np.testing.assert_allclose(al, np.exp(x.astype(np.float64)), rtol=2e-7)
    # AVX/AVX2 masked stores, or an AVX-512 store under a mask register
    pat = r"v(p)?maskmov|vmov\\w*\\s+%[xyz]mm\\d+,\\s*[^,\\s]*\\([^)]*\\)\\s*\\{%k"
    for p in (V.max_count, V.relu_count, V.exp_count):
        asm = "".join(p.inspect_asm().values())
        print("MASKED", p.__name__, len(re.findall(pat, asm)), len(asm))
""")


@pytest.mark.slow
def test_in_place_vector_ops_store_every_element_unconditionally(tmp_path):
    """An op that may return its loaded input (max, relu, exp's NaN path) in place: without the
    `freeze` in `ld`, LLVM drops the store on that path and vectorises the loop with masked
    stores, ~12x slower on AMD Zen. The real primitives, compiled afresh in a child (a cached
    primitive's code cannot be inspected), must have none; their results stay exact."""
    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               ASCENDC_CACHE_DIR=str(tmp_path / "kernels"), PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-c", MASKED_STORE_CHILD], env=env, cwd=root,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    counts = [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("MASKED")]
    assert len(counts) == 3
    for name, n, size in counts:
        assert int(size) > 1000, name              # the code was there to read
        assert int(n) == 0, (name, n)
