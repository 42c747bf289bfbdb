"""`import ascendc.lib.host as host` (pyasc spelling `asc.lib.host`): re-exports ascendc.host."""
from ..host import (CubeFormat, DataType, MatmulApiTiling, MultiCoreMatmulTiling, PlatformAscendC,
                    TPosition, get_ascendc_platform)

__all__ = ["get_ascendc_platform", "PlatformAscendC", "MatmulApiTiling", "MultiCoreMatmulTiling",
           "TPosition", "CubeFormat", "DataType"]
