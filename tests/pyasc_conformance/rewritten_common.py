"""Shared by the test-for-test rewrites of pyasc's tutorials and kernel tests.

pyasc's licence does not allow vendoring its files, so tests/pyasc_conformance/test_rewritten_*.py
are independently written equivalents: the same kernel behaviour through pyasc's names (`asc`,
`asc.lib.runtime`, `asc.lib.host`, `asc.runtime.config` as `python -m ascendc.run` provides
them), the same shapes and the same reference checks, numpy instead of torch. Each test names
the upstream file it mirrors. The kernels are module-level, so a compiled kernel is built once
per process (and then comes from the kernel cache).
"""
from ascendc import pyasc_compat

with pyasc_compat.installed():
    import asc
    import asc.lib.host as host
    import asc.lib.runtime as rt
    import asc.runtime.config as config

MODES = ("interpret", "compiled")


def launch(kernel, blocks, *args, mode, **kw):
    """kernel[blocks, current stream](*args) in `mode`, then wait for it."""
    kernel[blocks, rt.current_stream()](*args, interpret=(mode == "interpret"), **kw)
    rt.synchronize()


def model_platform():
    config.set_platform(config.Backend.Model)


__all__ = ["asc", "host", "rt", "config", "MODES", "launch", "model_platform"]
