"""FlashAttention forward vs the float64 numpy reference, in both modes.

One fixed tiling keeps the number of compiled specialisations small (tiles are ConstExprs). Its
S2 block of 144 columns is two full 64-lane chunks plus a partial one, so the row folds run every
path (S=45/64 fold one chunk, S=100 a full and a partial one), S1 blocks of 32 rows (16 per
AIV) against S2 blocks of 144 give causal blocks with fully masked rows (S=300), and kv_chunk 32
cuts every S2 block into four full mmads and a partial one (S = 45, 100: only partial ones)."""
import ast
import inspect
import textwrap

import ml_dtypes
import numpy as np
import pytest

import rt
from kernels.flash_attention import (FlashAttentionBuffers, FlashAttentionTiling,
                                     flash_attention, flash_attention_buffers,
                                     flash_attention_kernel, flash_attention_reference,
                                     flash_attention_tiling, flash_attention_with_stats,
                                     split_last_round)
from kernels.flash_attention_tiling import SLOTS
from kernels.tolerances import assert_close

TILING = FlashAttentionTiling(32, 144, 32)


def qkv(shape_q, shape_kv, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape_q).astype(np.float32).astype(dtype),
            rng.standard_normal(shape_kv).astype(np.float32).astype(dtype),
            rng.standard_normal(shape_kv).astype(np.float32).astype(dtype))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("s", [64, 45, 100, 130, 300])   # tile multiple, ragged, S2 blocks
def test_fp32_bnsd(interpret, causal, s):
    q, k, v = qkv((1, 2, s, 64), (1, 2, s, 64), np.float32, s)
    o, mx, sm = flash_attention_with_stats(q, k, v, causal=causal, tiling=TILING,
                                           interpret=interpret)
    ro, rmx, rsm = flash_attention_reference(q, k, v, causal=causal)
    assert_close(o, ro, np.float32, scale=5)
    np.testing.assert_allclose(mx, rmx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sm, rsm, rtol=1e-4)


