"""rt.npu: a deterministic discrete-event model of an AI Core's pipes (DESIGN §6, issue 9).

`model.PipeModel` holds the per-SoC constants (each cited in docs/npu-model.md or marked as an
assumption); `sim.simulate` replays per-block instruction recordings (`sim.Instr`) on them and
returns a `sim.Timeline`. Standard library and numpy only: the kernel language records, rt
replays.
"""
from .model import PipeModel, pipe_model
from .sim import PIPES, Instr, Timeline, simulate

__all__ = ["PipeModel", "pipe_model", "PIPES", "Instr", "Timeline", "simulate"]
