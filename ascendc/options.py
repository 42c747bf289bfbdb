"""Checked-mode options (fidelity traps that make kernels which only work by luck fail here),
the interpret/compiled choice, and the names of `@asc.jit` / launch options (jit.py)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .lang import core
from .lang.prims import ktype as KT
from .lang.state import FLAG_GM_ORDER, FLAG_REPORT_OVERREACH, FLAG_SANITIZE


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
    - check_gm_order: in a launch whose cores synchronise with each other (MIX kernels,
      cross-core / inter-block flags), GM one core writes and another reads without a flag
      ordering the two is a kernel fault naming both sides (rt/gmorder.py).
    - sanitize: primitives record each memory access, allocation and flag, and every launch's
      blocks are analysed and reported by the active sanitizer (ascendc/sanitize; off by default,
      on under `python -m ascendc.sanitize` / `asc.sanitize()`).
    """
    nan_fill: bool = True
    defer_gm_visibility: bool = True
    shuffle_blocks: bool = True
    report_rounding: bool = True
    report_gm_overreach: bool = True
    sanitize: bool = False
    check_gm_order: bool = True

    @property
    def flags(self) -> int:
        return ((core.FLAG_NAN_FILL if self.nan_fill else 0)
                | (core.FLAG_DEFER if self.defer_gm_visibility else 0)
                | (core.FLAG_REPORT_ROUNDING if self.report_rounding else 0)
                | (FLAG_REPORT_OVERREACH if self.report_gm_overreach else 0)
                | (FLAG_SANITIZE if self.sanitize else 0)
                | (FLAG_GM_ORDER if self.check_gm_order else 0))


UNCHECKED = CheckedOptions(False, False, False, False, False, check_gm_order=False)
CHECKED = CheckedOptions()
# under the sanitizer, GM order between cores is racecheck's (ascendc/sanitize/gmrace.py): it
# reports both sides and lets the launch finish, where the execution-time check stops it
SANITIZED = CheckedOptions(sanitize=True, check_gm_order=False)
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


# options of `@asc.jit(...)` and of a launch `kernel[...](..., option=value)`: ours, then pyasc's
# CodegenOptions / CompileOptions fields (accepted; only kernel_type and matmul_cube_only change
# anything: there is no bisheng or IR dump, and LocalTensorAuto's syncs are always recorded)
OWN_OPTIONS = ("interpret", "checked", "soc", "kernel_type", "core_num", "stream")
PYASC_OPTIONS = ("capture_exceptions", "ir_multithreading", "debug", "strip_loc", "verify_sync",
                 "print_ir_before_all", "run_passes", "opt_level", "auto_sync", "auto_sync_log",
                 "bisheng_options", "always_compile", "matmul_cube_only", "insert_sync")
OPTIONS = OWN_OPTIONS + PYASC_OPTIONS


def kernel_type_of(value, where: str) -> int:
    """A kernel type given as pyasc's KernelType, its name, or its value -> ktype's int."""
    v = getattr(value, "name", value)
    if isinstance(v, str) and v.upper() in KT.KERNEL_TYPES:
        return KT.KERNEL_TYPES[v.upper()]
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and \
            int(v) in KT.KERNEL_TYPES.values():
        return int(v)
    raise ValueError(f"{where}: kernel_type must be one of {', '.join(KT.KERNEL_TYPES)} (or "
                     f"pyasc's asc.runtime.config.KernelType), got kernel_type={value!r}")
