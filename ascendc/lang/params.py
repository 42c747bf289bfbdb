"""Parameter structs of the Ascend C APIs (pyasc names, snake_case fields, Ascend C defaults).

They are namedtuples so compiled kernels can build and read them; the compiler rewrites keyword
construction into positional form using `FIELDS`/`DEFAULTS`.
"""
from collections import namedtuple
from enum import IntEnum


def _struct(name, spec, doc):
    fields = [f for f, _ in spec]
    cls = namedtuple(name, fields, defaults=[d for _, d in spec])
    cls.__doc__ = doc
    return cls


BinaryRepeatParams = _struct("BinaryRepeatParams", [
    ("dst_blk_stride", 1), ("src0_blk_stride", 1), ("src1_blk_stride", 1),
    ("dst_rep_stride", 8), ("src0_rep_stride", 8), ("src1_rep_stride", 8)],
    "Strides of a binary vector op's repeat form, in 32-byte blocks.")
UnaryRepeatParams = _struct("UnaryRepeatParams", [
    ("dst_blk_stride", 1), ("src_blk_stride", 1), ("dst_rep_stride", 8), ("src_rep_stride", 8)],
    "Strides of a unary / tensor-scalar vector op's repeat form, in 32-byte blocks.")
# pyasc python/asc/language/core/types.py CopyRepeatParams: four uint16 fields, all default 0
CopyRepeatParams = _struct("CopyRepeatParams", [
    ("dst_stride", 0), ("src_stride", 0), ("dst_repeat_size", 0), ("src_repeat_size", 0)],
    "Strides of copy's repeat form, in 32-byte blocks: within a repeat, and between repeats.")


class LayoutMode(IntEnum):
    """Ascend C's LayoutMode (batch layouts of a Matmul operand; pyasc `asc.LayoutMode`). Of the
    batch layouts only NORMAL (batches of whole matrices one after another) is emulated."""
    NONE = 0
    BSNGD = 1
    SBNGD = 2
    BNGS1S2 = 3
    NORMAL = 4


class TransposeType(IntEnum):
    """Ascend C's TransposeType (pyasc python/asc/language/core/enums.py, same values)."""
    TRANSPOSE_TYPE_NONE = 0
    TRANSPOSE_NZ2ND_0213 = 1
    TRANSPOSE_NZ2NZ_0213 = 2
    TRANSPOSE_NZ2NZ_012_WITH_N = 3
    TRANSPOSE_NZ2ND_012_WITH_N = 4
    TRANSPOSE_NZ2ND_012_WITHOUT_N = 5
    TRANSPOSE_NZ2NZ_012_WITHOUT_N = 6
    TRANSPOSE_ND2ND_ONLY = 7
    TRANSPOSE_ND_UB_GM = 8
    TRANSPOSE_GRAD_ND_UB_GM = 9
    TRANSPOSE_ND2ND_B16 = 10
    TRANSPOSE_NCHW2NHWC = 11
    TRANSPOSE_NHWC2NCHW = 12


# pyasc core/types.py TransposeParamsExt: four uint16 sizes and a TransposeType
TransposeParamsExt = _struct("TransposeParamsExt", [
    ("n_size", 0), ("c_size", 0), ("h_size", 0), ("w_size", 0),
    ("transpose_type", int(TransposeType.TRANSPOSE_ND2ND_B16))],
    "The enhanced transpose: an [N,C,H,W] shape and the kind of rearrangement.")
# pyasc core/types.py TransDataTo5HDParams: two bools, a uint8 repeat count, uint16 strides
TransDataTo5HDParams = _struct("TransDataTo5HDParams", [
    ("dst_high_half", False), ("src_high_half", False), ("repeat_times", 1),
    ("dst_rep_stride", 0), ("src_rep_stride", 0)],
    "trans_data_to_5hd: repeats and the address step per repeat, in 32-byte blocks.")
BrcbRepeatParams = _struct("BrcbRepeatParams", [("dst_blk_stride", 1), ("dst_rep_stride", 8)],
                           "Strides of brcb's output, in 32-byte blocks.")
DataCopyParams = _struct("DataCopyParams", [
    ("block_count", 1), ("block_len", 0), ("src_stride", 0), ("dst_stride", 0)],
    "Strided data_copy: block_len and the gaps between blocks in 32-byte units.")
DataCopyExtParams = _struct("DataCopyExtParams", [
    ("block_count", 1), ("block_len", 0), ("src_stride", 0), ("dst_stride", 0), ("rsv", 0)],
    "data_copy_pad: block_len in bytes; GM-side stride in bytes, UB-side stride in 32-byte blocks.")
