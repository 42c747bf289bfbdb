"""DVPP's rules per SoC family: one row per CANN product line, read by every unit's checks.

The acldvpp (V1) rules differ between CANN's product lines. Each row names the CANN documents it
comes from (the "约束说明" / "功能及约束说明" pages of the acldvpp and pyACL references; the
product names are CANN's), and `assumptions` names every field no document gives for that family.
Families are `rt.soc.SocSpec.family` (CANN's short SoC version):

- **Ascend310** (Atlas 200/300/500 inference products) and **Ascend910** (Atlas training
  products): the classic rules. ROI (acldvppCreateRoiConfig / dvpp_create_roi_config): left and
  top even, right and bottom odd, paste left a multiple of 16. VPC (VPC约束说明): YUV420SP width
  stride align(w, 16), height stride align(h, 2); packed RGB width stride align(w, 16) * 3
  (checked: a multiple of 16 bytes >= width * 3), height stride align(h, 2);
  width stride 32 .. 16384, height stride 6 .. 16384; output 10x6 .. 4096x4096. JPEGD
  (JPEGD功能及约束说明, 表2): width stride align(w, 128), height stride align(h, 16).
- **Ascend310P** (Atlas inference products): ROI without parity, paste left still a multiple of
  16; VPC width strides as the classic rows (the 310P column of VPC约束说明 and of the VPC (V2)
  page: width stride align(w, 16), 32 .. 16384), packed RGB height stride without alignment;
  output 10x6 .. 4096x4096; JPEGD width stride align(w, 64), height stride align(h, 16).
- **Ascend910B** (Atlas A2 training / inference products) and **Ascend910_93** (Atlas A3): ROI
  without parity or alignment (paste left too); VPC (VPC约束说明 表1 "A3 and A2"): YUV420SP width
  stride without alignment (>= width), height stride align(h, 2); packed RGB width stride
  width * 3 without alignment, height stride as height; output 10x6 .. 4096x8192; JPEGD width
  stride align(w, 64).
- **Ascend310B** (Atlas 200I/500 A2 inference products): output 10x6 .. 4096x8192, JPEGD
  align(w, 64), JPEGE input up to 16384x16384 (JPEGE功能及约束说明); ROI and VPC strides are not
  in the acldvpp pages for this line: the A2 rows (the VPC (V2) page groups it with A2:
  width stride minimum 10, no alignment), listed in `assumptions`.
- VDEC output RGB888 / BGR888 (`vdec_rgb_out`): every family but Ascend310 and Ascend910
  (vdec_set_channel_desc_out_pic_format: "Atlas 200/300/500 推理产品 / Atlas 训练系列产品不支持").
- VDEC bit depth (`vdec_bit_depth_settable`): 0 (8-bit) or 1 (10-bit, the default) where the
  user may set it; Ascend310 and Ascend910 keep the default (vdec_set_channel_desc_bit_depth:
  "当前版本不支持用户设置该参数").

Common to all families (not in the table): JPEGD input 32x32 .. 8192x8192; YUV420SP VPC
pictures have even width and height; VPC input 10x6 .. 8192x8192 for YUV420SP, 4096x4096 for
packed RGB; scale 1/32 .. 16; JPEGE input 32x32 (max per family), width stride a multiple of 16.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import device as _dev

_ROI_DOC = "acldvppCreateRoiConfig / dvpp_create_roi_config (parameter left/right/top/bottom)"
_VPC_DOC = "VPC约束说明 (acldvpp), 图片格式、宽高对齐、内存约束"
_JPEGD_DOC = "JPEGD功能及约束说明, 表2 图片格式、宽高对齐、内存大小约束"
_JPEGE_DOC = "JPEGE功能及约束说明, 图片分辨率约束"
_VDEC_DOC = ("aclvdecSetChannelDescOutPicFormat / vdec_set_channel_desc_out_pic_format: RGB888 "
             "and BGR888 not on Atlas 200/300/500 inference or Atlas training products")
_BIT_DEPTH_DOC = ("vdec_set_channel_desc_bit_depth: 0 8-bit, 1 10-bit (the default); not "
                  "user-settable on Atlas 200/300/500 inference or Atlas training products")


@dataclass(frozen=True)
class DvppRules:
    """The acldvpp rules of one SoC family (what `rt.dvpp` checks on a device of it)."""
    family: str
    products: str                     # CANN's product-line name
    roi_parity: bool                  # YUV420SP ROI: left/top even, right/bottom odd
    paste_left_align: int             # paste ROI left a multiple of this (1: free)
    vpc_yuv_width_align: int          # YUV420SP width stride a multiple of this (1: free)
    vpc_rgb_width_align: int          # packed RGB width stride (bytes) a multiple of this
    vpc_rgb_height_align: int         # packed RGB height stride a multiple of this
    vpc_width_stride_range: tuple     # (min, max) bytes; max None: no documented limit
    vpc_height_stride_range: tuple
    vpc_out_max: tuple                # (width, height)
    jpegd_width_align: int
    jpegd_height_align: int = 16
    jpege_max: tuple = (8192, 8192)
    vdec_rgb_out: bool = True         # VDEC output RGB888 / BGR888
    vdec_bit_depth_settable: bool = True   # vdec_set_channel_desc_bit_depth other than 1
    sources: tuple = ()
    assumptions: tuple = ()


_CLASSIC = dict(roi_parity=True, paste_left_align=16, vpc_yuv_width_align=16,
                vpc_rgb_width_align=16, vpc_rgb_height_align=2, vpc_width_stride_range=(32, 16384),
                vpc_height_stride_range=(6, 16384), vpc_out_max=(4096, 4096),
                jpegd_width_align=128, vdec_rgb_out=False, vdec_bit_depth_settable=False,
                sources=(_ROI_DOC, _VPC_DOC + " (Atlas 200/300/500, Atlas training: stride "
                         "align(w, 16), 32 .. 16384)", _JPEGD_DOC + " (128-aligned column)"))
_A2 = dict(roi_parity=False, paste_left_align=1, vpc_yuv_width_align=1, vpc_rgb_width_align=1,
           vpc_rgb_height_align=1,
           vpc_width_stride_range=(10, None), vpc_height_stride_range=(6, None),
           vpc_out_max=(4096, 8192), jpegd_width_align=64,
           sources=(_ROI_DOC + ": A2/A3 no parity, no alignment", _VPC_DOC + " 表1 (A3 and A2: "
                    "width stride no alignment, height stride align(h, 2); output up to "
                    "4096x8192)", "VPC (V2, hi_mpi) 约束说明: A2 width stride >= 10, height "
                    "stride >= 6", _JPEGD_DOC + " (64-aligned column)"))

RULES: dict[str, DvppRules] = {
    "Ascend310": DvppRules("Ascend310", "Atlas 200/300/500 inference products", **_CLASSIC),
    "Ascend910": DvppRules("Ascend910", "Atlas training products", **_CLASSIC),
    "Ascend310P": DvppRules(
        "Ascend310P", "Atlas inference products", roi_parity=False, paste_left_align=16,
        vpc_yuv_width_align=16, vpc_rgb_width_align=16, vpc_rgb_height_align=1,
        vpc_width_stride_range=(32, 16384),
        vpc_height_stride_range=(6, 16384), vpc_out_max=(4096, 4096), jpegd_width_align=64,
        sources=(_ROI_DOC + ": no parity, paste left 16-aligned", _VPC_DOC + " (Atlas "
                 "inference products: stride align(w, 16), 32 .. 16384; output 4096x4096)",
                 _JPEGD_DOC + " (64-aligned column)")),
    "Ascend910B": DvppRules("Ascend910B", "Atlas A2 training / inference products", **_A2),
    "Ascend910_93": DvppRules("Ascend910_93", "Atlas A3 training / inference products", **_A2),
    "Ascend310B": DvppRules(
        "Ascend310B", "Atlas 200I/500 A2 inference products", jpege_max=(16384, 16384),
        **dict(_A2, sources=_A2["sources"] + (_JPEGE_DOC + " (200I/500 A2: 16384x16384)",)),
        assumptions=("roi_parity", "paste_left_align", "vpc_yuv_width_align",
                     "vpc_rgb_width_align")),
}


RULES = {k: DvppRules(**{**r.__dict__, "sources": r.sources + (_VDEC_DOC, _BIT_DEPTH_DOC)})
         for k, r in RULES.items()}


def for_family(family: str) -> DvppRules:
    return RULES[family]


def for_device(device_id: int | None = None) -> DvppRules:
    """The rules of device `device_id`'s SoC (default: the current device)."""
    return RULES[_dev.get_device(device_id, "rt.dvpp").soc.family]
