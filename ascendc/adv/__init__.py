"""`asc.adv`: pyasc's high-level APIs. Supported: the activations (`tanh`, `sigmoid`, `gelu`,
`silu`, `swish`, `swiglu`: activation.py), `get_mm_config` and the other Matmul configuration
helpers with their parameter structs (mmconfig.py), `rmsnorm` / `RmsNormTiling` and
`layernorm` / `LayerNormTiling` (norm.py), `softmax_flash_v2` with `SoftMaxShapeInfo` /
`SoftmaxConfig` / `SoftmaxMode` (flashsoftmax.py), the
Matmul family (`Matmul`, `MatmulType`,
`MatmulConfig`, `register_matmul`, `TCubeTiling`, `LayoutMode`), `quant` / `QuantConfig`
(AscendQuant, per tensor) and `softmax` / `SoftmaxTiling` (SoftMax, ND format); the host-side
tiling is `asc.lib.host` (= `ascendc.host`)."""
from ..lang.surface import Extension, register_extension
from . import lowering, memalloc
from .matmul import LayoutMode, Matmul, MatmulConfig, MatmulType, register_matmul
from .mmkernel import nd2nz_strips
from .quant import QuantConfig, quant
from .softmax import SoftmaxTiling, softmax
from .tiling import TCubeTiling
from .activation import gelu, sigmoid, silu, swiglu, swish, tanh
from .mmconfig import (BatchMode, IterateOrder, MatmulBatchParams, MatmulConfigMode,
                       MatmulFuncParams, MatmulQuantParams, MatmulShapeParams, ScheduleType,
                       get_basic_config, get_ib_share_norm_config, get_mdl_config, get_mm_config,
                       get_normal_config, get_special_basic_config, get_special_mdl_config)
from .norm import LayerNormTiling, RmsNormTiling, layernorm, rmsnorm
from .flashsoftmax import SoftMaxShapeInfo, SoftmaxConfig, SoftmaxMode, softmax_flash_v2
from .names import PROVIDED, unsupported_message

register_extension(Extension("adv", lowering=lowering))
# asc.LocalMemAllocator (exported by ascendc): its compiled form is an Extension's assign hook
register_extension(Extension("LocalMemAllocator", lowering=memalloc))

__all__ = ["Matmul", "MatmulType", "MatmulConfig", "register_matmul", "TCubeTiling", "LayoutMode",
           "nd2nz_strips", "quant", "QuantConfig", "softmax", "SoftmaxTiling", "tanh", "sigmoid",
           "gelu", "silu", "swish", "swiglu", "MatmulConfigMode", "BatchMode", "IterateOrder",
           "ScheduleType", "MatmulShapeParams", "MatmulQuantParams", "MatmulBatchParams",
           "MatmulFuncParams", "get_mm_config", "get_normal_config", "get_mdl_config",
           "get_special_mdl_config", "get_ib_share_norm_config", "get_basic_config",
           "get_special_basic_config", "rmsnorm", "RmsNormTiling", "layernorm", "LayerNormTiling",
           "softmax_flash_v2",
           "SoftMaxShapeInfo", "SoftmaxConfig", "SoftmaxMode"]
if sorted(__all__) != sorted(PROVIDED):     # names.py is what the compiler reads
    raise ImportError(f"ascendc.adv: names.PROVIDED must list __all__, got {PROVIDED}")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(unsupported_message(name))
