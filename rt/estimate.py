"""An NPU time *estimate* for a kernel launch, from its counters and the SoC's constants.

Counters (reported by the kernel language per launch, names fixed here):
  mte2_bytes (GM -> L1/UB), mte1_bytes (L1 -> L0A/L0B), mte3_bytes (UB -> GM), fix_bytes
  (L0C -> GM), cube_macs (fp16/bf16-rate MACs), cube_macs_fp32, vector_elem_ops.
Each pipe's time is its work over its throughput; pipes overlap perfectly in this roofline model,
so the estimate is the slowest pipe ("bound pipe"). Throughputs marked ASSUMPTION in
`rt.soc.SocSpec.assumptions` (and L1 bandwidth here) have no primary source. Everything this
module returns is an estimate, and is labelled so wherever it is shown.
"""
from __future__ import annotations

from .soc import SocSpec

L1_BYTES_PER_CYCLE = 256  # ASSUMPTION: MTE1 bandwidth per AI Core
ESTIMATE_LABEL = "NPU estimate (roofline from SoC constants, not a measurement)"


def pipe_times_us(c: dict, soc: SocSpec, block_dim: int) -> dict:
    """Estimated µs per pipe for one launch with `block_dim` blocks."""
    cores = max(1, min(block_dim, soc.ai_core_num))
    vcores = max(1, min(block_dim * (2 if soc.separated else 1), soc.vector_core_num))
    hz = soc.cube_freq_hz
    gm = soc.hbm_bandwidth
    cube16 = c.get("cube_macs", 0) / (cores * soc.cube_fp16_macs_per_cycle * hz)
    cube32 = c.get("cube_macs_fp32", 0) / (cores * soc.cube_fp32_macs_per_cycle * hz)
    return {
        "MTE2": c.get("mte2_bytes", 0) / gm * 1e6,
        "MTE1": c.get("mte1_bytes", 0) / (cores * L1_BYTES_PER_CYCLE * hz) * 1e6,
        "MTE3": c.get("mte3_bytes", 0) / gm * 1e6,
        "FIX": c.get("fix_bytes", 0) / gm * 1e6,
        "CUBE": (cube16 + cube32) * 1e6,
        "VECTOR": c.get("vector_elem_ops", 0) / (vcores * soc.vector_lanes_fp32 * hz) * 1e6,
    }


def estimate(counters: dict, soc: SocSpec, block_dim: int) -> dict:
    """{'pipes_us': {...}, 'bound_pipe': str, 'estimated_us': float, 'label': str}."""
    t = pipe_times_us(counters, soc, block_dim)
    bound = max(t, key=t.get)
    return {"pipes_us": t, "bound_pipe": bound if t[bound] > 0 else "-",
            "estimated_us": t[bound], "label": ESTIMATE_LABEL,
            "assumptions": tuple(soc.assumptions) + ("L1_BYTES_PER_CYCLE",)}
