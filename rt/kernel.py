"""The contract between rt and a kernel binary (what `rt.launch` runs; rt never imports a compiler).

A kernel binary is any object that satisfies `KernelBinary`: `ascendc`'s compiled and interpreted
binaries do, and so can a plain Python class in a test. Faults inside a block are reported by
raising `rt.errors.KernelFault` (which carries the block index); any other exception is a fault of
the first block of the range that raised it.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class KernelBinary(Protocol):
    """What rt needs from a kernel binary (the object `rt.launch` enqueues).

    - `name`: the kernel's name, used in profiles and error messages;
    - `run_blocks(first, last, block_dim, args, barrier=None)`: run blocks `first <= block_idx <
      last` of a launch of `block_dim` blocks on `args`; for a `needs_all_resident` binary rt calls
      it one block at a time with the launch's `rt.resident.BlockBarrier` as `barrier` (others get
      no barrier argument);
    - `needs_all_resident`: every block must run at once (its kernel calls SyncAll);
    - `shuffle_blocks`: start the blocks of a resident launch in random order (checked mode);
    - `counters`: the names of the per-launch counters the binary keeps (may be empty);
    - `last_counters`: their values after the latest launch; the profiler adds them to its record;
    - optional `interruptible` (default True): False for code a device reset cannot stop mid-range
      (nopython code); a synchronising thread then never runs its blocks itself, so a reset can
      always release it;
    - optional `kernel_type_name`: the Ascend C kernel type the launch runs as (AIV_ONLY, AIC_ONLY,
      MIX_AIC_1_2, ...), shown in profiles (record args, op_summary's `kernel_type` column).
    A class that subclasses `KernelBinary` inherits the defaults (a plain binary: not resident, no
    shuffling, no counters) and only defines `name` and `run_blocks`.
    """

    name: str
    needs_all_resident: bool = False
    shuffle_blocks: bool = False
    counters: tuple[str, ...] = ()
    last_counters: dict = {}      # replaced (never mutated) by a binary after each launch

    def run_blocks(self, first: int, last: int, block_dim: int, args: tuple,
                   barrier: Any = None) -> None: ...



#: The members `KernelBinary` declares (what `rt.launch` checks a binary for).
MEMBERS = ("name", "run_blocks", "needs_all_resident", "shuffle_blocks", "counters",
           "last_counters")


def missing_members(binary) -> list[str]:
    """The `KernelBinary` members `binary` lacks (`name` must be a str, `run_blocks` callable)."""
    out = [m for m in MEMBERS if not hasattr(binary, m)]
    if "name" not in out and not isinstance(binary.name, str):
        out.append("name (a str)")
    if "run_blocks" not in out and not callable(binary.run_blocks):
        out.append("run_blocks (callable)")
    return out
