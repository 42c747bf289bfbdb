"""SoC specifications (frozen) for the emulated Ascend chips.

Numbers come from CANN's platform_config ini files and the Ascend C constants (docs/npu-model.md
§1 lists each with its source). Fields whose value has no primary source are listed in
``SocSpec.assumptions``, so anything derived from them (the profiler's NPU estimate) can be
labelled as such.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


@dataclass(frozen=True)
class SocSpec:
    name: str
    npu_arch: int                 # __NPU_ARCH__
    ai_core_num: int              # AIC count (cube cores), aclrtGetDeviceInfo(AICORE_CORE_NUM)
    vector_core_num: int          # AIV count
    separated: bool               # 1 AI Core = 1 AIC + 2 AIV (910B); False = coupled (310P)
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    hbm_bytes: int
    l2_bytes: int
    cube_freq_hz: float
    aicpu_num: int = 6
    cube_m: int = 16
    cube_n: int = 16
    cube_k: int = 16
    block_bytes: int = 32         # ONE_BLK_SIZE: DataCopy/UB address alignment
    repeat_bytes: int = 256       # one vector repeat
    fractal_bytes: int = 512      # BYTE_PER_FRACTAL
    fixpipe_align: int = 64       # CO1 source alignment
    max_buffers: int = 64         # TPipe buffer limit
    hbm_bandwidth: float = 1.6e12          # bytes/s, ASSUMPTION (third-party 0.4-1.6 TB/s)
    cube_fp16_macs_per_cycle: int = 4096   # 16x16x16 per AIC per cycle
    cube_fp32_macs_per_cycle: int = 1024   # ASSUMPTION: fp32 at 1/4 of the fp16 rate
    vector_bytes_per_cycle: int = 256      # vec_calc_size=128 fp16 lanes per AIV per cycle
    assumptions: tuple = field(default=("hbm_bandwidth", "cube_fp32_macs_per_cycle"))

    @property
    def vector_lanes_fp32(self) -> int:
        return self.vector_bytes_per_cycle // 4

    def capacity(self, level: str) -> int:
        """Bytes of an on-chip level: 'UB', 'L1', 'L0A', 'L0B', 'L0C'."""
        return {"UB": self.ub_bytes, "L1": self.l1_bytes, "L0A": self.l0a_bytes,
                "L0B": self.l0b_bytes, "L0C": self.l0c_bytes}[level]


_A2 = dict(npu_arch=2201, separated=True, ub_bytes=192 * KiB, l1_bytes=512 * KiB,
           l0a_bytes=64 * KiB, l0b_bytes=64 * KiB, l0c_bytes=128 * KiB, cube_freq_hz=1.8e9)

SOCS: dict[str, SocSpec] = {
    "Ascend910B1": SocSpec("Ascend910B1", ai_core_num=24, vector_core_num=48, hbm_bytes=64 * GiB,
                           l2_bytes=192 * MiB, **_A2,
                           assumptions=("hbm_bandwidth", "cube_fp32_macs_per_cycle", "hbm_bytes")),
    "Ascend910B2": SocSpec("Ascend910B2", ai_core_num=24, vector_core_num=48, hbm_bytes=64 * GiB,
                           l2_bytes=192 * MiB, **_A2),
    "Ascend910B3": SocSpec("Ascend910B3", ai_core_num=20, vector_core_num=40, hbm_bytes=64 * GiB,
                           l2_bytes=192 * MiB, **_A2,
                           assumptions=("hbm_bandwidth", "cube_fp32_macs_per_cycle", "hbm_bytes")),
    "Ascend910B4": SocSpec("Ascend910B4", ai_core_num=20, vector_core_num=40, hbm_bytes=32 * GiB,
                           l2_bytes=96 * MiB, **_A2),
    "Ascend310P3": SocSpec("Ascend310P3", npu_arch=2002, ai_core_num=8, vector_core_num=7,
                           separated=False, ub_bytes=256 * KiB, l1_bytes=1 * MiB,
                           l0a_bytes=64 * KiB, l0b_bytes=64 * KiB, l0c_bytes=256 * KiB,
                           hbm_bytes=24 * GiB, l2_bytes=16 * MiB, cube_freq_hz=1.08e9, aicpu_num=4,
                           hbm_bandwidth=204e9,
                           assumptions=("hbm_bandwidth", "cube_fp32_macs_per_cycle", "hbm_bytes",
                                        "cube_freq_hz", "ai_core_num", "vector_core_num")),
}

DEFAULT_SOC = "Ascend910B2"


def get_soc(name: str | None = None) -> SocSpec:
    """The spec named `name`, else env `ASCEND_EMU_SOC`, else Ascend910B2."""
    name = name or os.environ.get("ASCEND_EMU_SOC") or DEFAULT_SOC
    try:
        return SOCS[name]
    except KeyError:
        from .errors import AclError, ACL_ERROR_INVALID_PARAM
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"get_soc: soc name must be one of {sorted(SOCS)}, "
                       f"got name={name!r}") from None


# -- chip-to-chip links (the HCCL time estimate, rt/hccl/estimate.py) ----------------------------
@dataclass(frozen=True)
class LinkSpec:
    """The links HCCL moves data over, for the NPU view's collective-time estimate: `intra`
    between the NPUs of one server, `inter` between servers. Bandwidth is bytes/s in one
    direction of one link (what one ring or H-D step uses), latency the fixed cost of one
    message (the alpha of the alpha-beta model). No primary source gives these numbers for
    every SoC: every field in `assumptions` is one, `sources` says what is sourced."""
    intra: str
    intra_bandwidth: float
    intra_latency: float
    inter: str
    inter_bandwidth: float
    inter_latency: float
    sources: tuple = ()
    assumptions: tuple = ()


_A2_LINKS = LinkSpec(
    intra="HCCS", intra_bandwidth=56e9, intra_latency=2e-6,
    inter="RoCE", inter_bandwidth=25e9, inter_latency=5e-6,
    sources=("Atlas A2 servers: 8 NPUs fully meshed by HCCS (ai.gitee.com/docs/compute/"
             "clusters_gpu/ascend_gpu: '单机内 8 卡全互联')",
             "one RoCE port per NPU, 8 per Atlas 800T A2 server (MindCluster Ascend Deployer "
             "guide, deployer_0025: '每台训练节点的8个NPU网口')",
             "HCCL picks HCCS inside a server, RoCE between servers (CANN env reference, "
             "HCCL_INTRA_ROCE_ENABLE)"),
    assumptions=("intra_bandwidth: 56 GB/s per HCCS link = the third-party figure of 392 GB/s "
                 "HCCS per 910B over its 7 mesh links",
                 "intra_latency: 2 us per message", "inter_bandwidth: 200GE port = 25 GB/s",
                 "inter_latency: 5 us per message (RDMA over one switch hop)"))

#: Link specs by SoC name (same keys as SOCS).
LINKS: dict[str, LinkSpec] = {
    "Ascend910B1": _A2_LINKS, "Ascend910B2": _A2_LINKS, "Ascend910B3": _A2_LINKS,
    "Ascend910B4": _A2_LINKS,
    "Ascend310P3": LinkSpec(
        intra="PCIe", intra_bandwidth=31.5e9, intra_latency=5e-6,
        inter="RoCE", inter_bandwidth=12.5e9, inter_latency=10e-6,
        sources=("inference cards talk over PCIe (HCCL_INTRA_PCIE_ENABLE, CANN env "
                 "reference)",),
        assumptions=("intra_bandwidth: PCIe 4.0 x16, 31.5 GB/s per direction",
                     "intra_latency: 5 us per message", "inter_bandwidth: 100GE host NIC",
                     "inter_latency: 10 us per message")),
}


def get_links(name: str | None = None) -> LinkSpec:
    """The link spec of SoC `name` (default: `get_soc()`'s)."""
    return LINKS[get_soc(name).name]
