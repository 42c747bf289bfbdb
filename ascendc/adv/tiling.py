"""`asc.adv.TCubeTiling`: the tiling struct of the high-level Matmul (pyasc `adv/tiling.py`).

Mirrors Ascend C `TCubeTiling` (matmul_tilingdata.h) with pyasc's snake_case field names
(`usedCoreNum` -> `used_core_num`, `Ka` -> `k_a`, `stepKa` -> `step_k_a`, `dbL0A` -> `db_l0a`, ...),
all int32 on the device. The host fills one with `asc.lib.host.MultiCoreMatmulTiling.get_tiling`
(or by hand) and passes it as a kernel argument; inside the kernel it is a record of ints (a
namedtuple), read as `tiling.single_core_m`; a kernel may also write its fields
(`tiling.share_l1_size = ...`, as pyasc's do): an interpreted kernel gets a TCubeTiling object,
a compiled one a new record in place of the old (ascendc/adv/lowering.py).
"""
from __future__ import annotations

from collections import namedtuple

from ..lang.api import KernelInt

# pyasc's order (the packed struct's order); C++ names in CPP_NAMES
FIELDS = (
    "used_core_num", "m", "n", "k_a", "k_b", "single_core_m", "single_core_n", "single_core_k",
    "base_m", "base_n", "base_k", "depth_a1", "depth_b1", "step_m", "step_n", "is_bias",
    "trans_length", "iterate_order", "share_mode", "share_l1_size", "share_l0c_size",
    "share_ub_size", "batch_m", "batch_n", "single_batch_m", "single_batch_n", "step_k_a",
    "step_k_b", "depth_a_l1_cache_ub", "depth_b_l1_cache_ub", "db_l0a", "db_l0b", "db_l0c",
    "a_layout_info_b", "a_layout_info_s", "a_layout_info_n", "a_layout_info_g", "a_layout_info_d",
    "b_layout_info_b", "b_layout_info_s", "b_layout_info_n", "b_layout_info_g", "b_layout_info_d",
    "c_layout_info_b", "c_layout_info_s1", "c_layout_info_n", "c_layout_info_g",
    "c_layout_info_s2", "batch_num")
CPP_NAMES = (
    "usedCoreNum", "M", "N", "Ka", "Kb", "singleCoreM", "singleCoreN", "singleCoreK", "baseM",
    "baseN", "baseK", "depthA1", "depthB1", "stepM", "stepN", "isBias", "transLength",
    "iterateOrder", "shareMode", "shareL1Size", "shareL0CSize", "shareUbSize", "batchM", "batchN",
    "singleBatchM", "singleBatchN", "stepKa", "stepKb", "depthAL1CacheUB", "depthBL1CacheUB",
    "dbL0A", "dbL0B", "dbL0C", "ALayoutInfoB", "ALayoutInfoS", "ALayoutInfoN", "ALayoutInfoG",
    "ALayoutInfoD", "BLayoutInfoB", "BLayoutInfoS", "BLayoutInfoN", "BLayoutInfoG",
    "BLayoutInfoD", "CLayoutInfoB", "CLayoutInfoS1", "CLayoutInfoN", "CLayoutInfoG",
    "CLayoutInfoS2", "BatchNum")

# What a kernel receives (module-level, so compiled kernels can be cached with it).
TCubeTilingRecord = namedtuple("TCubeTilingRecord", FIELDS)

_INT32 = (-2**31, 2**31)


class TCubeTiling:
    """Mirrors Ascend C `TCubeTiling` / pyasc `asc.adv.TCubeTiling`. Every field is an int32,
    0 by default; `TCubeTiling(base_m=128, ...)` sets some. Pass it to a kernel as an argument:
    the kernel sees a read-only record with the same field names."""

    __slots__ = FIELDS

    def __init__(self, **fields):
        for f in FIELDS:
            object.__setattr__(self, f, 0)
        for k, v in fields.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in FIELDS:
            raise AttributeError(f"TCubeTiling: field must be one of TCubeTiling's fields "
                                 f"(snake_case, e.g. single_core_m), got {name}={value!r}")
        if isinstance(value, bool):
            value = int(value)
        if not hasattr(value, "__index__") or not _INT32[0] <= int(value) < _INT32[1]:
            raise ValueError(f"TCubeTiling: {name} must be an int32, got {name}={value!r}")
        # a kernel integer: `tiling.m.ceildiv(...)` works on a TCubeTiling built in a kernel
        object.__setattr__(self, name, KernelInt(int(value)))

    def _asdict(self) -> dict:
        return {f: getattr(self, f) for f in FIELDS}

    def to_cpp_dict(self) -> dict:
        """The fields under Ascend C's names (usedCoreNum, M, ..., dbL0C)."""
        return {c: getattr(self, f) for f, c in zip(FIELDS, CPP_NAMES)}

    def _kernel_record(self) -> TCubeTilingRecord:
        """The value a kernel receives (jit's argument marshalling calls this)."""
        return TCubeTilingRecord(*(getattr(self, f) for f in FIELDS))

    def __eq__(self, other):
        return isinstance(other, TCubeTiling) and self._asdict() == other._asdict()

    def __repr__(self):
        set_ = ", ".join(f"{f}={getattr(self, f)}" for f in FIELDS[:33] if getattr(self, f))
        return f"TCubeTiling({set_})"


def _as_object(record) -> TCubeTiling:
    return TCubeTiling(**record._asdict())


# an interpreted kernel gets a TCubeTiling (fields writable, as in pyasc: `tiling.share_l1_size =
# asc.property(asc.TOTAL_L1_SIZE)`); compiled kernels rebuild the record (lowering.py)
TCubeTilingRecord._kernel_object = staticmethod(_as_object)
