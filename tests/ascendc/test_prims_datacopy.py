"""Data-movement primitives (ascendc/lang/prims/datacopy.py), called directly from Python and from
inside @njit code, against numpy references."""
import ml_dtypes
import numpy as np
import pytest

from ascendc.lang import core
from ascendc.lang.core import BT, L0A, L0C, L1, UB
from ascendc.lang.errors import GMReadError, GMWriteError, KernelError
from ascendc.lang.params import (DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams,
                                 DataCopyParams, Nd2NzParams)
from ascendc.lang.prims.datacopy import data_copy, data_copy_pad

from prim_core import Core, njit_cached
from ascendc.lang.state import MEM

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.float32, np.float16, BF16, np.int8]


@njit_cached
def nj_copy(ctx, dst, src, arg):
    data_copy(ctx, dst, src, arg)


@njit_cached
def nj_pad(ctx, dst, src, cp, pp):
    data_copy_pad(ctx, dst, src, cp, pp)


@njit_cached
def nj_pad3(ctx, dst, src, cp):
    data_copy_pad(ctx, dst, src, cp)


def copy(how, ctx, dst, src, arg):
    (data_copy if how == "py" else nj_copy)(ctx, dst, src, arg)


def pad(how, ctx, dst, src, cp, pp=None):
    if how == "py":
        data_copy_pad(ctx, dst, src, cp, pp)
    elif pp is None:
        nj_pad3(ctx, dst, src, cp)
    else:
        nj_pad(ctx, dst, src, cp, pp)


HOW = ["py", "njit"]


def cases(py, nj):
    """(how, dtype) params: every dtype in `py` from Python, those in `nj` also from njit code
    (the byte-level implementation is shared; njit cases cover the typed wrappers)."""
    return ([pytest.param("py", d, id=f"py-{np.dtype(d)}") for d in py]
            + [pytest.param("njit", d, id=f"njit-{np.dtype(d)}") for d in nj])


def values(dtype, n, seed=0):
    r = np.random.default_rng(seed)
    if np.dtype(dtype) == np.int8:
        return r.integers(-128, 128, n).astype(np.int8)
    return (r.standard_normal(n) * 10).astype(dtype)


# ---- count form --------------------------------------------------------------------------------

