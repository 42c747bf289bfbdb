"""The profiler's counters (bytes per pipe, cube MACs, vector element-ops) against hand counts,
and the NPU estimate built from them."""
import numpy as np
import pytest

import rt
from kernels.flash_attention import FlashAttentionTiling, flash_attention
from rt.estimate import estimate
from rt.opsummary import op_summary

import kernels_for_tests as K


def kernel_records(prof, name):
    return [r for r in prof.records if r.kind == "kernel" and r.name == name]


def test_copy_kernel_counts(interpret):
    x = np.arange(256, dtype=np.float32)
    z = np.zeros_like(x)
    with rt.profile() as prof:
        K.copy_kernel[1](x, z, 256, interpret=interpret)
    (r,) = kernel_records(prof, "copy_kernel")
    assert r.args["mte2_bytes"] == 256 * 4          # 4 tiles of 64 fp32 GM -> UB
    assert r.args["mte3_bytes"] == 256 * 4          # and back
    assert r.args["vector_elem_ops"] == 256         # one adds per element
    assert r.args["cube_macs"] + r.args["cube_macs_fp32"] == 0


@pytest.mark.parametrize("causal, s2_steps", [(False, 8), (True, 6)])
def test_flash_attention_cube_macs_follow_the_tiles(causal, s2_steps):
    """S=128, tiles 32 x 64: 4 S1 blocks x 2 S2 blocks, of which causal skips 2 fully masked
    ones. Each step is Q K^T (32x64x64) plus P V (32x64x64) MACs."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 1, 128, 64)).astype(np.float32)
    with rt.profile() as prof:
        flash_attention(q, q, q, causal=causal, tiling=FlashAttentionTiling(32, 64, 32))
    (r,) = kernel_records(prof, "flash_attention_kernel")
    assert r.args["cube_macs"] + r.args["cube_macs_fp32"] == s2_steps * 2 * 32 * 64 * 64
    est = estimate(r.args, rt.get_soc(), r.block_dim)
    assert est["estimated_us"] > 0 and est["bound_pipe"] in est["pipes_us"]
    assert "estimate" in est["label"]
    (row,) = op_summary(prof)
    assert row["calls"] == 1 and row["est_npu_us"] == pytest.approx(est["estimated_us"])


def test_estimate_is_the_slowest_pipe():
    soc = rt.get_soc()
    e = estimate({"mte2_bytes": int(soc.hbm_bandwidth)}, soc, 1)   # one second of HBM reads
    assert e["bound_pipe"] == "MTE2" and e["estimated_us"] == pytest.approx(1e6)
    e = estimate({"cube_macs": soc.cube_fp16_macs_per_cycle * int(soc.cube_freq_hz)}, soc, 1)
    assert e["bound_pipe"] == "CUBE" and e["estimated_us"] == pytest.approx(1e6)
