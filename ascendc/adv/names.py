"""The names `asc.adv` provides, and what using another one says (both modes)."""

PROVIDED = ("Matmul", "MatmulType", "MatmulConfig", "register_matmul", "TCubeTiling",
            "LayoutMode", "nd2nz_strips", "quant", "QuantConfig", "softmax", "SoftmaxTiling",
            "tanh", "sigmoid", "gelu", "silu", "swish", "swiglu", "MatmulConfigMode", "BatchMode",
            "IterateOrder", "ScheduleType", "MatmulShapeParams", "MatmulQuantParams",
            "MatmulBatchParams", "MatmulFuncParams", "get_mm_config", "get_normal_config",
            "get_mdl_config", "get_special_mdl_config", "get_ib_share_norm_config",
            "get_basic_config", "get_special_basic_config", "rmsnorm", "RmsNormTiling",
            "layernorm", "LayerNormTiling",
            "softmax_flash_v2", "SoftMaxShapeInfo", "SoftmaxConfig", "SoftmaxMode")


def unsupported_message(name: str) -> str:
    return (f"asc.adv.{name} is not supported by ascend-emu (asc.adv provides: "
            f"{', '.join(sorted(PROVIDED))})")
