"""FlashAttention backward (a MIX kernel) vs the float64 reference gradients, in both modes
(the one-pass form unless a test says two-pass).

The forward's out and stats come from the float64 reference (cast as the forward returns them),
so most tests compile only the backward: one tiling (32 x 32: S1 blocks split 16 / 16 rows over
the two AIVs) keeps the specialisations few. Shapes: tile multiples (32, 64), ragged (45, 40 x
70: a last S2 block of 6 columns), causal with S2 > S1 (S2 blocks no query row sees: dK = dV =
0 from the AIVs). Every launch runs checked (tests/conftest.py): the GM-order check of the MIX
hand-offs is on."""
import math

import ml_dtypes
import numpy as np
import pytest

import rt
from kernels.flash_attention import flash_attention_reference
from kernels.flash_attention_backward import (FlashAttentionBackwardTiling,
                                              flash_attention_backward,
                                              flash_attention_backward_reference,
                                              flash_attention_backward_tiling,
                                              flash_attention_backward_tiling_candidates)
from kernels.flash_attention import flash_attention_grad
from kernels.tolerances import assert_close

TILING = FlashAttentionBackwardTiling(32, 32)


def inputs(shape_q, shape_kv, dtype, seed=0):
    rng = np.random.default_rng(seed)
    mk = lambda s: rng.standard_normal(s).astype(np.float32).astype(dtype)  # noqa: E731
    return mk(shape_q), mk(shape_kv), mk(shape_kv), mk(shape_q)


def saved_forward(q, k, v, dtype, **kw):
    """out (in the input dtype) and the float32 stats, as the forward hands them over."""
    o, mx, sm = flash_attention_reference(q, k, v, **kw)
    return o.astype(dtype), mx.astype(np.float32), sm.astype(np.float32)


def check(q, k, v, do, dtype, scale=5, tiling=TILING, interpret=False, **kw):
    o, mx, sm = saved_forward(q, k, v, dtype, **kw)
    got = flash_attention_backward(do, q, k, v, o, mx, sm, tiling=tiling, interpret=interpret,
                                   **kw)
    want = flash_attention_backward_reference(do, q, k, v, **kw)
    for g, w, x in zip(got, want, (q, k, v)):
        assert g.shape == x.shape and g.dtype == np.dtype(dtype)
        assert_close(g, w, dtype, scale=scale)
    return got


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("s1,s2", [(64, 64), (45, 45), (40, 70)])
def test_fp32_bnsd(interpret, causal, s1, s2):
    q, k, v, do = inputs((1, 2, s1, 32), (1, 2, s2, 32), np.float32, s1 + s2)
    check(q, k, v, do, np.float32, interpret=interpret, causal=causal)


def test_causal_s2_blocks_no_row_sees_are_zero(interpret):
    q, k, v, do = inputs((1, 1, 20, 32), (1, 1, 75, 32), np.float32, 4)
    _, dk, dv = check(q, k, v, do, np.float32, interpret=interpret, causal=True)
    assert not dk[:, :, 32:].any() and not dv[:, :, 32:].any()     # blocks 1 and 2
    assert dk[:, :, :20].any()


@pytest.mark.parametrize("layout", ["BSND", "BSH"])
def test_layouts(interpret, layout):
    b, n, s, d = 2, 2, 40, 32
    shape = (b, s, n, d) if layout == "BSND" else (b, s, n * d)
    q, k, v, do = inputs(shape, shape, np.float32, 3)
    check(q, k, v, do, np.float32, interpret=interpret, layout=layout, head_num=n)


def test_gqa_sums_over_the_group_and_scale(interpret):
    q, k, v, do = inputs((1, 4, 33, 32), (1, 2, 50, 32), np.float32, 7)   # 2 heads per KV head
    check(q, k, v, do, np.float32, interpret=interpret, scale=0.3, causal=True)


