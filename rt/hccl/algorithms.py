"""HCCL's algorithms over a point-to-point transport (`rt.hccl.transport`), on device memory.

Every function runs on one rank (in its stream's worker thread) and talks to the others through
`ctx.ep` (isend / irecv); all ranks call the same function with the same counts, so both ends of
every transfer are posted in the same order. Buffers are `Buf`s: a device address and a typed
numpy view of the same bytes (the view is the emulator's way of touching device memory; the
address is what a reduction kernel is launched on).

- ring reduce-scatter: n-1 steps; at step s rank r sends segment (r-s-1) mod n to r+1 and
  reduces segment (r-s-2) mod n received from r-1 into its own, so rank r ends with segment r
  fully reduced. Each segment moves in chunks (`ctx.chunk` elements): chunk k+1 of a step is
  posted before chunk k is reduced, so the receiver reduces chunk k while the sender's thread
  copies chunk k+1.
- ring all-gather: n-1 steps; rank r forwards segment (r-s) mod n and receives (r-s-1) mod n.
- all-reduce = ring reduce-scatter + ring all-gather (HCCL's ring algorithm);
- reduce = ring reduce-scatter + a gather of the segments to the root;
- broadcast: a chunked pipeline along the ring starting at the root;
- scatter: the root sends each rank its part (star);
- all-to-all(v): pairwise exchange, all transfers posted at once;
- barrier: dissemination (ceil(log2 n) rounds of 1-byte messages).
"""
from __future__ import annotations

import numpy as np

from .transport import P2P_TAG


class Buf:
    """A range of device memory: `ptr` (address of element 0) and `arr` (1-D typed view)."""
    __slots__ = ("ptr", "arr")

    def __init__(self, ptr: int, arr: np.ndarray):
        self.ptr = int(ptr)
        self.arr = arr

    def sub(self, lo: int, hi: int) -> "Buf":
        return Buf(self.ptr + lo * self.arr.itemsize, self.arr[lo:hi])

    @property
    def u8(self) -> np.ndarray:
        return self.arr.view(np.uint8)

    def __len__(self) -> int:
        return self.arr.shape[0]


def even_segments(total: int, n: int) -> list[tuple[int, int]]:
    """`total` elements in n contiguous segments, the first `total % n` one longer."""
    q, rem = divmod(total, n)
    out, lo = [], 0
    for i in range(n):
        hi = lo + q + (1 if i < rem else 0)
        out.append((lo, hi))
        lo = hi
    return out


def _chunks(lo: int, hi: int, chunk: int) -> list[tuple[int, int]]:
    return [(a, min(a + chunk, hi)) for a in range(lo, hi, max(chunk, 1))]


def _wait_all(ctx, reqs) -> None:
    for r in reqs:
        r.wait(ctx.deadline, ctx.what)


def ring_reduce_scatter(ctx, data: Buf, segs, op: int) -> None:
    """In place on `data`: afterwards segment `segs[rank]` holds the reduction over all ranks."""
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    if n == 1:
        return
    nxt, prv = (r + 1) % n, (r - 1) % n
    width = max(hi - lo for lo, hi in segs)
    scratch = ctx.scratch(width, data.arr.dtype)
    for s in range(n - 1):
        slo, shi = segs[(r - s - 1) % n]
        rlo, rhi = segs[(r - s - 2) % n]
        sends, recvs = _chunks(slo, shi, ctx.chunk), _chunks(rlo, rhi, ctx.chunk)
        rreqs = [ep.irecv(prv, scratch.sub(a - rlo, b - rlo).u8, ctx.tag) for a, b in recvs]
        sreqs, done = [], 0
        for k, (a, b) in enumerate(sends):
            sreqs.append(ep.isend(nxt, data.sub(a, b).u8, ctx.tag))
            while done < min(k, len(recvs)):      # reduce chunk k-1 while k is on its way
                _reduce_chunk(ctx, data, scratch, recvs[done], rlo, rreqs[done], op)
                done += 1
        while done < len(recvs):
            _reduce_chunk(ctx, data, scratch, recvs[done], rlo, rreqs[done], op)
            done += 1
        _wait_all(ctx, sreqs)


def _reduce_chunk(ctx, data, scratch, chunk, base, req, op) -> None:
    a, b = chunk
    req.wait(ctx.deadline, ctx.what)
    ctx.reduce(op, data.sub(a, b), scratch.sub(a - base, b - base))


def ring_all_gather(ctx, data: Buf, segs) -> None:
    """In place on `data`: rank r holds segment r; afterwards every rank holds every segment."""
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    if n == 1:
        return
    nxt, prv = (r + 1) % n, (r - 1) % n
    for s in range(n - 1):
        slo, shi = segs[(r - s) % n]
        rlo, rhi = segs[(r - s - 1) % n]
        rreqs = [ep.irecv(prv, data.sub(a, b).u8, ctx.tag) for a, b in _chunks(rlo, rhi,
                                                                              ctx.chunk)]
        sreqs = [ep.isend(nxt, data.sub(a, b).u8, ctx.tag) for a, b in _chunks(slo, shi,
                                                                              ctx.chunk)]
        _wait_all(ctx, rreqs)                    # the next step forwards what arrived here
        _wait_all(ctx, sreqs)


