"""Kernels written in the kernel language, each with a tiling dataclass, a host wrapper and a
numpy reference: add, softmax, layernorm/rmsnorm, matmul (cube path), flash_attention."""
__all__ = ["tolerances"]