def test_mqa_bsh(interpret):
    b, n, s, d = 1, 3, 24, 32
    q, _, _, do = inputs((b, s, n * d), (b, s, d), np.float32, 8)
    _, k, v, _ = inputs((b, s, n * d), (b, s, d), np.float32, 9)
    check(q, k, v, do, np.float32, interpret=interpret, layout="BSH", head_num=n, kv_head_num=1)


@pytest.mark.parametrize("dtype,scale", [(np.float16, 5), (ml_dtypes.bfloat16, 2)])
def test_16bit_inputs(interpret, dtype, scale):
    q, k, v, do = inputs((1, 2, 50, 32), (1, 1, 45, 32), dtype, 11)
    check(q, k, v, do, dtype, scale=scale, interpret=interpret, causal=True)


def test_device_arrays_on_a_stream(interpret):
    q, k, v, do = inputs((1, 2, 45, 32), (1, 2, 45, 32), np.float32, 5)
    o, mx, sm = saved_forward(q, k, v, np.float32)
    rt.ensure_device()
    s = rt.Stream()
    dev = [rt.to_device(x) for x in (do, q, k, v, o, mx, sm)]
    got = flash_attention_backward(*dev, stream=s, tiling=TILING, interpret=interpret)
    assert all(isinstance(g, rt.DeviceArray) for g in got)
    s.synchronize()
    for g, w in zip(got, flash_attention_backward_reference(do, q, k, v)):
        assert_close(g.copy_to_host(), w, np.float32, scale=5)


def test_grad_runs_the_forward_first(interpret):
    q, k, v, do = inputs((1, 1, 48, 32), (1, 1, 48, 32), np.float32, 6)
    got = flash_attention_grad(q, k, v, do, causal=True, interpret=interpret)
    for g, w in zip(got, flash_attention_backward_reference(do, q, k, v, causal=True)):
        assert_close(g, w, np.float32, scale=5)


@pytest.mark.parametrize("one_pass", [True, False])
def test_default_tiling_and_deterministic_results(one_pass):
    """The default tiling ((64, 112): two S1 blocks, the second ragged, and one S2 block), in
    either form, is right; the two-pass form gives bit-identical results twice (every
    accumulator has one owner and a fixed order), the one-pass form so for dK and dV (dQ's
    atomic adds land in any order)."""
    q, k, v, do = inputs((1, 2, 100, 64), (1, 2, 100, 64), np.float16, 12)
    t = flash_attention_backward_tiling(64, np.float16, 100, 100)
    assert t == FlashAttentionBackwardTiling(64, 112, True)
    t = FlashAttentionBackwardTiling(t.s1_block, t.s2_block, one_pass)
    a = check(q, k, v, do, np.float16, tiling=t)
    b = check(q, k, v, do, np.float16, tiling=t)
    for x, y in list(zip(a, b))[0 if not one_pass else 1:]:
        assert np.array_equal(x.view(np.uint16), y.view(np.uint16))


@pytest.mark.parametrize("dtype,causal", [(np.float32, True), (np.float16, False)])
def test_two_pass_form(interpret, dtype, causal):
    """The two-pass form (dQ launch, then dK / dV; tiling one_pass=False), GQA, ragged."""
    q, k, v, do = inputs((1, 4, 45, 32), (1, 2, 40, 32), dtype, 15)
    check(q, k, v, do, dtype, interpret=interpret, causal=causal,
          tiling=FlashAttentionBackwardTiling(32, 32, False))


def test_matches_torch_autograd():
    torch = pytest.importorskip("torch")
    q, k, v, do = inputs((1, 2, 40, 32), (1, 2, 40, 32), np.float32, 13)
    tq, tk, tv = (torch.from_numpy(x.copy()).requires_grad_() for x in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    out.backward(torch.from_numpy(do))
    got = flash_attention_grad(q, k, v, do, causal=True)
    for g, t in zip(got, (tq.grad, tk.grad, tv.grad)):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-4, atol=1e-4)


