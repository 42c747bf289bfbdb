"""pyasc's Matmul configuration helpers: `get_mm_config(*params)` and its parameter structs
(`MatmulShapeParams`, `MatmulQuantParams`, `MatmulBatchParams`, `MatmulFuncParams`), the
`get_{normal,mdl,special_mdl,ib_share_norm,basic,special_basic}_config` shortcuts and their
enums (`MatmulConfigMode`, `BatchMode`, `IterateOrder`, `ScheduleType`), as pyasc's development
line spells them (adv/types.py, adv/matmul.py, core/enums.py).

Each returns a `MatmulConfig` holding the fields pyasc's would; the emulated Matmul computes the
same result whatever its configuration (the configuration selects a CANN template's schedule,
not its arithmetic), so a Matmul accepts one and it changes nothing (adv/matmul.py). pyasc's
range checks are kept: batch_mode in [1, 3], iterate_order in [0, 2], schedule_type in [0, 1],
do_mte2_preload in [0, 2]. In compiled kernels each of these calls is a constant (lowering.py).
"""
from __future__ import annotations

from enum import IntEnum

from .matmul import MatmulConfig


class MatmulConfigMode(IntEnum):
    CONFIG_NORM = 1
    CONFIG_MDL = 2
    CONFIG_SPECIALMDL = 3
    CONFIG_IBSHARE = 4


class BatchMode(IntEnum):
    NONE = 0
    BATCH_LESS_THAN_L1 = 1
    BATCH_LARGE_THAN_L1 = 2
    SINGLE_LARGE_THAN_L1 = 3


class IterateOrder(IntEnum):
    ORDER_M = 0
    ORDER_N = 1
    UNDEF = 2


class ScheduleType(IntEnum):
    INNER_PRODUCT = 0
    OUTER_PRODUCT = 1


class _Params:
    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class MatmulShapeParams(_Params):
    def __init__(self, single_core_m=0, single_core_n=0, single_core_k=0, basic_m=0, basic_n=0,
                 basic_k=0):
        super().__init__(single_core_m=single_core_m, single_core_n=single_core_n,
                         single_core_k=single_core_k, basic_m=basic_m, basic_n=basic_n,
                         basic_k=basic_k)


class MatmulQuantParams(_Params):
    def __init__(self, is_per_tensor=False, has_anti_quant_offset=False):
        super().__init__(is_per_tensor=is_per_tensor, has_anti_quant_offset=has_anti_quant_offset)


class MatmulBatchParams(_Params):
    def __init__(self, is_b_batch=False, batch_mode=BatchMode.BATCH_LESS_THAN_L1,
                 is_bias_batch=False):
        super().__init__(is_n_batch=is_b_batch, batch_mode=batch_mode,
                         is_bias_batch=is_bias_batch)


class MatmulFuncParams(_Params):
    def __init__(self, intrinsics_limit=False, en_vec_nd2_nz=False, enable_double_cache=False,
                 enable_l1_cache=False, do_mte2_pre_load=0, iterate_order=IterateOrder.ORDER_M,
                 schedule_type=ScheduleType.INNER_PRODUCT, enable_reuse=True,
                 enable_ub_reuse=False, is_partial_output=False, is_a2_b2_shared=False,
                 is_enable_channel_split=False, enable_kdim_reorder_load=False):
        super().__init__(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})


def _check(name, value, allowed):
    if int(value) not in allowed:
        raise ValueError(f"asc.adv.get_mm_config: {name} must be in {list(allowed)}, got "
                         f"{name}={value!r}")


