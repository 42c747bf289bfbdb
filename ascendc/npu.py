"""`asc.npu_trace`: run one kernel launch with the NPU view on and return its simulated run on the
SoC's pipe model (docs/design.md, the NPU view; rt/npu/sim.py). The same as launching inside
`rt.profile(npu=True)` and taking `prof.npu_runs()[-1].timeline`.

    tl = asc.npu_trace(add_kernel, 8, x, y, z, n // 8, 512)             # interpret mode
    tl = asc.npu_trace(add_kernel, 8, x, y, z, n // 8, 512, interpret=False)   # compiled
    tl.us, tl.pipe_busy("MTE2")
    asc.npu_trace(add_kernel, 8, x, y, z, n // 8, 512, out="prof")   # + rt.npu.write_all files

The simulated time is deterministic: the same kernel and arguments give the same cycles on any
machine, in either mode.
"""
from __future__ import annotations

import rt
from rt.npu import Timeline, simulate_launch, write_all

__all__ = ["npu_trace"]


def npu_trace(kernel, block_dim: int, *args, soc=None, n_cores: int | None = None,
              out=None, interpret: bool = True, stream=None) -> Timeline:
    """Launch `kernel[block_dim](*args)` on `soc` (interpreted unless `interpret=False`) with the
    NPU view on, wait for it, and simulate what its blocks issued. `n_cores` overrides the number
    of cores the blocks are placed on (default: `rt.npu.launch_cores`). With `out` (a directory),
    also write npu_trace.json, PipeUtilization.csv and code_exe.csv there (`rt.npu.write_all`)."""
    spec = rt.get_soc(soc)
    rt.ensure_device()
    s = stream or rt.current_stream()
    with rt.profile(npu=True) as prof:
        kernel[block_dim, s](*args, interpret=interpret, soc=spec.name)
        s.synchronize()
    runs = prof.npu_runs(getattr(kernel, "__name__", None))
    if not runs:
        raise RuntimeError(f"npu_trace: the launch of {kernel!r} must be recorded, got no "
                           f"NPU-view recording (was it launched?)")
    run = runs[-1]
    tl = run.timeline if n_cores is None else simulate_launch(run.blocks, run.soc, n_cores,
                                                              roles=run.roles)
    if out is not None:
        write_all(tl, out, spec.name)
    return tl