def test_the_reference_matches_finite_differences():
    q, k, v, do = (x.astype(np.float64) for x in inputs((1, 1, 5, 16), (1, 1, 7, 16),
                                                         np.float32, 14))

    def loss(qq, kk, vv):
        return float((flash_attention_reference(qq, kk, vv, causal=True)[0] * do).sum())
    dq, dk, dv = flash_attention_backward_reference(do, q, k, v, causal=True)
    eps = 1e-6
    for x, g, idx in ((q, dq, (0, 0, 2, 3)), (k, dk, (0, 0, 1, 5)), (v, dv, (0, 0, 4, 0))):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        plus = [xp if y is x else y for y in (q, k, v)]
        minus = [xm if y is x else y for y in (q, k, v)]
        fd = (loss(*plus) - loss(*minus)) / (2 * eps)
        assert math.isclose(fd, g[idx], rel_tol=1e-5, abs_tol=1e-8)


# ---- errors and tiling -------------------------------------------------------------------------

def _ok(dtype=np.float32, s=16, d=32):
    q, k, v, do = inputs((1, 2, s, d), (1, 2, s, d), dtype)
    o, mx, sm = saved_forward(q, k, v, dtype)
    return [do, q, k, v, o, mx, sm]


@pytest.mark.parametrize("change,message", [
    (lambda a: a.__setitem__(0, a[0].astype(np.float16)),
     "dout must have q's dtype float32, got dout.dtype=float16"),
    (lambda a: a.__setitem__(4, a[4][:, :, :8]), "out must have q's shape (1, 2, 16, 32)"),
    (lambda a: a.__setitem__(5, a[5].astype(np.float64)),
     "softmax_max must be float32 of shape (B, N, S1)=(1, 2, 16)"),
    (lambda a: a.__setitem__(6, a[6][:, :1]), "softmax_sum must be float32 of shape"),
    (lambda a: a.__setitem__(2, a[2][:, :, :, :16]), "k and v must be (B, N_kv, S2, D)"),
])
def test_bad_inputs_are_refused_by_message(change, message):
    args = _ok()
    change(args)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        flash_attention_backward(*args)


def test_bad_layout_dtype_and_head_dim():
    with pytest.raises(ValueError, match="layout must be one of"):
        flash_attention_backward(*_ok(), layout="SBH")
    with pytest.raises(ValueError, match="dtype must be float32, float16 or bfloat16, got "
                                         "dtype=float64"):
        flash_attention_backward(*[x.astype(np.float64) if i < 5 else x
                                   for i, x in enumerate(_ok())])
    with pytest.raises(ValueError, match="head dim D must be a multiple of 16, got D=24"):
        flash_attention_backward(*_ok(d=24))


def test_tiling_is_validated_against_the_soc():
    with pytest.raises(ValueError, match="s2_block must be a positive multiple of 16, got "
                                         "s2_block=40"):
        FlashAttentionBackwardTiling(32, 40).validate(64, 2)
    with pytest.raises(ValueError, match="L0C must hold the tiles"):   # L1 holds them
        FlashAttentionBackwardTiling(64, 128).validate(128, 2)
    with pytest.raises(ValueError, match="L1 must hold the tiles, asked 1368064 bytes"):
        flash_attention_backward(*_ok(), tiling=FlashAttentionBackwardTiling(240, 512))


@pytest.mark.parametrize("d,dtype,want", [(64, np.float32, (48, 128)), (128, np.float16, (64, 64)),
                                          (256, np.float16, (48, 32))])
def test_default_tiling_fits_and_is_a_candidate(d, dtype, want):
    """The default is the tuner's first at B1 N3 S8192 D128 float16 and B1 N8 S2048 D64 float32
    among the tiles ranked there (docs/performance.md)."""
    t = flash_attention_backward_tiling(d, dtype, 8192, 8192)
    assert (t.s1_block, t.s2_block) == want
    t.validate(d, np.dtype(dtype).itemsize)
    cands = flash_attention_backward_tiling_candidates(d, dtype, 8192, 8192)
    assert t in cands and len(cands) >= 2 and t.one_pass
    assert {c.one_pass for c in cands} == {True, False}
    for c in cands:
        c.validate(d, np.dtype(dtype).itemsize)
