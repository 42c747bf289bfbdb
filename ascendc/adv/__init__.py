"""`asc.adv`: pyasc's high-level APIs. Supported: the Matmul family (`Matmul`, `MatmulType`,
`MatmulConfig`, `register_matmul`, `TCubeTiling`, `LayoutMode`), `quant` / `QuantConfig`
(AscendQuant, per tensor) and `softmax` / `SoftmaxTiling` (SoftMax, ND format); the host-side
tiling is `asc.lib.host` (= `ascendc.host`)."""
from ..lang.surface import Extension, register_extension
from . import lowering
from .matmul import LayoutMode, Matmul, MatmulConfig, MatmulType, register_matmul
from .mmkernel import nd2nz_strips
from .quant import QuantConfig, quant
from .softmax import SoftmaxTiling, softmax
from .tiling import TCubeTiling

register_extension(Extension("adv", lowering=lowering))

__all__ = ["Matmul", "MatmulType", "MatmulConfig", "register_matmul", "TCubeTiling", "LayoutMode",
           "nd2nz_strips", "quant", "QuantConfig", "softmax", "SoftmaxTiling"]