def get_mm_config(*args, **kwargs) -> MatmulConfig:
    """pyasc's get_mm_config: a MatmulConfig from any of the parameter structs and a
    MatmulConfigMode, in any order."""
    f = dict(do_norm=True, do_multi_data_load=False, do_special_mdl=False,
             do_ib_share_norm=False, single_core_m=0, single_core_n=0, single_core_k=0,
             basic_m=0, basic_n=0, basic_k=0, is_per_tensor=False, has_anti_quant_offset=False,
             is_n_batch=False, batch_mode=BatchMode.BATCH_LESS_THAN_L1, is_bias_batch=False,
             intrinsics_check=False, en_vec_nd2nz=False, enable_l1_cache_ub=False,
             do_mte2_preload=0, iterate_order=IterateOrder.ORDER_M,
             schedule_type=ScheduleType.INNER_PRODUCT, enable_reuse=False, enable_ub_reuse=False,
             is_partial_output=False, is_a2b2_shared=False, is_enable_channel_split=False,
             enable_kdim_reorder_load=False)
    for arg in list(args) + list(kwargs.values()):
        if isinstance(arg, (MatmulShapeParams, MatmulQuantParams, MatmulBatchParams)):
            f.update(vars(arg))
        elif isinstance(arg, MatmulFuncParams):
            p = vars(arg)
            f.update(intrinsics_check=p["intrinsics_limit"], en_vec_nd2nz=p["en_vec_nd2_nz"],
                     enable_l1_cache_ub=p["enable_l1_cache"],
                     do_mte2_preload=p["do_mte2_pre_load"],
                     **{k: p[k] for k in ("iterate_order", "schedule_type", "enable_reuse",
                                          "enable_ub_reuse", "is_partial_output",
                                          "is_enable_channel_split", "enable_kdim_reorder_load")},
                     is_a2b2_shared=p["is_a2_b2_shared"])
        elif isinstance(arg, MatmulConfigMode):
            key = {MatmulConfigMode.CONFIG_NORM: "do_norm",
                   MatmulConfigMode.CONFIG_MDL: "do_multi_data_load",
                   MatmulConfigMode.CONFIG_SPECIALMDL: "do_special_mdl",
                   MatmulConfigMode.CONFIG_IBSHARE: "do_ib_share_norm"}[arg]
            f[key] = True
        else:
            raise TypeError(f"asc.adv.get_mm_config: arguments must be MatmulShapeParams, "
                            f"MatmulQuantParams, MatmulBatchParams, MatmulFuncParams or a "
                            f"MatmulConfigMode, got {arg!r}")
    _check("batch_mode", f["batch_mode"], (1, 2, 3))
    _check("iterate_order", f["iterate_order"], (0, 1, 2))
    _check("schedule_type", f["schedule_type"], (0, 1))
    _check("do_mte2_preload", f["do_mte2_preload"], (0, 1, 2))
    return MatmulConfig(**f)


def get_normal_config(intrinsics_limit=False, batch_loop=False, is_vec_nd2nz=False,
                      bmm_mode=BatchMode.BATCH_LESS_THAN_L1, is_msg_reuse=True,
                      iterate_order=IterateOrder.UNDEF, schedule_type=ScheduleType.INNER_PRODUCT,
                      en_unit_flag=True, enable_mix_dual_master=False) -> MatmulConfig:
    return MatmulConfig(do_norm=True, **_named(locals()))


def get_mdl_config(intrinsics_limit=False, batch_loop=False, do_mte2_preload=0,
                   is_vec_nd2nz=False, is_per_tensor=False, has_anti_quant_offset=False,
                   en_unit_flag=False, is_msg_reuse=True, enable_ub_reuse=True,
                   enable_l1_cache_ub=False, enable_mix_dual_master=False,
                   enable_kdim_reorder_load=False) -> MatmulConfig:
    _check("do_mte2_preload", do_mte2_preload, (0, 1, 2))
    return MatmulConfig(do_multi_data_load=True, **_named(locals()))


def get_special_mdl_config(intrinsics_limit=False, batch_loop=False, do_mte2_preload=0,
                           is_vec_nd2nz=False, is_per_tensor=False,
                           has_anti_quant_offset=False) -> MatmulConfig:
    _check("do_mte2_preload", do_mte2_preload, (0, 1, 2))
    return MatmulConfig(do_special_mdl=True, **_named(locals()))


def get_ib_share_norm_config(intrinsics_limit=False, batch_loop=False, is_vec_nd2nz=False,
                             bmm_mode=BatchMode.BATCH_LESS_THAN_L1, is_double_cache=False,
                             en_unit_flag=True) -> MatmulConfig:
    return MatmulConfig(do_ib_share_norm=True, **_named(locals()))


def get_basic_config(basic_m, basic_n, basic_k, intrinsics_limit=False, batch_loop=False,
                     bmm_mode=BatchMode.BATCH_LESS_THAN_L1) -> MatmulConfig:
    return MatmulConfig(do_norm=True, **_named(locals()))


def get_special_basic_config(basic_m, basic_n, basic_k, single_core_m, single_core_n,
                             single_core_k, step_m, step_n, intrinsics_limit=False,
                             batch_loop=False, bmm_mode=BatchMode.BATCH_LESS_THAN_L1
                             ) -> MatmulConfig:
    return MatmulConfig(do_norm=True, **_named(locals()))


def _named(local_vars):
    return {k: v for k, v in local_vars.items() if not k.startswith("_")}


CONFIG_CALLS = ("get_mm_config", "get_normal_config", "get_mdl_config", "get_special_mdl_config",
                "get_ib_share_norm_config", "get_basic_config", "get_special_basic_config",
                "MatmulShapeParams", "MatmulQuantParams", "MatmulBatchParams", "MatmulFuncParams")
ENUMS = (MatmulConfigMode, BatchMode, IterateOrder, ScheduleType)

__all__ = ["MatmulConfigMode", "BatchMode", "IterateOrder", "ScheduleType", "MatmulShapeParams",
           "MatmulQuantParams", "MatmulBatchParams", "MatmulFuncParams", "get_mm_config",
           "get_normal_config", "get_mdl_config", "get_special_mdl_config",
           "get_ib_share_norm_config", "get_basic_config", "get_special_basic_config",
           "CONFIG_CALLS", "ENUMS"]
