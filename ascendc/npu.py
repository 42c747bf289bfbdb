"""`asc.npu_trace`: run a kernel in interpret mode with the NPU view's recorder on and replay
what its blocks issued on the pipe model of the SoC (DESIGN §6, issue 9; rt/npu/sim.py).

    tl = asc.npu_trace(add_kernel, 8, x, y, z, n // 8, 512)
    tl.us, tl.pipe_busy("MTE2")
    asc.npu_trace(add_kernel, 8, x, y, z, n // 8, 512, out="prof")   # + rt.npu.write_all files

The simulated time is deterministic: the same kernel and arguments give the same cycles on any
machine. Cube and vector work of a block run on one core here (the AIC/AIV split of 910B is not
modelled yet): a block that issues CUBE, MTE1 or FIXPIPE work is placed on the AI Cores (AIC
count), a vector-only kernel on a separated SoC on its vector cores (AIV count).
"""
from __future__ import annotations

import rt
from rt.npu import Timeline, pipe_model, simulate, write_all

from .lang.record import Recorder, recording

__all__ = ["npu_trace"]

_CUBE_SIDE = {"CUBE", "MTE1", "FIXPIPE"}


def npu_trace(kernel, block_dim: int, *args, soc=None, n_cores: int | None = None,
              out=None) -> Timeline:
    """Launch `kernel[block_dim](*args)` interpreted on `soc` with recording on, then simulate
    it. `n_cores` overrides the number of cores the blocks are placed on. With `out` (a
    directory), also write npu_trace.json, PipeUtilization.csv and code_exe.csv there
    (`rt.npu.write_all`)."""
    spec = rt.get_soc(soc)
    rec = Recorder()
    with recording(rec):
        kernel[block_dim](*args, interpret=True, soc=spec.name)
        rt.current_stream().synchronize()
    blocks = rec.blocks(block_dim)
    model = pipe_model(spec)
    if n_cores is None:
        cube = any(i.pipe in _CUBE_SIDE for blk in blocks for i in blk)
        n_cores = model.aiv_cores if model.separated and not cube else model.aic_cores
    tl = simulate(blocks, model, n_cores)
    if out is not None:
        write_all(tl, out, spec.name)
    return tl