@pytest.mark.parametrize("s1,s2", [(1, 200), (70, 33), (33, 300)])
def test_s1_and_s2_differ(interpret, s1, s2):
    """S1 = 1 leaves one AIV of the group without rows (it still takes part in every hand-off);
    causal masks are top-left aligned (row i sees keys 0..i)."""
    rng = np.random.default_rng(s1 + s2)
    q = rng.standard_normal((1, 1, s1, 64)).astype(np.float32)
    k, v = (rng.standard_normal((1, 1, s2, 64)).astype(np.float32) for _ in range(2))
    for causal in (False, True):
        o, mx, sm = flash_attention_with_stats(q, k, v, causal=causal, tiling=TILING,
                                               interpret=interpret)
        ro, rmx, rsm = flash_attention_reference(q, k, v, causal=causal)
        assert_close(o, ro, np.float32, scale=5)
        np.testing.assert_allclose(mx, rmx, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sm, rsm, rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rows_in_passes(interpret, dtype):
    """An S2 block of 1024 f32 scores x 64 rows does not fit an AIV's UB: each AIV works its rows
    in passes of 32 rows (16 for fp16, whose float16 scores come in two buffers, the next pass
    loading while the vector unit works, next to their f32 copy; S1 = 100: 50 rows per AIV,
    full passes and a ragged one; S2 = 1100: a full S2 block and a ragged one), causal and not."""
    tiling = FlashAttentionTiling(128, 1024, 64)
    b = flash_attention_buffers(tiling, 64, np.dtype(dtype).itemsize)
    assert (b.rows, b.pass_rows) == (64, 32 if dtype == np.float32 else 16)
    rng = np.random.default_rng(5)
    q = rng.standard_normal((1, 1, 100, 64)).astype(np.float32).astype(dtype)
    k, v = (rng.standard_normal((1, 1, 1100, 64)).astype(np.float32).astype(dtype)
            for _ in range(2))
    # float16 inputs hand S over in float16 (Q scaled first): the stats carry its rounding
    stol = 1e-5 if dtype == np.float32 else 2e-3
    for causal in (False, True):
        o, mx, sm = flash_attention_with_stats(q, k, v, causal=causal, tiling=tiling,
                                               interpret=interpret)
        ro, rmx, rsm = flash_attention_reference(q, k, v, causal=causal)
        assert_close(o, ro, dtype, scale=5)
        np.testing.assert_allclose(mx, rmx, rtol=stol, atol=stol)
        np.testing.assert_allclose(sm, rsm, rtol=10 * stol)


@pytest.mark.parametrize("layout", ["BSND", "BSH"])
def test_layouts(interpret, layout):
    b, n, s, d = 2, 2, 40, 64
    shape = (b, s, n, d) if layout == "BSND" else (b, s, n * d)
    q, k, v = qkv(shape, shape, np.float32, 3)
    o = flash_attention(q, k, v, layout=layout, head_num=n, tiling=TILING, interpret=interpret)
    assert o.shape == q.shape
    assert_close(o, flash_attention_reference(q, k, v, layout=layout, head_num=n)[0],
                 np.float32, scale=5)


@pytest.mark.parametrize("causal", [False, True])
def test_pipeline_runs_across_s1_blocks(interpret, causal):
    """More S1 blocks than groups: each group strides over 2 or 3 of them as one pipeline of
    steps, the next S1 block's first S tiles computed before this one's last P V. S1 = 320: 60
    whole S1 blocks on 24 groups, the last round's 12 cut in two parts of 16 rows (one per
    group, `split_last_round`); S1 = 300: the last S1 block of a head ragged, none cut. Causal
    gives the S1 blocks different numbers of S2 blocks; an S2 of one block (100 keys) puts
    SLOTS S1 blocks in flight at once (their own m and l each)."""
    assert split_last_round(60, 24, 320, 32) == (72, 48, 2, 16)
    assert split_last_round(60, 24, 300, 32) == (60, 60, 1, 32)
    for s1, s2, dtype in ((320, 300, np.float32), (300, 100, np.float16)):
        q, k, v = qkv((2, 3, s1, 64), (2, 3, s2, 64), dtype, s1 + s2)
        assert 2 * 3 * -(-s1 // TILING.s1_block) > rt.get_soc().ai_core_num
        o, mx, sm = flash_attention_with_stats(q, k, v, causal=causal, tiling=TILING,
                                               interpret=interpret)
        ro, rmx, rsm = flash_attention_reference(q, k, v, causal=causal)
        assert_close(o, ro, dtype, scale=5 if dtype == np.float32 else 2)
        tol = 1e-5 if dtype == np.float32 else 2e-3     # float16: S handed over in float16
        np.testing.assert_allclose(mx, rmx, rtol=tol, atol=tol)
        np.testing.assert_allclose(sm, rsm, rtol=100 * tol)
    o = flash_attention(q, k, v, causal=causal, tiling=TILING, interpret=interpret,
                        balance=False)                  # the last round's S1 blocks whole
    assert_close(o, ro, dtype, scale=2)


def test_split_last_round():
    """The last round of S1 blocks is cut into parts (multiples of 16 rows) only when it leaves
    at least half the groups idle and every S1 block is whole."""
    assert split_last_round(512, 24, 8192, 128) == (528, 504, 3, 48)   # 48 + 48 + 32 rows
    assert split_last_round(128, 24, 2048, 128) == (144, 120, 3, 48)
    assert split_last_round(192, 24, 8192, 128) == (192, 192, 1, 128)  # no last round
    assert split_last_round(40, 24, 640, 32) == (40, 40, 1, 32)        # 16 of 24: not cut
    assert split_last_round(25, 24, 32, 16) == (25, 25, 1, 16)         # 16 rows: one part


def test_gqa_and_scale(interpret):
    q, k, v = qkv((1, 4, 33, 64), (1, 2, 33, 64), np.float32, 7)   # 2 query heads per KV head
    o = flash_attention(q, k, v, scale=0.3, tiling=TILING, interpret=interpret)
    assert_close(o, flash_attention_reference(q, k, v, scale=0.3)[0], np.float32, scale=5)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_16bit_inputs_accumulate_in_fp32(interpret, dtype):
    q, k, v = qkv((1, 1, 50, 64), (1, 1, 50, 64), dtype, 11)
    o = flash_attention(q, k, v, causal=True, tiling=TILING, interpret=interpret)
    assert o.dtype == np.dtype(dtype)
    assert_close(o, flash_attention_reference(q, k, v, causal=True)[0], dtype, scale=2)


def test_fp16_scores_are_scaled_before_the_cast(interpret):
    """float16 S goes from L0C to the AIVs in float16: raw scores q.k of up to ~1e5 would
    overflow it (65504), so the AIVs scale Q first and the cube's S is the scaled one. Scaled
    logits in the thousands make the softmax nearly one-hot; the result must still match."""
    rng = np.random.default_rng(21)
    q = (60 * rng.standard_normal((1, 1, 40, 64))).astype(np.float16)
    k = (60 * rng.standard_normal((1, 1, 40, 64))).astype(np.float16)
    v = rng.standard_normal((1, 1, 40, 64)).astype(np.float16)
    assert np.abs(np.einsum("bnid,bnjd->bnij", q.astype(np.float64),
                            k.astype(np.float64))).max() > 65504
    o, mx, _ = flash_attention_with_stats(q, k, v, tiling=TILING, interpret=interpret)
    ro, rmx, _ = flash_attention_reference(q, k, v)
    assert np.isfinite(o).all() and np.isfinite(mx).all()
    assert_close(o, ro, np.float16, scale=2)
    np.testing.assert_allclose(mx, rmx, rtol=2e-3)


def test_head_dim_128_and_device_arrays():
    q, k, v = qkv((1, 1, 48, 128), (1, 1, 48, 128), np.float32, 5)
    rt.ensure_device()  # DeviceArrays need an initialised runtime (other tests may not have run)
    s = rt.Stream()
    # D is a ConstExpr (its own compile anyway); 144 x 128 fp32 would not fit L0B
    do = flash_attention(*(rt.to_device(x) for x in (q, k, v)), stream=s,
                         tiling=FlashAttentionTiling(32, 112, 32))
    s.synchronize()
    assert_close(do.copy_to_host(), flash_attention_reference(q, k, v)[0], np.float32, scale=5)


def test_default_tiling_fits_the_soc():
    soc = rt.get_soc()
    for d, dt in [(64, np.float32), (128, np.float32), (64, np.float16), (128, np.float16)]:
        t = flash_attention_tiling(d, dt, 2048, 2048)
        t.validate(d, np.dtype(dt).itemsize, soc)
        assert t.s1_block % 16 == 0 and t.s1_block >= 64 and t.s2_block >= 64
    # a large D: Q alone fills L0A at 32 rows of fp32, so the S1 block drops to 16 (8 per AIV)
    assert flash_attention_tiling(512, np.float32, 2048, 2048).s1_block == 16


def test_bad_inputs():
    q, k, v = qkv((1, 2, 16, 64), (1, 2, 16, 64), np.float32)
    with pytest.raises(ValueError, match="s1_block must be a positive multiple of 16"):
        flash_attention(q, k, v, tiling=FlashAttentionTiling(20, 64, 32))
    with pytest.raises(ValueError,
                       match=r"L0A must hold the tiles, asked 98304 bytes .* got capacity 65536"):
        flash_attention(q, k, v, tiling=FlashAttentionTiling(128, 1024, 128))
    with pytest.raises(ValueError, match="s1_block must be <= 256 .* got s1_block=272"):
        flash_attention(q, k, v, tiling=FlashAttentionTiling(272, 64, 32))
    with pytest.raises(ValueError, match="layout must be one of"):
        flash_attention(q, k, v, layout="SBH")
    with pytest.raises(ValueError, match="N_kv dividing N"):
        flash_attention(q, k[:, :1].repeat(3, axis=1), v[:, :1].repeat(3, axis=1))
    with pytest.raises(ValueError, match="must share a dtype"):
        flash_attention(q, k.astype(np.float16), v)


def test_buffer_layout():
    """The kernel reads every field of FlashAttentionBuffers by name (and no other), and each
    AIV's UB layout is O (rows x D), then 3 * SLOTS + 74 f32 per row (m and l of each S1 block in
    flight and an alpha per pipeline slot (SLOTS = 4 each), m_new, row max/sum, a 64-lane fold, 8
    brcb lanes), then the 16-bit P (or O) of bfloat16 inputs, or the 16-bit Q (or O) and the f32
    scores of a pass (at least rows x D: the Q scaling's scratch) of float16 inputs (whose S
    arrives in float16); rows is half the S1 block. The GM workspace holds SLOTS
    O-part and S slots per group, and SLOTS P slots for bfloat16; float16 and float32 write P
    back into the S slot it came from and have two slots of the scaled Q block instead (the
    AIVs scale the next S1 block's Q while the AIC works on this one)."""
    assert SLOTS == 4
    tree = ast.parse(textwrap.dedent(inspect.getsource(flash_attention_kernel.__wrapped__)))
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "bufs"}
    assert read == set(FlashAttentionBuffers._fields)
    s1b, s2b, d = TILING.s1_block, TILING.s2_block, 64
    rows = s1b // 2
    for isz, half in ((4, False), (2, False), (2, True)):      # f32, bfloat16, float16
        b = flash_attention_buffers(TILING, d, isz, half_s=half)
        assert b.rows == b.pass_rows == rows
        assert (b.m_ub, b.l_ub, b.alpha_ub, b.mnew_ub, b.fold_ub, b.brcb_ub, b.low_ub) == \
            tuple(rows * (d + r) * 4 for r in (0, 4, 8, 12, 14, 78, 86))
        low = rows * d * 2 if half else rows * s2b * isz if isz < 4 else 0
        sf = rows * max(s2b, d) * 4 if half else 0
        assert b.sf_ub == b.low_ub + low
        assert b.calc == rows * (d + 86) * 4 + low + sf
        assert (b.ws_block, b.wsp_block, b.wss_block) == \
            (4 * s1b * d, 2 * s1b * d if half or isz == 4 else 4 * s1b * s2b, 4 * s1b * s2b)
        assert b.s_ub == rows * s2b * (2 if half else 4) and b.o_ub == rows * d * 4
        assert b.s_ub_num == (2 if half else 1)
        assert (b.l0c, b.l0c_num) == (s1b * 64 * 4, 2)     # S chunk or O part, two of them