@pytest.mark.parametrize("how,dtype", cases(DTYPES, [np.float32, np.float16]))
def test_count_gm_ub_gm_round_trip(how, dtype):
    c = Core()
    n = 256 // np.dtype(dtype).itemsize * 3
    x = values(dtype, n)
    g_in, g_out = c.gm(x), c.gm(np.zeros(n, dtype))
    ub = c.local(UB, dtype, n)
    copy(how, c.ctx, ub, g_in, n)
    copy(how, c.ctx, g_out, ub, n)
    assert np.array_equal(c.logical(g_out).view(np.uint8), x.view(np.uint8))
    cnt = c.counters()
    assert cnt["mte2_bytes"] == cnt["mte3_bytes"] == n * np.dtype(dtype).itemsize
    assert core.state(c.ctx).rounded == 0


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("first", [0, 3, 16])
def test_count_ub_to_large_gm_streams_exact_bytes(how, first):
    """UB->GM copies into a GM argument of >= STREAM_MIN_GM bytes use streaming stores (head and
    tail to 64-byte alignment done separately): exactly the counted bytes change."""
    from ascendc.lang.prims.datacopy import STREAM_MIN_COPY, STREAM_MIN_GM
    c = Core()
    n = STREAM_MIN_COPY // 4 * 3 + 8                   # 12 KB + 32 B of float32
    x = values(np.float32, n)
    big = np.full(STREAM_MIN_GM // 4, -1.0, np.float32)
    g = c.gm(big)
    ub = c.local(UB, np.float32, n)
    ub[:] = x
    copy(how, c.ctx, g[first:], ub, n)
    assert np.array_equal(big[first:first + n], x)
    assert (big[:first] == -1).all() and (big[first + n:] == -1).all()
    assert c.counters()["mte3_bytes"] == n * 4


def test_streaming_stores_only_outside_cross_core_launches():
    """Streaming (non-temporal) stores are chosen for a large UB->GM copy into a large GM
    argument, but not in a launch whose cores synchronise (st.xcore set: MIX kernels), where the
    GM written is what another core reads next; nor for small copies or small arguments."""
    from ascendc.lang.prims.movecore import STREAM_MIN_COPY, STREAM_MIN_GM, streams
    c = Core()
    big = c.gm(np.zeros(STREAM_MIN_GM // 4, np.float32))
    small = c.gm(np.zeros(STREAM_MIN_GM // 8, np.float32))
    st = core.state(c.ctx)
    assert streams(st, big.ctypes.data + 64, STREAM_MIN_COPY)
    assert not streams(st, big.ctypes.data, STREAM_MIN_COPY - 32)
    assert not streams(st, small.ctypes.data, STREAM_MIN_COPY)
    st.xcore = 12345                        # as ascendc.lang.crosscore.attach_instance sets it
    assert not streams(st, big.ctypes.data + 64, STREAM_MIN_COPY)
    st.xcore = 0
    assert streams(st, big.ctypes.data + 64, STREAM_MIN_COPY)


@pytest.mark.parametrize("how,dtype,count,copied", [
    ("py", np.float32, 20, 16), ("py", np.float16, 20, 16), ("py", np.int8, 70, 64),
    ("py", np.float32, 7, 0), ("njit", np.float32, 20, 16)])
def test_count_rounds_down_to_32_bytes(how, dtype, count, copied):
    c = Core()
    x = values(dtype, 64)
    g = c.gm(x)
    ub = c.local(UB, dtype, 64, fill=0)
    copy(how, c.ctx, ub, g, count)
    got = c.logical(ub)
    assert np.array_equal(got[:copied], x[:copied])
    assert not got[copied:].any()          # the tail was dropped, not copied
    assert core.state(c.ctx).rounded == 1
    assert c.counters()["mte2_bytes"] == copied * np.dtype(dtype).itemsize
    copy(how, c.ctx, ub, g, 32)            # multiple of 32 B: no rounding recorded
    assert core.state(c.ctx).rounded == 1


@pytest.mark.parametrize("how", HOW)
def test_count_local_paths_ub_ub_gm_l1_l1_bt(how):
    c = Core()
    x = values(np.float32, 64)
    g = c.gm(x)
    a = c.local(UB, np.float32, 64)
    b = c.local(UB, np.float32, 64, off=1024)
    copy(how, c.ctx, a, g, 64)
    copy(how, c.ctx, b, a, 64)
    assert np.array_equal(b, x)
    l1 = c.local(L1, np.float32, 64)
    bt = c.local(BT, np.float32, 64)
    copy(how, c.ctx, l1, g, 64)
    copy(how, c.ctx, bt, l1, 64)
    assert np.array_equal(bt, x)
    cnt = c.counters()
    assert cnt["ub_to_ub_bytes"] == 256 and cnt["mte1_bytes"] == 256 and cnt["mte2_bytes"] == 512


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("dst_lv,src_lv,hint", [
    (L0A, None, "GM->L0A .*load_data"), (None, L0C, "L0C->GM .*fixpipe"),
    (L1, UB, "UB->L1"), (UB, L1, "L1->UB"), (L0A, L1, "L1->L0A .*load_data"), (None, L1, "L1->GM")])
def test_count_illegal_paths(how, dst_lv, src_lv, hint):
    c = Core()
    g = c.gm(np.zeros(64, np.float32))
    dst = g if dst_lv is None else c.local(dst_lv, np.float32, 64)
    src = g if src_lv is None else c.local(src_lv, np.float32, 64)
    with pytest.raises(KernelError, match="data_copy: path must be one of GM->UB, GM->L1, UB->GM, "
                                          "UB->UB, L1->BT, got " + hint):
        copy(how, c.ctx, dst, src, 64)


@pytest.mark.parametrize("how", HOW)
def test_count_misaligned_local_and_dtype_mismatch(how):
    c = Core()
    g = c.gm(np.zeros(64, np.float32))
    ub = c.local(UB, np.float32, 32, off=48)
    with pytest.raises(KernelError, match=r"data_copy: dst address in UB must be 32-byte aligned, "
                                          r"got byte offset=48"):
        copy(how, c.ctx, ub, g, 8)
    with pytest.raises(KernelError, match=r"data_copy: src address in UB must be 32-byte aligned"):
        copy(how, c.ctx, g, ub, 8)
    with pytest.raises(KernelError, match="dst and src must have the same dtype, got dst=float16 "
                                          "src=float32"):
        copy(how, c.ctx, c.local(UB, np.float16, 64), g, 16)
    with pytest.raises(KernelError, match="count must be >= 0, got count=-8"):
        copy(how, c.ctx, c.local(UB, np.float32, 64), g, -8)


@pytest.mark.parametrize("how", HOW)
def test_count_gm_out_of_range(how):
    c = Core()
    c.gm(np.zeros(10, np.int32))                   # argument #0 (another one)
    g = c.gm(np.arange(100, dtype=np.float32))     # argument #1
    ub = c.local(UB, np.float32, 64)
    with pytest.raises(GMReadError, match=r"data_copy: GM read must stay inside argument #1 "
                                          r"\(100 elements\), got elements \[88, 104\)"):
        copy(how, c.ctx, ub, g[88:], 16)
    with pytest.raises(GMWriteError, match=r"GM write must stay inside argument #1 "
                                           r"\(100 elements\), got elements \[96, 104\)"):
        copy(how, c.ctx, g[96:], ub, 8)
    copy(how, c.ctx, ub, g[88:], 15)               # rounded down to 8: inside, no error
    with pytest.raises(KernelError, match="dst must hold count elements, got count=64"):
        copy(how, c.ctx, c.local(UB, np.float32, 32), g, 64)


# ---- DataCopyParams form -----------------------------------------------------------------------

@pytest.mark.parametrize("how,dtype", cases([np.float32, np.float16, np.int8], [np.float32]))
def test_blocks_strided_both_directions(how, dtype):
    c = Core()
    isz = np.dtype(dtype).itemsize
    e = 32 // isz                                  # elements per 32-B block
    x = values(dtype, 40 * e)
    g = c.gm(x)
    ub = c.local(UB, dtype, 40 * e, fill=0)
    # 3 blocks of 2x32 B, GM gap 1 block, UB gap 3 blocks
    copy(how, c.ctx, ub, g, DataCopyParams(3, 2, 1, 3))
    ref = np.zeros(40 * e, dtype)
    for i in range(3):
        ref[i * 5 * e:(i * 5 + 2) * e] = x[i * 3 * e:(i * 3 + 2) * e]
    assert np.array_equal(c.logical(ub), ref)
    out = c.gm(np.zeros(40 * e, dtype))
    copy(how, c.ctx, out, ub, DataCopyParams(2, 1, 4, 2))   # UB gap 4, GM gap 2
    ref2 = np.zeros(40 * e, dtype)
    ref2[0:e] = ref[0:e]
    ref2[3 * e:4 * e] = ref[5 * e:6 * e]
    assert np.array_equal(c.logical(out), ref2)
    assert c.counters()["mte2_bytes"] == 3 * 64 and c.counters()["mte3_bytes"] == 64


@pytest.mark.parametrize("how", HOW)
def test_blocks_params_errors(how):
    c = Core()
    g = c.gm(np.zeros(64, np.float32))
    ub = c.local(UB, np.float32, 64)
    for p, msg in [(DataCopyParams(4096, 1, 0, 0), "block_count must be in \\[0, 4095\\], got "
                                                   "block_count=4096"),
                   (DataCopyParams(1, 65536, 0, 0), "block_len must be in \\[0, 65535\\], got "
                                                    "block_len=65536"),
                   (DataCopyParams(1, 1, -1, 0), "src_stride must be in \\[0, 65535\\]")]:
        with pytest.raises(KernelError, match="data_copy: " + msg):
            copy(how, c.ctx, ub, g, p)
    with pytest.raises(GMReadError, match=r"got elements \[64, 72\)"):
        copy(how, c.ctx, ub, g, DataCopyParams(3, 1, 3, 0))   # third block starts at 64
    copy(how, c.ctx, ub, g, DataCopyParams(0, 1, 0, 0))        # block_count 0: no-op
    assert c.counters()["mte2_bytes"] == 0


# ---- Nd2NzParams form --------------------------------------------------------------------------

def nd2nz_ref(dst, src, p, c0):
    for m in range(p.nd_num):
        for r in range(p.n_value):
            for col in range(p.d_value):
                dst[m * p.dst_nz_matrix_stride + (col // c0) * p.dst_nz_c0_stride * c0
                    + r * p.dst_nz_n_stride * c0 + col % c0] = \
                    src[m * p.src_nd_matrix_stride + r * p.src_d_value + col]


@pytest.mark.parametrize("how,dtype", cases(DTYPES, [np.float16]))
def test_nd2nz(how, dtype):
    c = Core()
    c0 = 32 // np.dtype(dtype).itemsize
    rows, cols = 19, 2 * c0 + 3                     # ragged in both directions
    x = values(dtype, 2 * rows * (cols + 5))
    g = c.gm(x)
    p = Nd2NzParams(2, rows, cols, rows * (cols + 5), cols + 5, 32, 1, 32 * 3 * c0)
    n = 2 * 32 * 3 * c0
    l1 = c.local(L1, dtype, n, fill=0)
    copy(how, c.ctx, l1, g, p)
    ref = np.zeros(n, dtype)
    nd2nz_ref(ref, x, p, c0)
    assert np.array_equal(c.logical(l1).view(np.uint8), ref.view(np.uint8))
    assert c.counters()["mte2_bytes"] == 2 * rows * cols * np.dtype(dtype).itemsize


@pytest.mark.parametrize("how", HOW)
def test_nd2nz_n_stride_and_padding_untouched(how):
    c = Core()
    x = np.arange(4 * 20, dtype=np.float32)
    g = c.gm(x)
    l1 = c.local(L1, np.float32, 2 * 64, fill=-1)
    # 16-column strips as row-major 4 x 16 blocks (dst_nz_n_stride=2, c0_stride=1); the last,
    # 4 columns wide, by its own call
    copy(how, c.ctx, l1, g, Nd2NzParams(1, 4, 16, 0, 20, 1, 2, 0))
    copy(how, c.ctx, l1[64:], g[16:], Nd2NzParams(1, 4, 4, 0, 20, 1, 2, 0))
    got = c.logical(l1)
    assert np.array_equal(got[:64].reshape(4, 16), x.reshape(4, 20)[:, :16])
    assert np.array_equal(got[64:64 + 4 * 16].reshape(4, 16)[:, :4], x.reshape(4, 20)[:, 16:20])
    assert (got[64:].reshape(4, 16)[:, 4:] == -1).all()   # padding is not written


def check_nd2nz(how, c, g, x, p, n, dtype, moved):
    """Nd2Nz `p` from GM `g` (holding `x`) into n elements of L1 filled with -1: the bytes equal
    nd2nz_ref's (what it does not write stays -1) and MTE2 counted `moved` elements."""
    l1 = c.local(L1, dtype, n, fill=-1)
    copy(how, c.ctx, l1, g, p)
    ref = np.full(n, -1, dtype)
    nd2nz_ref(ref, x, p, 32 // np.dtype(dtype).itemsize)
    assert np.array_equal(c.logical(l1).view(np.uint8), ref.view(np.uint8))
    assert c.counters()["mte2_bytes"] == moved * np.dtype(dtype).itemsize


@pytest.mark.parametrize("how,dtype", cases(DTYPES, [np.float32]))
@pytest.mark.parametrize("strips,n_stride,gap", [(2, 2, 0), (3, 3, 0), (3, 4, 5), (1, 1, 2)])
def test_nd2nz_whole_rows(how, dtype, strips, n_stride, gap):
    # dst_nz_c0_stride 1 with n_stride >= the strips: each ND row stays one run in L1 (the path
    # copying whole rows); nd 3 matrices, the gap between them in L1 left as it was
    c = Core()
    c0 = 32 // np.dtype(dtype).itemsize
    rows, cols, row = 5, strips * c0, strips * c0 + 7
    x = values(dtype, 3 * rows * row + 11, seed=3)
    g = c.gm(x)
    dms = (rows - 1) * n_stride * c0 + cols + gap * c0
    p = Nd2NzParams(3, rows, cols, rows * row + 3, row, 1, n_stride, dms)
    n = 3 * dms + 64
    check_nd2nz(how, c, g, x, p, n, dtype, 3 * rows * cols)


@pytest.mark.parametrize("how,dtype", cases(DTYPES, [np.float32, np.int8]))
@pytest.mark.parametrize("full,tail,side_by_side", [(15, 3, False), (8, 0, True), (1, 0, False),
                                                    (6, 1, True), (0, 5, False)])
def test_nd2nz_strips_row_by_row(how, dtype, full, tail, side_by_side):
    # the usual NZ (strips, rows and matrices disjoint in L1), copied source row by source row:
    # full C0 chunks in groups of 8, 4, 2, 1 and a ragged tail; matrices stacked in GM or side by
    # side in its rows; the gaps in L1 (a spare row per strip, between matrices) left as they were
    c = Core()
    c0 = 32 // np.dtype(dtype).itemsize
    rows, cols = 11, full * c0 + tail
    nstrip = full + (tail > 0)
    row = 2 * cols + 5 if side_by_side else cols + 3
    sms = cols if side_by_side else rows * row + 2
    x = values(dtype, 2 * rows * row + 2 * cols + 9, seed=5)
    g = c.gm(x)
    dms = nstrip * (rows + 1) * c0 + c0
    p = Nd2NzParams(2, rows, cols, sms, row, rows + 1, 1, dms)
    n = 2 * dms + 64
    check_nd2nz(how, c, g, x, p, n, dtype, 2 * rows * cols)


@pytest.mark.parametrize("how", HOW)
def test_nd2nz_overlapping_strips_keep_the_banded_order(how):
    # dst_nz_c0_stride 1 with n_stride 1: strip 1 of row r lands on strip 0 of row r + 1; within
    # one band of 16 rows each strip's rows are written in turn, so strip 1 wins
    c = Core()
    x = np.arange(5 * 16, dtype=np.float32) + 1
    g = c.gm(x)
    l1 = c.local(L1, np.float32, 128, fill=-1)
    copy(how, c.ctx, l1, g, Nd2NzParams(1, 5, 16, 0, 16, 1, 1, 0))
    ref = np.full(128, -1, np.float32)
    for j in range(2):
        for r in range(5):
            ref[(j + r) * 8:(j + r + 1) * 8] = x[r * 16 + j * 8:r * 16 + j * 8 + 8]
    assert np.array_equal(c.logical(l1), ref)


@pytest.mark.parametrize("how", HOW)
def test_nd2nz_errors(how):
    c = Core()
    g = c.gm(np.zeros(100, np.float16))
    l1 = c.local(L1, np.float16, 1024)
    with pytest.raises(KernelError, match="Nd2NzParams copy must be GM->L1, got GM->UB"):
        copy(how, c.ctx, c.local(UB, np.float16, 1024), g, Nd2NzParams(1, 4, 16, 0, 16, 16, 1, 0))
    with pytest.raises(GMReadError, match=r"got elements \[90, 106\)"):
        copy(how, c.ctx, l1, g, Nd2NzParams(1, 7, 16, 0, 15, 16, 1, 0))
    with pytest.raises(KernelError, match="n_value must be in \\[0, 16384\\], got n_value=20000"):
        copy(how, c.ctx, l1, g, Nd2NzParams(1, 20000, 16, 0, 16, 16, 1, 0))
    with pytest.raises(KernelError, match="dst_nz_c0_stride must be in \\[1, 16384\\]"):
        copy(how, c.ctx, l1, g, Nd2NzParams(1, 4, 16, 0, 16, 0, 1, 0))


def test_dispatcher_rejects_unknown_third_argument():
    c = Core()
    g = c.gm(np.zeros(8, np.float32))
    with pytest.raises(TypeError, match="data_copy: third argument must be a count, "
                                        "DataCopyParams or Nd2NzParams, got float=1.5"):
        data_copy(c.ctx, c.local(UB, np.float32, 8), g, 1.5)


# ---- data_copy_pad ------------------------------------------------------------------------------

@pytest.mark.parametrize("how,dtype", cases(DTYPES, [np.float32, BF16]))
def test_pad_ragged_tail_round_trip(how, dtype):
    c = Core()
    isz = np.dtype(dtype).itemsize
    n = 37                                          # not a multiple of 32 B for any dtype
    x = values(dtype, n)
    g_in = c.gm(x)
    g_out = c.gm(np.zeros(n + 8, dtype))
    ub = c.local(UB, dtype, 256 // isz, fill=0)
    pad(how, c.ctx, ub, g_in, DataCopyExtParams(1, n * isz, 0, 0, 0))
    assert np.array_equal(c.logical(ub)[:n], x)
    pad(how, c.ctx, g_out, ub, DataCopyExtParams(1, n * isz, 0, 0, 0))
    assert np.array_equal(c.logical(g_out)[:n], x)
    assert not c.logical(g_out)[n:].any()           # exactly block_len bytes written
    assert c.counters()["mte2_bytes"] == c.counters()["mte3_bytes"] == n * isz


@pytest.mark.parametrize("how,dtype", cases([np.float32, np.float16], [np.float16]))
def test_pad_blocks_strides_and_padding_values(how, dtype):
    c = Core()
    isz = np.dtype(dtype).itemsize
    e = 32 // isz
    x = values(dtype, 64)
    g = c.gm(x)
    ub = c.local(UB, dtype, 8 * e, fill=7)
    # 3 blocks of 5 elements, GM gap 2 elements (bytes), UB gap 1 block; left 1, right 2, pad -1
    pad(how, c.ctx, ub, g, DataCopyExtParams(3, 5 * isz, 2 * isz, 1, 0),
        DataCopyPadExtParams(True, 1, 2, -1))
    row = -(-(8 * isz) // 32) * 32 // isz            # ceil32(left + data + right) in elements
    ref = np.full(8 * e, 7, dtype)
    for i in range(3):
        base = i * (row + e)
        ref[base:base + row] = -1
        ref[base + 1:base + 6] = x[i * 7:i * 7 + 5]
    assert np.array_equal(c.logical(ub), ref)
    # is_pad False: padding and filler keep what was there ("dummy data")
    ub2 = c.local(UB, dtype, 4 * e, off=4096, fill=7)
    pad(how, c.ctx, ub2, g, DataCopyExtParams(2, 3 * isz, 0, 0, 0),
        DataCopyPadExtParams(False, 1, 0, 0))
    ref2 = np.full(4 * e, 7, dtype)
    ref2[1:4] = x[0:3]
    ref2[e + 1:e + 4] = x[3:6]
    assert np.array_equal(c.logical(ub2), ref2)


@pytest.mark.parametrize("how", HOW)
def test_pad_ub_to_gm_strides_and_legacy_params(how):
    c = Core()
    x = np.arange(48, dtype=np.float32)
    ub = c.local(UB, np.float32, 48)
    ub[:] = x
    out = c.gm(np.zeros(40, np.float32))
    # UB rows ceil32(12 B) = 8 elements + src_stride 1 block; GM gap 8 bytes
    pad(how, c.ctx, out, ub, DataCopyExtParams(3, 12, 1, 8, 0))
    ref = np.zeros(40, np.float32)
    for i in range(3):
        ref[i * 5:i * 5 + 3] = x[i * 16:i * 16 + 3]
    assert np.array_equal(out, ref)
    # legacy DataCopyParams (block_len in bytes for data_copy_pad) + DataCopyPadParams
    g = c.gm(np.arange(10, dtype=np.float32) + 100)
    ub2 = c.local(UB, np.float32, 8, off=1024, fill=0)
    pad(how, c.ctx, ub2, g, DataCopyParams(1, 12, 0, 0), DataCopyPadParams(True, 0, 0, 5))
    assert np.array_equal(ub2, [100, 101, 102, 5, 5, 5, 5, 5])


@pytest.mark.parametrize("how", HOW)
def test_pad_errors(how):
    c = Core()
    g = c.gm(np.zeros(30, np.float32))
    ub = c.local(UB, np.float32, 64)
    with pytest.raises(GMReadError, match=r"data_copy_pad: GM read must stay inside argument #0 "
                                          r"\(30 elements\), got elements \[28, 31\)"):
        pad(how, c.ctx, ub, g[28:], DataCopyExtParams(1, 12, 0, 0, 0))
    with pytest.raises(GMReadError, match=r"got elements \[30, 33\)"):
        pad(how, c.ctx, ub, g[20:], DataCopyExtParams(3, 12, 8, 0, 0))   # block 2 at element 10
    with pytest.raises(GMWriteError, match=r"GM write must stay inside argument #0 "
                                           r"\(30 elements\), got elements \[29, 31\)"):
        pad(how, c.ctx, g[29:], ub, DataCopyExtParams(1, 8, 0, 0, 0))
    with pytest.raises(KernelError, match="block_len must be a multiple of sizeof\\(dtype\\)=4 "
                                          "bytes, got block_len=6"):
        pad(how, c.ctx, ub, g, DataCopyExtParams(1, 6, 0, 0, 0))
    with pytest.raises(KernelError, match="left_padding must be in \\[0, 8\\] elements \\(at most "
                                          "32 bytes\\), got left_padding=9"):
        pad(how, c.ctx, ub, g, DataCopyExtParams(1, 8, 0, 0, 0),
            DataCopyPadExtParams(True, 9, 0, 0))
    with pytest.raises(KernelError,
                       match="block_len must be in \\[0, 65535\\], got block_len=70000"):
        pad(how, c.ctx, ub, g, DataCopyParams(1, 70000, 0, 0))
    with pytest.raises(KernelError,
                       match="data_copy_pad: path must be GM->UB or UB->GM, got GM->L1"):
        pad(how, c.ctx, c.local(L1, np.float32, 64), g, DataCopyExtParams(1, 8, 0, 0, 0))
    with pytest.raises(KernelError, match="pad_params must be omitted \\(or empty\\) for a UB->GM"):
        pad(how, c.ctx, g, ub, DataCopyExtParams(1, 8, 0, 0, 0),
            DataCopyPadExtParams(True, 0, 1, 0))


# ---- checked mode: deferred visibility ---------------------------------------------------------

@pytest.mark.parametrize("how", HOW)
def test_deferred_visibility_and_strided_snapshot(how):
    c = Core(core.FLAG_DEFER)
    x = np.arange(64, dtype=np.float32)
    g = c.gm(x)
    ub = c.local(UB, np.float32, 64, fill=-1)
    copy(how, c.ctx, ub, g, 16)
    assert (ub == -1).all()                         # not visible before deque
    core.flush_pending(c.ctx, 0, c.ctx[MEM].size)
    assert np.array_equal(ub[:16], x[:16]) and (ub[16:] == -1).all()
    ub[16:] = -2                                    # written by "vector code" meanwhile
    copy(how, c.ctx, ub, g, DataCopyParams(2, 1, 0, 2))     # blocks at 0 and 24, gap 16..24
    copy(how, c.ctx, ub[48:], g, 8)                         # another pending copy
    pad(how, c.ctx, ub[32:], g, DataCopyExtParams(1, 8, 0, 0, 0))
    assert np.array_equal(ub[:16], x[:16])          # old values until visible
    core.flush_pending(c.ctx, 0, c.ctx[MEM].size)
    ref = np.full(64, -2, np.float32)
    ref[:8] = x[:8]
    ref[8:16] = x[8:16]
    ref[24:32] = x[8:16]
    ref[32:34] = x[:2]
    ref[48:56] = x[:8]
    assert np.array_equal(ub, ref)
