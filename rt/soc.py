"""SoC specifications (frozen) for the Ascend chips ATC and the runtime accept.

Every `--soc_version` CANN's ATC accepts has a profile here, grouped by family (CANN's "short SoC
version": Ascend310, Ascend310P, Ascend310B, Ascend910, Ascend910B, Ascend910_93). Where each
number comes from is in the profile's ``sources``; every field without a primary source is named
in ``assumptions`` (with the figure's origin in ``sources``), so anything derived from it (the
profiler's NPU estimate, HCCL's time) can be labelled as such. The sources, once:

- per-core buffers (UB, L1, L0A/B/C) by ``__NPU_ARCH__``: Ascend C's
  ``impl/basic_api/utils/kernel_utils_constants.h`` (asc-devkit) and, for A2, the
  ``Ascend910B2.ini [AICoreSpec]`` / catlass ``AtlasA2`` figures;
- core counts, memory and L2: the ``platform_config/<soc>.ini [SoCInfo]`` quotes named per profile;
- the soc_version -> family map: CANN's short-SoC-version table (as shipped in Ascend/RecSDK
  ``cust_op/ascendc_op/config/transform.json``) and hicann/runtime's SoC name lists.

docs/npu-model.md §1 lists the A2 and 310P numbers with their sources.
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
    vector_core_num: int          # AIV count (coupled SoCs: the vector units of the AI Cores)
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
    family: str = "Ascend910B"    # CANN's short SoC version (DVPP rules, op support)
    sources: tuple = ()

    @property
    def vector_lanes_fp32(self) -> int:
        return self.vector_bytes_per_cycle // 4

    def capacity(self, level: str) -> int:
        """Bytes of an on-chip level: 'UB', 'L1', 'L0A', 'L0B', 'L0C'."""
        return {"UB": self.ub_bytes, "L1": self.l1_bytes, "L0A": self.l0a_bytes,
                "L0B": self.l0b_bytes, "L0C": self.l0c_bytes}[level]


_BASE_ASSUMED = ("hbm_bandwidth", "cube_fp32_macs_per_cycle")
_SRC_BUFFERS = "per-core buffers: kernel_utils_constants.h for __NPU_ARCH__ {}"
_SRC_FAMILY = "family: CANN short SoC version table (RecSDK transform.json)"

# -- per-core buffers by arch (sourced: kernel_utils_constants.h) ---------------------------------
_A2 = dict(npu_arch=2201, separated=True, ub_bytes=192 * KiB, l1_bytes=512 * KiB,
           l0a_bytes=64 * KiB, l0b_bytes=64 * KiB, l0c_bytes=128 * KiB, cube_freq_hz=1.8e9)
_M200 = dict(separated=False, ub_bytes=256 * KiB, l1_bytes=1 * MiB, l0a_bytes=64 * KiB,
             l0b_bytes=64 * KiB, l0c_bytes=256 * KiB)


def _profile(name, family, *, assumed=(), sources=(), **kw) -> SocSpec:
    arch = kw["npu_arch"]
    return SocSpec(name, family=family, assumptions=_BASE_ASSUMED + tuple(assumed),
                   sources=(_SRC_BUFFERS.format(arch), _SRC_FAMILY) + tuple(sources), **kw)


def _a2(name, cores, hbm, l2, *, assumed=(), sources=()):
    return _profile(name, "Ascend910B", ai_core_num=cores, vector_core_num=2 * cores,
                    hbm_bytes=hbm, l2_bytes=l2, assumed=assumed, sources=sources, **_A2)


def _a3(name, *, assumed=(), sources=()):
    """Atlas A3 (910_93), one die: arch 2201 like A2 (kernel_utils_constants.h)."""
    return _profile(name, "Ascend910_93", ai_core_num=24, vector_core_num=48, hbm_bytes=64 * GiB,
                    l2_bytes=192 * MiB, **dict(_A2, cube_freq_hz=1.85e9),
                    assumed=("hbm_bytes", "l2_bytes", "cube_freq_hz") + tuple(assumed),
                    sources=("A3 per die: ai_core_cnt=24, vector_core_cnt=48, ub_size=196608 "
                             "(Ascend910_9392.ini quoted in a public operator-generation "
                             "prompt); 64 GB per die (npu-smi, third-party); cube_freq 1850 "
                             "(third-party note); L2 as A2 (no source)",) + tuple(sources))


def _old910(name, cores, freq, *, assumed=(), sources=()):
    """Training-series 910 (arch 1001 = same buffers as 2002), coupled AI Cores."""
    return _profile(name, "Ascend910", npu_arch=1001, ai_core_num=cores, vector_core_num=cores,
                    hbm_bytes=32 * GiB, l2_bytes=32 * MiB, cube_freq_hz=freq,
                    hbm_bandwidth=1.2e12, **_M200,
                    assumed=("hbm_bytes", "l2_bytes") + tuple(assumed),
                    sources=("Ascend 910: 32 Da Vinci cores, 256 TFLOPS fp16 (= 32 x 4096 MAC x "
                             "2 x ~1 GHz), 4 HBM chiplets at 1.2 TB/s (HotChips 2019, "
                             "third-party write-ups); 32 GB HBM and 32 MB L2 (third-party)",)
                    + tuple(sources))


def _p310(name, cores, vcores, *, assumed=(), sources=()):
    """Atlas inference series (310P, arch 2002), coupled AI Cores + separate vector cores."""
    return _profile(name, "Ascend310P", npu_arch=2002, ai_core_num=cores, vector_core_num=vcores,
                    hbm_bytes=24 * GiB, l2_bytes=16 * MiB, cube_freq_hz=1.08e9, aicpu_num=4,
                    hbm_bandwidth=204e9, **_M200,
                    assumed=("hbm_bytes", "cube_freq_hz", "ai_core_num", "vector_core_num")
                    + tuple(assumed),
                    sources=("310P3: ai_core_cnt=8, vector_core_cnt=7, L2 16 MiB (third-party "
                             "quote of Ascend310P3.ini); 96 GB LPDDR4X at 408 GB/s per 2-chip "
                             "Atlas 300I Duo card (news pages)",) + tuple(sources))


def _b310(name):
    """Atlas 200I/500 A2 (310B, arch 3002): UB 248 KiB, L1 1 MiB, L0C 128 KiB (sourced)."""
    return _profile(name, "Ascend310B", npu_arch=3002, ai_core_num=1, vector_core_num=1,
                    separated=False, ub_bytes=248 * KiB, l1_bytes=1 * MiB, l0a_bytes=64 * KiB,
                    l0b_bytes=64 * KiB, l0c_bytes=128 * KiB, hbm_bytes=8 * GiB, l2_bytes=4 * MiB,
                    cube_freq_hz=1.0e9, aicpu_num=1, hbm_bandwidth=51.2e9,
                    assumed=("ai_core_num", "vector_core_num", "l0a_bytes", "l0b_bytes",
                             "hbm_bytes", "l2_bytes", "cube_freq_hz", "aicpu_num"),
                    sources=("310B core counts, memory, L2 and clocks: no primary source; "
                             "L0A/L0B as every other arch",))


SOCS: dict[str, SocSpec] = {s.name: s for s in (
    # Atlas A2 (910B): PTO quotes Ascend910B2.ini / Ascend910B4.ini; catlass gives 910B3
    _a2("Ascend910B1", 24, 64 * GiB, 192 * MiB, assumed=("hbm_bytes",),
        sources=("910B1: 24/48 cores (ini quoted in a vdriver comment)",)),
    _a2("Ascend910B2", 24, 64 * GiB, 192 * MiB,
        sources=("Ascend910B2.ini: ai_core_cnt=24, vector_core_cnt=48, memory_size=64 GiB, "
                 "l2_size=192 MiB, cube_freq=1800 (quoted by pto-dsl)",)),
    _a2("Ascend910B2C", 24, 64 * GiB, 192 * MiB,
        assumed=("ai_core_num", "vector_core_num", "hbm_bytes", "l2_bytes"),
        sources=("910B2C: no ini quote found; the 910B2 figures",)),
    _a2("Ascend910B3", 20, 64 * GiB, 192 * MiB, assumed=("hbm_bytes",),
        sources=("910B3: MaxBlock=20, MaxAivBlock=40, L2 192 MB (catlass arch.hpp)",)),
    _a2("Ascend910B4", 20, 32 * GiB, 96 * MiB,
        sources=("Ascend910B4.ini: ai_core_cnt=20, vector_core_cnt=40, memory_size=32 GiB, "
                 "L2 96 MiB (quoted by pto-dsl)",)),
    _a2("Ascend910B4-1", 20, 32 * GiB, 96 * MiB,
        assumed=("ai_core_num", "vector_core_num", "hbm_bytes", "l2_bytes"),
        sources=("910B4-1: no ini quote found; the 910B4 figures",)),
    # Atlas A3 (910_93): the name list of hicann/runtime's SoC table
    _a3("Ascend910_9392"), _a3("Ascend910_9391", assumed=("ai_core_num", "vector_core_num")),
    _a3("Ascend910_9382", assumed=("ai_core_num", "vector_core_num")),
    _a3("Ascend910_9381", assumed=("ai_core_num", "vector_core_num")),
    _a3("Ascend910_9372", assumed=("ai_core_num", "vector_core_num")),
    _a3("Ascend910_9362", assumed=("ai_core_num", "vector_core_num")),
    # training series 910
    _old910("Ascend910A", 32, 1.0e9, assumed=("cube_freq_hz",)),
    _old910("Ascend910ProA", 32, 1.0e9, assumed=("cube_freq_hz",)),
    _old910("Ascend910PremiumA", 32, 1.0e9, assumed=("cube_freq_hz",)),
    _old910("Ascend910B", 30, 0.9e9,
            sources=("Ascend910B.ini (training-series 910B, not A2): ai_core_cnt=30, "
                     "cube_freq=900 (quoted in a public serving write-up)",)),
    _old910("Ascend910ProB", 30, 0.9e9, assumed=("ai_core_num", "vector_core_num",
                                                 "cube_freq_hz"),
            sources=("910ProB: the Ascend910B.ini figures",)),
    # Atlas inference series (310P) and its compute partitions (vir01..vir08 = 1..8 AI Cores)
    _p310("Ascend310P1", 8, 7), _p310("Ascend310P3", 8, 7), _p310("Ascend310P5", 8, 7),
    _p310("Ascend310P7", 8, 7),
    *(_p310(f"Ascend310P3vir0{n}", n, max(1, n * 7 // 8),
            sources=(f"vir0{n}: a compute partition of {n} AI Core(s) of a 310P3 "
                     "(npu-smi create-vdevice templates)",)) for n in (1, 2, 4, 8)),
    # Atlas 200I/500 A2 (310B)
    *(_b310(f"Ascend310B{n}") for n in (1, 2, 3, 4)),
    # Atlas 200/300/500 inference (310): arch 100 has no buffer table; the 1001/2002 one
    _profile("Ascend310", "Ascend310", npu_arch=1001, ai_core_num=2, vector_core_num=2,
             hbm_bytes=8 * GiB, l2_bytes=8 * MiB, cube_freq_hz=1.0e9, aicpu_num=4,
             hbm_bandwidth=51.2e9, **_M200,
             assumed=("npu_arch", "ub_bytes", "l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes",
                      "ai_core_num", "vector_core_num", "hbm_bytes", "l2_bytes", "cube_freq_hz",
                      "aicpu_num"),
             sources=("Ascend 310: 8 TOPS fp16 / 16 TOPS int8 at 8 W (HiSilicon launch note) = "
                      "2 Da Vinci cores x 4096 MAC x 2 x ~1 GHz (third-party core count); "
                      "8 GB LPDDR4X per chip (Atlas 200 DK, third-party)",)),
)}

#: The family (short SoC version) of every name, as `SocSpec.family`.
FAMILIES: tuple = ("Ascend310", "Ascend310B", "Ascend310P", "Ascend910", "Ascend910B",
                   "Ascend910_93")

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

_PCIE_LINKS = LinkSpec(
    intra="PCIe", intra_bandwidth=31.5e9, intra_latency=5e-6,
    inter="RoCE", inter_bandwidth=12.5e9, inter_latency=10e-6,
    sources=("inference cards talk over PCIe (HCCL_INTRA_PCIE_ENABLE, CANN env reference)",),
    assumptions=("intra_bandwidth: PCIe 4.0 x16, 31.5 GB/s per direction",
                 "intra_latency: 5 us per message", "inter_bandwidth: 100GE host NIC",
                 "inter_latency: 10 us per message"))

_910_LINKS = LinkSpec(
    intra="HCCS", intra_bandwidth=30e9, intra_latency=2e-6,
    inter="RoCE", inter_bandwidth=12.5e9, inter_latency=5e-6,
    sources=("Ascend 910: HCCS 240 Gbps, 100 Gbps RoCE v2 NIC on chip (third-party write-ups "
             "of the 2019 launch)",),
    assumptions=("intra_bandwidth: 240 Gbps = 30 GB/s", "intra_latency: 2 us per message",
                 "inter_bandwidth: 100 Gbps = 12.5 GB/s", "inter_latency: 5 us per message"))

_LINKS_BY_FAMILY = {"Ascend910B": _A2_LINKS, "Ascend910_93": _A2_LINKS,
                    "Ascend910": _910_LINKS, "Ascend310P": _PCIE_LINKS,
                    "Ascend310B": _PCIE_LINKS, "Ascend310": _PCIE_LINKS}

#: Link specs by SoC name (same keys as SOCS); A3 uses the A2 figures (no A3 source).
LINKS: dict[str, LinkSpec] = {n: _LINKS_BY_FAMILY[s.family] for n, s in SOCS.items()}


def get_links(name: str | None = None) -> LinkSpec:
    """The link spec of SoC `name` (default: `get_soc()`'s)."""
    return LINKS[get_soc(name).name]
