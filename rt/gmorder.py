"""Unordered GM workspace between the cores of one launch (checked mode).

On the NPU, GM that one core (an AIC or AIV instance) writes is seen by another only once a
synchronisation orders the two: a cross-core flag set after the write and waited on before the
read, an ib_set -> ib_wait, or a SyncAll. A kernel that reads the workspace without that order
reads stale or half-written data depending on timing. Here each instance carries a vector clock
(`Instance.vc`, advanced by rt.crossflags at each set / wait / barrier: the happens-before order
the flags give), and each GM range an instance of the launch accesses is recorded with the
instance's clock and source line. A read of bytes another instance wrote, a write of bytes
another instance read, or a write of bytes another instance wrote, that the flags do not order
is reported, naming both sides, whichever of the two ran first on this machine (so the report
does not depend on thread timing).

Two writes of one range count: two cores writing the same bytes with no flag between them leave
whichever landed last, a race, unless both are atomic adds (a fixpipe under `set_atomic_add`,
api `ATOMIC_API`): those accumulate in any order. An atomic add still conflicts with another
core's read or plain write of the bytes. Reads of one range by several cores never conflict. A
strided access is recorded row by row (`rows` rows `step` bytes apart), so cores writing
interleaved rows or column blocks of one matrix do not overlap. A record is kept per (instance,
range, kind), its latest clock only (an access ordered after the latest one of an instance is
ordered after its earlier ones), in buckets of `PAGE` bytes.
"""
from __future__ import annotations

__all__ = ["GMOrder", "join", "PAGE_BITS"]

PAGE_BITS = 16          # records are bucketed by 64 KiB of GM
ATOMIC_API = "asc.fixpipe (atomic add)"     # ascendc.lang.crosscore.GM_APIS[7]


def join(into: list, other) -> None:
    """Vector clock `into` = max(into, other), element-wise."""
    if other is None:
        return
    for k, c in enumerate(other):
        if c > into[k]:
            into[k] = c


class GMOrder:
    """The GM accesses of one launch's instances (called under the launch's lock)."""

    def __init__(self):
        self._pages = {}      # page -> {(instance index, lo, hi, write): (clock, instance, line)}

    def access(self, inst, lo: int, nbytes: int, write: bool, api: str, where, rows: int = 1,
               step: int = 0) -> str:
        """Record instance `inst` reading (or writing) GM bytes [lo, lo + nbytes) in `api` (and
        `rows` - 1 more rows of nbytes, each `step` bytes after the previous); returns the error
        message of an access by another instance it is unordered with, or ''. `where()` gives
        the source line of this access (called only for a message: the record keeps the
        callable)."""
        if nbytes <= 0:
            return ""
        if write and api == ATOMIC_API:
            write = 2           # an atomic add: does not conflict with another atomic add
        for r in range(max(rows, 1)):
            msg = self._row(inst, lo + r * step, nbytes, write, api, where)
            if msg:
                return msg
        return ""

    def _row(self, inst, lo, nbytes, write, api, where) -> str:
        hi = lo + nbytes
        i, vc = inst.index, inst.vc
        pages = range(lo >> PAGE_BITS, ((hi - 1) >> PAGE_BITS) + 1)
        for p in pages:
            recs = self._pages.get(p)
            if not recs:
                continue
            for (j, a, b, w), (clock, other, line) in recs.items():
                if j != i and (w or write) and (w != 2 or write != 2) and a < hi and lo < b \
                        and clock > vc[j]:
                    return self._message(api, inst, lo, hi, write, where, other, a, b, w, line)
        rec = (vc[i], inst, where)
        key = (i, lo, hi, write)
        for p in pages:
            self._pages.setdefault(p, {})[key] = rec
        return ""

    @staticmethod
    def _message(api, inst, lo, hi, write, where, other, a, b, other_write, line) -> str:
        here = where() if where is not None else None
        line = line() if line is not None else None
        this = (f"{inst.name} {'writing' if write else 'reading'} GM bytes [{lo:#x}, {hi:#x}) "
                f"at {here or '?'}")
        that = (f"{other.name} {'writing' if other_write else 'reading'} [{a:#x}, {b:#x}) at "
                f"{line or '?'}")
        if write and other_write:
            return (f"{api}: GM two cores write must be ordered by a cross-core flag "
                    f"(cross_core_set_flag after one write, cross_core_wait_flag before the "
                    f"other), ib_set -> ib_wait or sync_all, or both be atomic adds "
                    f"(set_atomic_add; plain writes have no atomic accumulation: the later "
                    f"write wins, a race), got {that} and {this} with no flag between them")
        first, second = (this, that) if write else (that, this)     # the writer first
        return (f"{api}: GM one core writes and another reads must be ordered by a "
                f"cross-core flag (cross_core_set_flag after the write, cross_core_wait_flag "
                f"before the read), ib_set -> ib_wait or sync_all (unordered GM workspace), got "
                f"{first} and {second} with no flag between them")
