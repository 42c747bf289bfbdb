"""Addresses -> arrays inside compiled kernels (used by the generated `_run`, codegen.py).

A numpy array passed from Python into njit code gets a new NRT reference-counted MemInfo that
owns a reference to the Python array. A fault raised in a primitive unwinds through the Numba
frames between it and `_run` without releasing their references (Numba does not clean up on that
path), so every faulting launch used to leak those MemInfos and the views they held.
`_run` therefore receives addresses and lengths, and rebuilds its arrays with `numba.carray`:
such arrays have no MemInfo, so a leaked reference costs nothing. The Python caller keeps the
memory alive for the duration of the call.
"""
from __future__ import annotations

from ..lang.prims.memops import voidptr

__all__ = ["voidptr"]
