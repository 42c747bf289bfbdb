"""Simulate one recorded kernel launch on its SoC (what `rt.profile(npu=True)` and
`asc.npu_trace` replay): which cores the blocks go to, then `sim.simulate`."""
from __future__ import annotations

from .model import pipe_model
from .sim import Timeline, simulate

_CUBE_SIDE = frozenset({"CUBE", "MTE1", "FIXPIPE"})


def launch_cores(blocks: list, model, roles: tuple = ()) -> int:
    """The cores a launch's blocks are placed on: a kernel with cube work runs on the AI Cores
    (AIC count); a vector-only kernel on a separated SoC (910B) on its vector cores (AIV count).
    A launch of groups of `roles` (rt/npu/xcore.py): AI Cores if it has an AIC, else the cores
    of its one kind."""
    if roles:
        return model.aiv_cores if model.separated and "AIC" not in roles else model.aic_cores
    cube = any(i.pipe in _CUBE_SIDE for blk in blocks for i in blk)
    return model.aiv_cores if model.separated and not cube else model.aic_cores


def simulate_launch(blocks: list, soc, n_cores: int | None = None, roles: tuple = ()
                    ) -> Timeline:
    """Replay per-block instruction lists on `soc` (name or SocSpec) with `n_cores` cores (default
    `launch_cores`); `roles`: the lists are a MIX launch's instances, group by group
    (`sim.simulate`)."""
    model = pipe_model(soc)
    return simulate(blocks, model, n_cores or launch_cores(blocks, model, roles), roles=roles)
