"""The one table of TPositions and memory levels; everything else reads it.

A TPosition (`asc.TPosition`, Ascend C's values) names where a buffer lives; a level is one of the
core's local memories, laid out back to back in the core's `mem` (core.layout) in LEVELS order.
The tuples and arrays below the tables are generated from them at import: njit code reads them as
compile-time constants.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .enums import TPosition

__all__ = ["Level", "Position", "LEVELS", "POSITIONS", "UB", "L1", "L0A", "L0B", "L0C", "BT",
           "GM_LEVEL", "NLEVELS", "LEVEL_NAMES", "NPOS", "POSITION_NAMES", "POS_LEVEL", "POS_TQUE",
           "POS_NOTE", "TQUE_POSITIONS_TEXT", "TBUF_DEFAULT", "BT_BYTES", "level_bytes"]


@dataclass(frozen=True)
class Level:
    """A local memory of an AI Core: its name and its capacity (a SoC spec attribute of
    rt.soc, or a fixed number of bytes)."""
    name: str
    capacity: str | int
    note: str = ""

    def bytes(self, soc) -> int:
        return self.capacity if isinstance(self.capacity, int) else getattr(soc, self.capacity)


BT_BYTES = 1024

LEVELS = (
    Level("UB", "ub_bytes", "Unified Buffer: the vector unit's memory"),
    Level("L1", "l1_bytes", "cube inputs staged from GM"),
    Level("L0A", "l0a_bytes", "cube left operand (A2)"),
    Level("L0B", "l0b_bytes", "cube right operand (B2)"),
    Level("L0C", "l0c_bytes", "cube accumulator (CO1), fp32/int32"),
    Level("BT", BT_BYTES, "bias table (C2)"),
)
UB, L1, L0A, L0B, L0C, BT = range(len(LEVELS))
GM_LEVEL = -1          # "level" of global memory (not a local memory)
NLEVELS = len(LEVELS)
LEVEL_NAMES = tuple(lv.name for lv in LEVELS)


@dataclass(frozen=True)
class Position:
    """A TPosition: its enum member, its level (GM_LEVEL: global memory), whether a TQue may be
    declared there (in Ascend C), and a note."""
    pos: TPosition
    level: int
    tque: bool
    note: str = ""

    @property
    def name(self) -> str:
        return self.pos.name

    @property
    def value(self) -> int:
        return int(self.pos)


POSITIONS = (
    Position(TPosition.GM, GM_LEVEL, False, "global memory"),
    Position(TPosition.A1, L1, True, "A matrix staged in L1"),
    Position(TPosition.A2, L0A, True, "A matrix in L0A, cube input"),
    Position(TPosition.B1, L1, True, "B matrix staged in L1"),
    Position(TPosition.B2, L0B, True, "B matrix in L0B, cube input"),
    Position(TPosition.C1, L1, False, "bias staged in L1"),
    Position(TPosition.C2, BT, False, "bias table"),
    Position(TPosition.CO1, L0C, True, "cube result in L0C"),
    Position(TPosition.CO2, GM_LEVEL, True, "fixpipe writes GM directly"),  # GM on 910B
    Position(TPosition.VECIN, UB, True, "vector input"),
    Position(TPosition.VECOUT, UB, True, "vector output"),
    # a TQue may sit here too: pyasc's NPU tests declare TQue(TPosition.VECCALC, ...) and
    # Ascend C's toolchain accepts it (a UB queue like VECIN/VECOUT)
    Position(TPosition.VECCALC, UB, True, "vector scratch (TBuf or TQue); LCM is an alias"),
)
assert all(p.value == i for i, p in enumerate(POSITIONS)), "POSITIONS must be in value order"

NPOS = len(POSITIONS)
POSITION_NAMES = tuple(p.name for p in POSITIONS)
POS_LEVEL = np.array([p.level for p in POSITIONS], np.int64)        # by TPosition value
POS_TQUE = np.array([int(p.tque) for p in POSITIONS], np.int64)     # 1: a TQue may use it
POS_NOTE = tuple(p.note for p in POSITIONS)
# "VECIN, VECOUT, A1, ...": the TQue positions, vector ones first
TQUE_POSITIONS_TEXT = ", ".join(p.name for p in sorted(
    (p for p in POSITIONS if p.tque), key=lambda p: (p.level != UB, p.value)))
TBUF_DEFAULT = TPosition.VECCALC      # TBuf(pos=...) default


def level_bytes(soc) -> list[int]:
    """Capacity of each level of `soc`, in LEVELS order."""
    return [lv.bytes(soc) for lv in LEVELS]
