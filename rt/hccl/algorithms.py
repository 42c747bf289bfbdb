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
- all-reduce = ring reduce-scatter + ring all-gather (HCCL's ring algorithm), or
  halving-doubling (`hd_all_reduce`, HCCL's H-D_R) as `choose_all_reduce` decides (HCCL_ALGO,
  else rank count and message size through the NPU-view estimate);
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
    n, r = ctx.size, ctx.rank
    if n == 1:
        return
    nxt, prv = (r + 1) % n, (r - 1) % n
    width = max(hi - lo for lo, hi in segs)
    scratch = ctx.scratch(width, data.arr.dtype)
    for s in range(n - 1):
        _send_recv_reduce(ctx, data, scratch, op, nxt, segs[(r - s - 1) % n],
                          prv, segs[(r - s - 2) % n])


def _send_recv_reduce(ctx, data: Buf, scratch: Buf, op: int, to: int, send_rng, frm: int,
                      recv_rng) -> None:
    """One pipelined step: send data[send_rng] to `to` while receiving `frm`'s copy of
    data[recv_rng] into `scratch` and reducing it into data[recv_rng], chunk by chunk (chunk k+1
    is posted before chunk k is reduced). Either range may be empty (None)."""
    ep = ctx.ep
    sends = _chunks(*send_rng, ctx.chunk) if send_rng else []
    recvs = _chunks(*recv_rng, ctx.chunk) if recv_rng else []
    rlo = recv_rng[0] if recv_rng else 0
    rreqs = [ep.irecv(frm, scratch.sub(a - rlo, b - rlo).u8, ctx.tag) for a, b in recvs]
    sreqs, done = [], 0
    for k, (a, b) in enumerate(sends):
        sreqs.append(ep.isend(to, data.sub(a, b).u8, ctx.tag))
        while done < min(k, len(recvs)):          # reduce chunk k-1 while k is on its way
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


def all_reduce(ctx, send: Buf, recv: Buf, op: int, algorithm: str = "ring") -> None:
    _copy(recv, send)
    if algorithm == "H-D_R":
        hd_all_reduce(ctx, recv, op)
        return
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


# -- halving-doubling (HCCL's H-D_R, "Recursive Halving-Doubling") ------------------------------
def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def _transfer(ctx, data: Buf, to, send_rng, frm, recv_rng) -> None:
    """Send data[send_rng] to `to` and receive data[recv_rng] from `frm` (no reduction)."""
    ep = ctx.ep
    rreqs = [ep.irecv(frm, data.sub(a, b).u8, ctx.tag)
             for a, b in (_chunks(*recv_rng, ctx.chunk) if recv_rng else [])]
    sreqs = [ep.isend(to, data.sub(a, b).u8, ctx.tag)
             for a, b in (_chunks(*send_rng, ctx.chunk) if send_rng else [])]
    _wait_all(ctx, rreqs)
    _wait_all(ctx, sreqs)


def hd_all_reduce(ctx, data: Buf, op: int) -> None:
    """In place: recursive-halving reduce-scatter + recursive-doubling all-gather over
    p = 2^floor(log2 n) ranks (Rabenseifner's all-reduce; log2(p) steps each way, each step
    exchanges half the previous amount with the rank at distance p/2, p/4, ... then 1, 2, ...).

    n not a power of two (rem = n - p): first the 2*rem lowest ranks fold pairwise, even rank
    2i sends its whole vector to 2i+1 which reduces it (pipelined by chunks); the odd ones and
    the ranks >= 2*rem run the power-of-two algorithm as ranks 0..p-1; last each odd rank sends
    the result back to its even partner (the standard MPICH/Thakur et al. 2005 treatment)."""
    n, r = ctx.size, ctx.rank
    count = len(data)
    if n == 1 or count == 0:
        return
    p = _pow2_floor(n)
    rem = n - p
    whole = (0, count)
    scratch = None
    if r < 2 * rem:
        if r % 2 == 0:                     # folded out: hand everything over, get the result
            _send_recv_reduce(ctx, data, None, op, r + 1, whole, None, None)
            _transfer(ctx, data, None, None, r + 1, whole)
            return
        scratch = ctx.scratch(count, data.arr.dtype)
        _send_recv_reduce(ctx, data, scratch, op, None, None, r - 1, whole)
        nr = r // 2
    else:
        nr = r - rem

    def real(q: int) -> int:
        return 2 * q + 1 if q < rem else q + rem

    segs = even_segments(count, p)

    def elems(b0: int, b1: int):
        return (segs[b0][0], segs[b1 - 1][1])

    if scratch is None and p > 1:
        half = p // 2
        scratch = ctx.scratch(max(segs[half - 1][1], count - segs[half][0]), data.arr.dtype)
    b0, w, dist = 0, p, p // 2
    while dist >= 1:                       # reduce-scatter by recursive halving
        half = w // 2
        lower, upper = (b0, b0 + half), (b0 + half, b0 + w)
        keep, give = (lower, upper) if nr & dist == 0 else (upper, lower)
        peer = real(nr ^ dist)
        _send_recv_reduce(ctx, data, scratch, op, peer, elems(*give), peer, elems(*keep))
        b0, w, dist = keep[0], half, dist // 2
    dist = 1
    while dist < p:                        # all-gather by recursive doubling
        mine = nr & ~(dist - 1)
        theirs = mine ^ dist
        peer = real(nr ^ dist)
        _transfer(ctx, data, peer, elems(mine, mine + dist), peer, elems(theirs, theirs + dist))
        dist *= 2
    if r < 2 * rem:                        # odd rank: give the result back to the even one
        _transfer(ctx, data, r - 1, whole, None, None)


# -- algorithm selection (HCCL_ALGO, or by rank count and message size) ----------------------------
#: level1 values HCCL_ALGO documents; the emulator runs "ring" and "H-D_R" (all_reduce only).
HCCL_ALGO_NAMES = ("ring", "H-D_R", "NHR", "NHR_V1", "NB", "AHC", "pipeline", "pairwise")
HCCL_ALGO_OPS = ("allgather", "reducescatter", "allreduce", "broadcast", "reduce", "scatter",
                 "alltoall")
_CANON = {a.lower(): a for a in HCCL_ALGO_NAMES}


def _algo_bad(raw: str, why: str):
    from .types import HcclError, HcclResult
    return HcclError(HcclResult.HCCL_E_PARA,
                     f"hccl: HCCL_ALGO must be 'level0:NA;level1:<algo>' or "
                     f"'<op>=level0:NA;level1:<algo>/...' with <algo> one of "
                     f"{list(HCCL_ALGO_NAMES)}, got HCCL_ALGO={raw!r} ({why})")


def _parse_levels(raw: str, text: str) -> str:
    text = text.strip()
    if ":" not in text:                    # emulator shorthand: a bare level1 name
        algo = _CANON.get(text.lower())
        if algo is None:
            raise _algo_bad(raw, f"unknown algorithm {text!r}")
        return algo
    levels = {}
    for part in filter(None, (x.strip() for x in text.split(";"))):
        key, _, val = part.partition(":")
        levels[key.strip().lower()] = val.strip()
    unknown = set(levels) - {"level0", "level1", "level2"}
    if unknown:
        raise _algo_bad(raw, f"unknown level {sorted(unknown)}")
    if levels.get("level0", "NA").upper() != "NA":
        raise _algo_bad(raw, f"level0 must be NA, got {levels['level0']!r}")
    if "level1" not in levels:
        raise _algo_bad(raw, "level1 missing")
    algo = _CANON.get(levels["level1"].lower())
    if algo is None:
        raise _algo_bad(raw, f"unknown algorithm {levels['level1']!r}")
    return algo


def parse_hccl_algo(raw: str | None) -> dict:
    """HCCL_ALGO -> {op or "*": level1 algorithm}. Forms (CANN env reference, HCCL_ALGO):
    "level0:NA;level1:H-D_R" (every op), "allreduce=level0:NA;level1:ring/allgather=...",
    and, as an emulator shorthand, a bare "ring" / "H-D_R". Empty or unset: {}."""
    if raw is None or not raw.strip():
        return {}
    if "=" not in raw:
        return {"*": _parse_levels(raw, raw)}
    out = {}
    for item in filter(None, (x.strip() for x in raw.split("/"))):
        op, eq, rest = item.partition("=")
        op = op.strip().lower()
        if not eq or op not in HCCL_ALGO_OPS:
            raise _algo_bad(raw, f"op must be one of {list(HCCL_ALGO_OPS)}, got {op!r}")
        out[op] = _parse_levels(raw, rest)
    return out


def choose_all_reduce(config: dict, n: int, nbytes: int, est) -> tuple[str, str]:
    """(algorithm, reason) for an all-reduce of `nbytes` on `n` ranks. `config` is
    `parse_hccl_algo`'s result; `est(algorithm) -> microseconds` is the NPU-view estimate
    (rt/hccl/estimate.py). Without HCCL_ALGO: ring for n <= 2 (the two are the same exchange),
    else the algorithm with the smaller estimate: H-D_R for any power of two (2 log2 n steps
    instead of 2(n-1), the same bytes), H-D_R for other n only while the message is small enough
    that its fold (the whole vector sent twice more) costs less than ring's extra steps."""
    forced = config.get("allreduce") or config.get("*")
    if forced == "ring":
        return "ring", "HCCL_ALGO"
    if forced == "H-D_R":
        return ("H-D_R" if n > 1 else "ring"), "HCCL_ALGO"
    if forced is not None:
        return "ring", f"HCCL_ALGO asks {forced}: not emulated, ring used"
    if n <= 2:
        return "ring", f"auto: {n} ranks (ring = H-D)"
    ring, hd = est("ring"), est("H-D_R")
    pick = "H-D_R" if hd < ring else "ring"
    return pick, f"auto: est ring {ring:.3f} us, H-D_R {hd:.3f} us"


def choose_other(config: dict, op_key: str) -> tuple[str, str | None]:
    """(algorithm, reason) for a collective other than all-reduce: ring (the one implemented);
    a forced other algorithm is recorded as not emulated."""
    forced = config.get(op_key) or config.get("*")
    if forced is None or forced == "ring":
        return "ring", ("HCCL_ALGO" if forced else None)
    return "ring", f"HCCL_ALGO asks {forced}: not emulated for {op_key}, ring used"