DataCopyPadExtParams = _struct("DataCopyPadExtParams", [
    ("is_pad", False), ("left_padding", 0), ("right_padding", 0), ("padding_value", 0)],
    "data_copy_pad padding (counts in elements, each side at most 32 bytes).")
DataCopyPadParams = _struct("DataCopyPadParams", [
    ("is_pad", False), ("left_padding", 0), ("right_padding", 0), ("padding_value", 0)],
    "Legacy data_copy_pad padding.")
Nd2NzParams = _struct("Nd2NzParams", [
    ("nd_num", 1), ("n_value", 0), ("d_value", 0), ("src_nd_matrix_stride", 0), ("src_d_value", 0),
    ("dst_nz_c0_stride", 0), ("dst_nz_n_stride", 0), ("dst_nz_matrix_stride", 0)],
    "GM(ND) -> L1(NZ) conversion: n rows of d elements; strides in elements / C0 blocks.")
LoadData2DParams = _struct("LoadData2DParams", [
    ("start_index", 0), ("repeat_times", 1), ("src_stride", 0), ("sid", 0), ("dst_gap", 0),
    ("if_transpose", False), ("addr_mode", 0)],
    "L1 -> L0A/L0B load in 512-byte fractals.")
MmadParams = _struct("MmadParams", [
    ("m", 0), ("n", 0), ("k", 0), ("is_bias", False), ("fm_offset", 0), ("en_ssparse", False),
    ("en_winograd_a", False), ("en_winograd_b", False), ("unit_flag", 0),
    ("k_direction_align", False), ("cmatrix_source", False), ("cmatrix_init_val", True)],
    "mmad: C(m x n) (+)= A(m x k) * B(k x n); cmatrix_init_val=True starts C from zero.")
FixpipeParamsV220 = _struct("FixpipeParamsV220", [
    ("n_size", 0), ("m_size", 0), ("src_stride", 0), ("dst_stride", 0), ("quant_pre", 0),
    ("deq_scalar", 0), ("nd_num", 1), ("src_nd_stride", 0), ("dst_nd_stride", 0),
    ("relu_en", False), ("unit_flag", 0), ("is_channel_split", False)],
    "fixpipe L0C -> GM: n_size x m_size, src_stride in C0 rows, dst_stride in elements per ND row.")
# pyasc core/types.py LoadData3DParamsV2 (field order and defaults as there): load_data's Load3D
LoadData3DParamsV2 = _struct("LoadData3DParamsV2", [
    ("pad_list", (0, 0, 0, 0)), ("l1_h", 1), ("l1_w", 1), ("channel_size", 1),
    ("k_extension", 1), ("m_extension", 1), ("k_start_pt", 0), ("m_start_pt", 0),
    ("stride_w", 1), ("stride_h", 1), ("filter_w", 1), ("filter_h", 1),
    ("dilation_filter_w", 1), ("dilation_filter_h", 1), ("en_transpose", False),
    ("pad_value", 0), ("filter_size_w", False), ("filter_size_h", False),
    ("f_matrix_ctrl", False)],
    "load_data Load3D: img2col of an L1 NC1HWC0 feature map (pad_list = [left, right, top, "
    "bottom]) into L0A/L0B, the m_extension x k_extension block at (m_start_pt, k_start_pt).")
# pyasc core/types.py GatherMaskParams: uint8, uint16, uint16, uint8 (strides in 32-byte blocks)
GatherMaskParams = _struct("GatherMaskParams", [
    ("src0_block_stride", 1), ("repeat_times", 1), ("src0_repeat_stride", 0),
    ("src1_repeat_stride", 0)],
    "gather_mask: src0's block / repeat strides and the pattern's repeat stride, in 32-byte "
    "blocks; repeats in normal mode.")

from .aipp_params import (AippPaddingParams, AippSwapParams, AippSingleLineParams,  # noqa: E402
                          AippDataTypeConvParams, AippChannelPaddingParams,
                          AippColorSpaceConvParams, AippParams, LoadImageToLocalParams)

ALL = (BinaryRepeatParams, UnaryRepeatParams, CopyRepeatParams, TransposeParamsExt,
       TransDataTo5HDParams, BrcbRepeatParams, DataCopyParams, DataCopyExtParams,
       DataCopyPadExtParams, DataCopyPadParams, Nd2NzParams, LoadData2DParams, MmadParams,
       FixpipeParamsV220, GatherMaskParams, LoadData3DParamsV2, AippPaddingParams,
       AippSwapParams, AippSingleLineParams,
       AippDataTypeConvParams, AippChannelPaddingParams, AippColorSpaceConvParams, AippParams,
       LoadImageToLocalParams)
BY_NAME = {c.__name__: c for c in ALL}
