"""The identity of a kernel-language function: what `@asc.jit` wraps.

A bottom module: the compiler recognises kernels and helpers by this class, and `ascendc.jit`
builds launches on top of it, so neither has to import the other.
"""
from __future__ import annotations

import inspect

from .api import ConstExpr


def const_params(fn) -> set[str]:
    """Names of parameters annotated asc.ConstExpr / asc.ConstExpr[...]."""
    out = set()
    for name, p in inspect.signature(fn).parameters.items():
        ann = p.annotation
        if ann is ConstExpr or (isinstance(ann, str) and "ConstExpr" in ann):
            out.add(name)
    return out


class KernelFunction:
    """A Python function written in the kernel language: `fn`, its name, parameter names and the
    parameters that are compile-time constants (ConstExpr)."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.param_names = list(inspect.signature(fn).parameters)
        self.const_params = const_params(fn)


def is_kernel_function(v) -> bool:
    return isinstance(v, KernelFunction)
