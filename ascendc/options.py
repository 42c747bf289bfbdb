"""Checked-mode options: fidelity traps that make kernels which only work by luck fail here."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .lang import core
from .lang.state import FLAG_REPORT_OVERREACH


@dataclass(frozen=True)
class CheckedOptions:
    """Fidelity traps (all on in the tests; `ASCENDC_CHECKED=1` or `@asc.jit(checked=True)`).

    - nan_fill: fresh local memory is filled with NaN (0xFF bytes) at each block's start.
    - defer_gm_visibility: a GM->local copy becomes visible only when its tensor is dequeued (or
      at wait_flag(MTE2_*) / pipe_barrier(MTE2|ALL)), so a missing enque/deque gives a wrong answer
      here, as on hardware.
    - shuffle_blocks: blocks run in a shuffled order.
    - report_rounding: data_copy calls whose count*sizeof was rounded down to 32 bytes are
      reported with a warning after the launch.
    - report_gm_overreach: GM accesses past an argument's end but inside its allocation (they
      run, as on hardware) are reported with a warning after the launch (lang/gmreach.py).
    """
    nan_fill: bool = True
    defer_gm_visibility: bool = True
    shuffle_blocks: bool = True
    report_rounding: bool = True
    report_gm_overreach: bool = True

    @property
    def flags(self) -> int:
        return ((core.FLAG_NAN_FILL if self.nan_fill else 0)
                | (core.FLAG_DEFER if self.defer_gm_visibility else 0)
                | (core.FLAG_REPORT_ROUNDING if self.report_rounding else 0)
                | (FLAG_REPORT_OVERREACH if self.report_gm_overreach else 0))


UNCHECKED = CheckedOptions(False, False, False, False, False)
CHECKED = CheckedOptions()
_default: list = []


def set_default_checked(opts: CheckedOptions | bool | None) -> None:
    """Set the process-wide default (tests turn everything on); None restores the env default."""
    _default[:] = [] if opts is None else [CHECKED if opts is True else
                                           UNCHECKED if opts is False else opts]


def default_checked() -> CheckedOptions:
    if _default:
        return _default[0]
    return CHECKED if os.environ.get("ASCENDC_CHECKED", "0") == "1" else UNCHECKED


def resolve(option) -> CheckedOptions:
    if option is None:
        return default_checked()
    if isinstance(option, CheckedOptions):
        return option
    return CHECKED if option else UNCHECKED


def interpret_mode(option) -> bool:
    """THE one place that decides interpret vs compiled: the jit option, else ASCENDC_INTERPRET."""
    if option is not None:
        return bool(option)
    return os.environ.get("ASCENDC_INTERPRET", "0") == "1"
