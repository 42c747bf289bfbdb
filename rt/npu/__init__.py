"""rt.npu: a deterministic discrete-event model of an AI Core's pipes (docs/npu-model.md).

`model.PipeModel` holds the per-SoC constants (each cited in docs/npu-model.md or marked as an
assumption); `sim.simulate` replays per-block instruction recordings (`instr.Instr`) on them with
a `sim.Simulator` (its cores: `core.Core`, their pipes and cost rules: `pipe.Pipe`, `pipe.op_cost`;
L2: `l2`; the as-if AIC/AIV split of one stream: `mix`; a MIX kernel's instances on their
own cores with cross-core flags: `xcore`) and returns an `instr.Timeline`; `export` writes it
the way msOpProf shows a simulation (trace JSON, PipeUtilization.csv, code_exe.csv, op_summary
columns); `plots` draws the roofline and the pipe-utilisation PNGs (matplotlib, imported only
when drawing). Standard library and numpy only: the kernel language records, rt replays.
"""
from .export import (code_exe, format_top_lines, op_summary_row, write_all, write_code_exe,
                     write_pipe_utilization, write_trace)
from .model import PipeModel, pipe_model
from .plots import (RooflinePoint, pipe_busy_ratios, roofline_ceilings, roofline_point,
                    write_pipe_chart_png, write_roofline_png)
from .sim import PIPES, Instr, Timeline, side_of, simulate, split_block
from .launch import launch_cores, simulate_launch

__all__ = ["PipeModel", "pipe_model", "PIPES", "Instr", "Timeline", "simulate", "write_trace",
           "write_pipe_utilization", "code_exe", "write_code_exe", "format_top_lines",
           "op_summary_row", "write_all", "side_of", "split_block", "RooflinePoint",
           "roofline_point", "roofline_ceilings", "write_roofline_png", "pipe_busy_ratios",
           "write_pipe_chart_png", "launch_cores", "simulate_launch"]

from .. import profiler as _profiler

_profiler.set_npu_view(simulate_launch, write_all)      # the profiler's NPU view (rt.profiler)
