"""The FlashAttention kernel is clean under every sanitizer tool (its pipes ordered by flags),
on a ragged shape with several S2 blocks and KV chunks, and stays right."""
import numpy as np
import pytest

import ascendc as asc
from kernels.flash_attention import (FlashAttentionTiling, flash_attention_reference,
                                     flash_attention_with_stats)


@pytest.mark.slow
@pytest.mark.parametrize("dtype,causal", [(np.float32, False), (np.float16, True)])
def test_flash_attention_is_sanitizer_clean(interpret, dtype, causal):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 2, 40, 32)).astype(dtype)
    k = rng.standard_normal((1, 1, 88, 32)).astype(dtype)
    v = rng.standard_normal((1, 1, 88, 32)).astype(dtype)
    with asc.sanitize(check_all=True) as san:
        out, _, _ = flash_attention_with_stats(q, k, v, causal=causal, kv_head_num=1,
                                               tiling=FlashAttentionTiling(32, 64, 32),
                                               interpret=interpret)
    assert san.report.count() == 0, san.report.format()
    want = flash_attention_reference(q, k, v, causal=causal, kv_head_num=1)[0]
    tol = 1e-5 if dtype == np.float32 else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=tol, atol=tol)
