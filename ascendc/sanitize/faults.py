"""A block's fault (a KernelError the checked-mode rules raised) as a Finding of its npu-check
class. The block stopped at the fault (as the NPU traps on it); the launch's other blocks go on.

A fault's args are `(template, *values)` (lang/errors.py); the template says which rule broke.
"""
from __future__ import annotations

from ..lang.errors import GMReadError, GMWriteError
from .report import Finding

# (words of the template, class, msSanitizer kind); the first that matches wins
_RULES = (
    ("freed twice", "Free", "double free"),
    ("every tensor must be freed", "Leak", "tensor never freed"),
    ("a matching set_flag must come first", "Sync3", "wait_flag without its set_flag"),
    ("sync_all the same number of times", "Sync3", "sync_all not matched across blocks"),
    ("cross-core deadlock", "Sync3", "cross_core_wait_flag never released by a set"),
    ("event_id must be in", "Sync4", "event id out of range"),
    ("event must be a HardEvent", "Sync4", "event out of range"),
    ("got a freed buffer", "Buffer4", "freed buffer enqueued"),
    ("got a foreign tensor", "Buffer4", "tensor of another queue"),
    ("must be initialised with pipe.init_buffer", "Buffer0", "queue used before init_buffer"),
    ("must not be used after TPipe.destroy", "Buffer0", "queue used after release"),
    ("a free buffer must be available", "Buffer1", "alloc_tensor with no free buffer"),
    ("must not exceed depth", "Buffer1", "enque past the queue's depth"),
    ("must fit in", "Buffer1", "buffers past the memory's capacity"),
    ("must hold an enqueued tensor", "Buffer2", "deque of an empty queue"),
    ("must be dequeued before it is freed", "Buffer2", "free_tensor of an enqueued tensor"),
    ("must be <= the buffer's", "Buffer3", "tensor past its buffer"),
    ("must fit the buffer's", "Buffer3", "tensor past its buffer"),
    ("offset must be in [0,", "Buffer3", "tensor view past its end"),
    ("index must be in [0,", "Buffer3", "element index past the tensor's end"),
    ("must end inside the", "Buffer3", "tensor past its memory"),
)


def _size_of(e, gms, k) -> int:
    try:
        first, last = int(e.args[-2]), int(e.args[-1])
        return max(last - first, 0) * gms[k][0].dtype.storage.itemsize
    except (IndexError, TypeError, ValueError, AttributeError):
        return 0


def classify(e, kernel: str, block: str, where, gms, gm_names) -> Finding:
    """The Finding of fault `e` of `kernel`'s block `block` at source `where`."""
    msg = str(e)
    for i, n in enumerate(gm_names):
        msg = msg.replace(f"argument #{i} ", f"argument {n!r} ")
    template = e.args[0] if e.args and isinstance(e.args[0], str) else msg
    if isinstance(e, (GMReadError, GMWriteError)):
        write = isinstance(e, GMWriteError)
        k = int(e.args[2]) if len(e.args) > 2 and isinstance(e.args[2], int) else -1
        size = _size_of(e, gms, k) if 0 <= k < len(gms) else 0
        name = gm_names[k] if 0 <= k < len(gm_names) else f"#{k}"
        addr = ""
        if 0 <= k < len(gms):
            first = int(e.args[-2]) * gms[k][0].dtype.storage.itemsize
            addr = f"GM argument {name!r} offset {first} (argument of {gms[k][0].nbytes} bytes)"
        return Finding("Write2" if write else "Read3",
                       f"illegal {'write' if write else 'read'} of size {size}", kernel, block,
                       where, addr, detail=msg)
    if "aligned" in template:
        side = e.args[2] if len(e.args) > 2 and isinstance(e.args[2], str) else ""
        write = side.startswith("dst") or "write" in template
        return Finding("Write4" if write else "Read4",
                       f"misaligned {'write' if write else 'read'}", kernel, block, where,
                       detail=msg)
    if "must hold count elements" in template:
        side = e.args[2] if len(e.args) > 2 and isinstance(e.args[2], str) else ""
        write = side.startswith("dst")
        return Finding("Write2" if write else "Read3",
                       f"illegal {'write' if write else 'read'} of local memory", kernel, block,
                       where, detail=msg)
    for words, cls, kind in _RULES:
        if words in template:
            return Finding(cls, kind, kernel, block, where, detail=msg)
    return Finding("Fault", "kernel fault", kernel, block, where, detail=msg)
