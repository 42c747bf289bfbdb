"""Transports: how the bytes of a collective move between ranks.

Both transports offer the same non-blocking point-to-point interface to the algorithms
(`rt.hccl.algorithms`): `isend(peer, u8, tag)` / `irecv(peer, u8, tag)` return a request with
`wait(deadline_ns, what)`. Messages between one pair of ranks with one tag match in posting
order (MPI's non-overtaking rule), so algorithms only have to post in the same order on both
sides.

- `LocalGroup` / `LocalEndpoint` (one process, `comm_init_all` or `comm_init_root_info` from
  threads): a rendezvous mailbox. Whoever posts second does the transfer, a device-to-device
  copy (`np.copyto` between the two devices' arenas, which releases the GIL), so the sender's
  thread copies chunk k+1 while the receiver's thread reduces chunk k.
- `MpiEndpoint` (one rank per process, `mpirun`): `MPI.Comm.Isend/Irecv` on the communicator
  built for this HCCL communicator, polled with `Test` from the stream's worker thread until the
  deadline (`HCCL_EXEC_TIMEOUT`); a request still pending at the deadline is cancelled and the
  collective fails with HCCL_E_TIMEOUT.
"""
from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np

from .types import HcclError, HcclResult

#: tag of point-to-point traffic (send/recv, batch_send_recv); collectives use 1 + seq % COLL_TAGS
P2P_TAG = 0
COLL_TAGS = 16384


def coll_tag(seq: int) -> int:
    return 1 + seq % COLL_TAGS


def _timeout(what: str) -> HcclError:
    return HcclError(HcclResult.HCCL_E_TIMEOUT,
                     f"{what}: the peer must take part within HCCL_EXEC_TIMEOUT, got no "
                     f"matching transfer before the deadline (a rank is missing, failed, or "
                     f"called collectives in another order)")


# -- in one process ---------------------------------------------------------------------------
class LocalRequest:
    __slots__ = ("is_send", "buf", "done", "error", "group", "key")

    def __init__(self, group, is_send: bool, buf: np.ndarray):
        self.group = group
        self.key = None
        self.is_send = is_send
        self.buf = buf
        self.done = threading.Event()
        self.error = None

    def wait(self, deadline_ns: int, what: str) -> None:
        left = (deadline_ns - time.perf_counter_ns()) / 1e9
        if not self.done.wait(max(left, 0.0)):
            if self.group.withdraw(self):
                raise _timeout(what)
            self.done.wait()                    # matched meanwhile: the copy is under way
        if self.error is not None:
            raise self.error


class LocalGroup:
    """The shared state of the ranks of one in-process communicator."""

    def __init__(self, n_ranks: int):
        self.n_ranks = n_ranks
        self.lock = threading.Lock()
        self.boxes: dict = {}                   # (src, dst, tag) -> deque of unmatched requests
        self.endpoints: dict = {}

    def post(self, src: int, dst: int, tag: int, buf: np.ndarray, is_send: bool):
        req = LocalRequest(self, is_send, buf)
        key = (src, dst, tag)
        with self.lock:
            q = self.boxes.get(key)
            if q and q[0].is_send != is_send:
                other = q.popleft()
                if not q:
                    del self.boxes[key]
            else:
                if q is None:
                    q = self.boxes[key] = deque()
                q.append(req)
                req.key = key
                return req
        s, r = (req, other) if is_send else (other, req)
        if s.buf.nbytes != r.buf.nbytes:
            err = HcclError(HcclResult.HCCL_E_PARA,
                            f"hccl: the send from rank {src} to rank {dst} must match the "
                            f"receive in size, got {s.buf.nbytes} bytes sent, "
                            f"{r.buf.nbytes} expected")
            s.error = r.error = err
        elif s.buf.nbytes:
            np.copyto(r.buf, s.buf)             # the device-to-device copy
        s.done.set()
        r.done.set()
        return req

    def withdraw(self, req) -> bool:
        """Take an unmatched request back (its wait timed out); False if it was matched."""
        with self.lock:
            q = self.boxes.get(req.key) if req.key is not None else None
            if q is None or req not in q:
                return False
            q.remove(req)
            if not q:
                del self.boxes[req.key]
            return True


class LocalEndpoint:
    """Rank `rank`'s view of a `LocalGroup`."""
    kind = "local"

    def __init__(self, group: LocalGroup, rank: int):
        self.group = group
        self.rank = rank
        self.size = group.n_ranks

    def isend(self, peer: int, u8: np.ndarray, tag: int):
        return self.group.post(self.rank, peer, tag, u8, True)

    def irecv(self, peer: int, u8: np.ndarray, tag: int):
        return self.group.post(peer, self.rank, tag, u8, False)

    def close(self) -> None:
        pass


# -- across processes: MPI ----------------------------------------------------------------------
class MpiRequest:
    __slots__ = ("req", "is_recv")

    def __init__(self, req, is_recv: bool):
        self.req = req
        self.is_recv = is_recv

    def wait(self, deadline_ns: int, what: str) -> None:
        req = self.req
        if req.Test():
            return
        pause = 2e-5
        while not req.Test():
            if time.perf_counter_ns() >= deadline_ns:
                try:
                    req.Cancel()
                    if self.is_recv:
                        req.Wait()              # a cancelled receive completes at once
                except Exception:               # noqa: BLE001 - cancelling is best effort
                    pass
                raise _timeout(what)
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


class MpiEndpoint:
    """Rank `rank` of an MPI communicator made for one HCCL communicator."""
    kind = "mpi"

    def __init__(self, mpi_comm, MPI):
        self.comm = mpi_comm
        self.MPI = MPI
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()

    def isend(self, peer: int, u8: np.ndarray, tag: int):
        return MpiRequest(self.comm.Isend([u8, self.MPI.BYTE], dest=peer, tag=tag), False)

    def irecv(self, peer: int, u8: np.ndarray, tag: int):
        return MpiRequest(self.comm.Irecv([u8, self.MPI.BYTE], source=peer, tag=tag), True)

    def close(self) -> None:
        comm, self.comm = self.comm, None
        if comm is not None:
            try:
                comm.Free()
            except Exception:                   # noqa: BLE001 - MPI may be finalized already
                pass
