"""`asc.adv.quant` / `asc.adv.QuantConfig`: Ascend C's AscendQuant, per-tensor form (pyasc
`adv/quantization.py`: quant(dst, src, scale, offset, count=None, temp_buffer=None,
reuse_source=False, config=None)).

As CANN implements it for 910B (highlevel_api impl/quantization/quant/ascend_quant_pre_impl.h,
AscendQuantIntrinsicsImpl; the AscendQuant page of the Ascend C API reference describes the same
steps), on the vector unit, chunk by chunk through the shared temporary buffer viewed as half:
  1. float src is converted to half (CAST_NONE: round to nearest even); half src is used as is;
  2. Muls by scale and 3. Adds offset, both in half (scale and offset are cast to half);
  4. half -> int8 (CAST_NONE: round half to even, saturating).
So a float32 source is quantised from its half value, not its float32 value.
The chunk is the buffer's size in halfs rounded down to 32 (or QuantConfig.work_local_size's,
with QuantConfig.calc_count elements when both are set, as the template's constexpr path does).
The form without temp_buffer (a stack buffer the framework reserves) is not supported.
"""
from __future__ import annotations

from .. import language as asc
from .checks import quant_check


class QuantConfig:
    """Mirrors Ascend C `AscendQuantConfig` / pyasc `asc.adv.QuantConfig(calc_count,
    offset_count, scale_count, work_local_size)` (template constants in Ascend C)."""
    __slots__ = ("calc_count", "offset_count", "scale_count", "work_local_size")

    def __init__(self, calc_count=0, offset_count=0, scale_count=0, work_local_size=0):
        self.calc_count, self.offset_count = int(calc_count), int(offset_count)
        self.scale_count, self.work_local_size = int(scale_count), int(work_local_size)
        if self.scale_count or self.offset_count:
            raise NotImplementedError("asc.adv.QuantConfig: scale_count and offset_count (the "
                                      "per-channel forms) are not supported, got "
                                      f"scale_count={self.scale_count} "
                                      f"offset_count={self.offset_count}")

    def as_tuple(self):
        return (self.calc_count, self.work_local_size)


@asc.jit
def quant_per_tensor(dst, src, tmp, scale, offset, count, cfg_calc, cfg_work):
    """The kernel-language body of asc.adv.quant (both modes run it); count < 0: all of src."""
    if count < 0:
        count = src.get_size()
    work = tmp.get_size()
    if cfg_work != 0 and cfg_calc != 0:
        work = cfg_work
        count = cfg_calc
    split = work // 2 // 32 * 32
    h = tmp.reinterpret_cast(asc.float16)
    i = 0
    while i < count:
        n = min(split, count - i)
        if src.dtype.sizeof() == 4:
            asc.cast(h, src[i:], asc.RoundMode.CAST_RINT, n)
            asc.pipe_barrier(asc.PipeID.PIPE_V)
            asc.muls(h, h, scale, n)
        else:
            asc.muls(h, src[i:], scale, n)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.adds(h, h, offset, n)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.cast(dst[i:], h, asc.RoundMode.CAST_RINT, n)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        i += n


def quant(dst, src, scale, offset, count=None, temp_buffer=None, reuse_source=False,
          config=None):
    """pyasc's `asc.adv.quant` in an interpreted kernel (compiled kernels: lowering.py)."""
    if temp_buffer is None:
        raise NotImplementedError("asc.adv.quant: temp_buffer must be given (the form whose "
                                  "temporary space the framework reserves is not supported)")
    calc, work = config.as_tuple() if config is not None else (0, 0)
    n = -1 if count is None else int(count)
    quant_check(dst.dtype.sizeof(), src.dtype.sizeof(), int(dst.get_size()), int(src.get_size()),
                int(temp_buffer.get_size()) * temp_buffer.dtype.sizeof(), n, calc, work)
    quant_per_tensor(dst, src, temp_buffer, scale, offset, n, calc, work)
