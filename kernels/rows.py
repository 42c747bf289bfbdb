"""Kernel helpers shared by the row-wise kernels (softmax, layernorm, rmsnorm): move rows of a
GM tensor to UB and back (each row 32-byte padded in UB by data_copy_pad), read a reduction's
scalar result."""
from __future__ import annotations

import ascendc as asc


@asc.jit
def load_rows(q, g, off, nrows, width, gm_gap):
    """CopyIn: `nrows` rows of `width` elements from g[off:] (rows `gm_gap` bytes apart after
    their data), each row 32-byte padded in UB; returns the dequeued tensor."""
    t = q.alloc_tensor(g.dtype)
    asc.data_copy_pad(t, g[off:], asc.DataCopyExtParams(block_count=nrows,
                                                        block_len=width * g.dtype.sizeof(),
                                                        src_stride=gm_gap))
    q.enque(t)
    return q.deque(g.dtype)


@asc.jit
def store_rows(q, g, off, nrows, width, gm_gap):
    """CopyOut: dequeue a tensor of 32-byte-padded rows and write `nrows` x `width` to g[off:]."""
    t = q.deque(g.dtype)
    asc.data_copy_pad(g[off:], t, asc.DataCopyExtParams(block_count=nrows,
                                                        block_len=width * g.dtype.sizeof(),
                                                        dst_stride=gm_gap))
    q.free_tensor(t)


@asc.jit
def scalar_of(red):
    """red[0] as a scalar once the vector pipe has written it (V -> S synchronisation)."""
    asc.set_flag(asc.HardEvent.V_S, 0)
    asc.wait_flag(asc.HardEvent.V_S, 0)
    return red.get_value(0)