def _copy(dst: Buf, src: Buf) -> None:
    if dst.ptr != src.ptr and len(dst):
        np.copyto(dst.u8, src.u8)


def all_reduce(ctx, send: Buf, recv: Buf, op: int) -> None:
    _copy(recv, send)
    segs = even_segments(len(recv), ctx.size)
    ring_reduce_scatter(ctx, recv, segs, op)
    ring_all_gather(ctx, recv, segs)


def reduce_scatter_v(ctx, send: Buf, segs, recv: Buf, op: int) -> None:
    """Rank r gets the reduction of segment `segs[r]` of every rank's `send` (ragged)."""
    end = max((hi for _, hi in segs), default=0)
    work = ctx.scratch(end, send.arr.dtype)
    _copy(work, send.sub(0, end))
    ring_reduce_scatter(ctx, work, segs, op)
    lo, hi = segs[ctx.rank]
    _copy(recv.sub(0, hi - lo), work.sub(lo, hi))


def all_gather_v(ctx, send: Buf, recv: Buf, segs) -> None:
    lo, hi = segs[ctx.rank]
    _copy(recv.sub(lo, hi), send.sub(0, hi - lo))
    ring_all_gather(ctx, recv, segs)


def reduce(ctx, send: Buf, recv: Buf | None, op: int, root: int) -> None:
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    count = len(send)
    segs = even_segments(count, n)
    work = ctx.scratch(count, send.arr.dtype)
    _copy(work, send)
    ring_reduce_scatter(ctx, work, segs, op)
    lo, hi = segs[r]
    if r != root:
        ep.isend(root, work.sub(lo, hi).u8, ctx.tag).wait(ctx.deadline, ctx.what)
        return
    reqs = [ep.irecv(i, recv.sub(*segs[i]).u8, ctx.tag) for i in range(n) if i != root]
    _copy(recv.sub(lo, hi), work.sub(lo, hi))
    _wait_all(ctx, reqs)


def broadcast(ctx, buf: Buf, root: int) -> None:
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    if n == 1:
        return
    pos = (r - root) % n
    chunks = _chunks(0, len(buf), ctx.chunk)
    rreqs = [ep.irecv((r - 1) % n, buf.sub(a, b).u8, ctx.tag) for a, b in chunks] if pos else []
    sreqs = []
    for k, (a, b) in enumerate(chunks):
        if pos:
            rreqs[k].wait(ctx.deadline, ctx.what)
        if pos < n - 1:
            sreqs.append(ep.isend((r + 1) % n, buf.sub(a, b).u8, ctx.tag))
    _wait_all(ctx, sreqs)


def scatter(ctx, send: Buf | None, recv: Buf, root: int) -> None:
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    c = len(recv)
    if r != root:
        ep.irecv(root, recv.u8, ctx.tag).wait(ctx.deadline, ctx.what)
        return
    reqs = [ep.isend(i, send.sub(i * c, (i + 1) * c).u8, ctx.tag) for i in range(n) if i != r]
    _copy(recv, send.sub(r * c, (r + 1) * c))
    _wait_all(ctx, reqs)


def alltoallv(ctx, send: Buf, send_segs, recv: Buf, recv_segs) -> None:
    """Rank r sends `send[send_segs[j]]` to rank j and receives `recv[recv_segs[i]]` from rank
    i (pairwise exchange: step s talks to r+s and r-s)."""
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    rreqs = [ep.irecv((r - s) % n, recv.sub(*recv_segs[(r - s) % n]).u8, ctx.tag)
             for s in range(1, n)]
    sreqs = [ep.isend((r + s) % n, send.sub(*send_segs[(r + s) % n]).u8, ctx.tag)
             for s in range(1, n)]
    (slo, shi), (rlo, rhi) = send_segs[r], recv_segs[r]
    _copy(recv.sub(rlo, rhi), send.sub(slo, shi))
    _wait_all(ctx, rreqs)
    _wait_all(ctx, sreqs)


def barrier(ctx) -> None:
    ep, n, r = ctx.ep, ctx.size, ctx.rank
    k = 1
    while k < n:
        out, into = np.zeros(1, np.uint8), np.zeros(1, np.uint8)
        rq = ep.irecv((r - k) % n, into, ctx.tag)
        sq = ep.isend((r + k) % n, out, ctx.tag)
        rq.wait(ctx.deadline, ctx.what)
        sq.wait(ctx.deadline, ctx.what)
        k *= 2


def send(ctx, buf: Buf, peer: int) -> None:
    ctx.ep.isend(peer, buf.u8, P2P_TAG).wait(ctx.deadline, ctx.what)


def recv(ctx, buf: Buf, peer: int) -> None:
    ctx.ep.irecv(peer, buf.u8, P2P_TAG).wait(ctx.deadline, ctx.what)


def batch_send_recv(ctx, items) -> None:
    """`items`: [(is_send, Buf, peer)]; all posted at once (receives first), then waited."""
    ep = ctx.ep
    reqs = [ep.irecv(peer, b.u8, P2P_TAG) for is_send, b, peer in items if not is_send]
    reqs += [ep.isend(peer, b.u8, P2P_TAG) for is_send, b, peer in items if is_send]
    _wait_all(ctx, reqs)
