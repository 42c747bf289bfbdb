"""Communicators and the collectives' API (HCCL's `HcclComm` and `Hccl*` calls, snake_case).

A collective call validates its arguments at once (raising `HcclError` with HCCL's code, as the
C call returns it), then only enqueues a task (kind "hccl") on `stream` and returns: the bytes
move when the stream reaches the task, on the stream's worker thread, after everything queued
before it (kernels, copies, `stream.wait_event(e)`). Completion is observed as for any task,
with `stream.synchronize()` or an event; a collective that fails (a peer that never takes part:
`HCCL_EXEC_TIMEOUT`) puts the stream in error and the next `synchronize` raises an `rt.AclError`
whose code is the HcclResult (9, HCCL_E_TIMEOUT) chained to the `HcclError`.

Buffers are device memory: `rt.DeviceArray` (count and dtype default to its size and dtype) or
device addresses (`rt.DevicePtr`/int, with count and dtype given); a host buffer (numpy array,
host address) is refused with HCCL_E_PARA. Every buffer must live on the communicator's device,
and so must the stream.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..array import DeviceArray
from ..errors import AclError
from ..memcheck import device_of
from ..memory import DeviceBuffer, device_view, record_use
from ..sched import Task
from ..stream import Stream, current_stream
from .. import device as _device
from . import algorithms as alg
from .estimate import npu_estimate
from .reduce import get_reducer, numpy_reduce
from .transport import (coll_tag)
from .types import (HcclError, HcclResult, dtype_of, exec_timeout, op_of)

E_PARA = HcclResult.HCCL_E_PARA
ROOT_INFO_BYTES = 4108                   # sizeof(HcclRootInfo)
OP_NAMES = ("sum", "prod", "max", "min")


class HcclSendRecvType:
    """Mirrors `HcclSendRecvType`."""
    HCCL_SEND = 0
    HCCL_RECV = 1


@dataclass
class SendRecvItem:
    """Mirrors `HcclSendRecvItem` (one entry of `batch_send_recv`)."""
    send_recv_type: int
    buf: object
    count: int
    data_type: object
    remote_rank: int


# -- communicators ---------------------------------------------------------------------------
_comm_ids = itertools.count(1)


class Comm:
    """Mirrors `HcclComm`: rank `rank` of `size`, bound to device `device`.

    `chunk_bytes` (env ASCEND_EMU_HCCL_CHUNK_BYTES, default 4 MiB) is the pipelining unit of the
    ring algorithms; `stats` counts the reductions done by the registered kernel and by numpy,
    the collectives run and the bytes they moved.
    """

    def __init__(self, ep, rank: int, size: int, device: int, servers=None):
        self.id = next(_comm_ids)
        self.servers = list(servers) if servers is not None else None   # server id per rank
        self.algo_config = alg.parse_hccl_algo(os.environ.get("HCCL_ALGO"))
        self.soc = _device.get_device(device).soc.name
        self.ep = ep
        self.transport = ep.kind
        self.rank = rank
        self.size = size
        self.device = device
        self.exec_timeout = exec_timeout()
        # 4 MiB: at 1 MiB the per-message cost (MPI Test polling, thread hand-offs) dominated a
        # 64 MiB 4-rank ring all-reduce (0.6-0.7x of mpi4py's Allreduce; 1.6-1.8x at 4 MiB)
        self.chunk_bytes = int(os.environ.get("ASCEND_EMU_HCCL_CHUNK_BYTES", 4 << 20))
        self.stats = {"collectives": 0, "kernel_reductions": 0, "numpy_reductions": 0}
        self.destroyed = False
        self._seq = 0
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<rt.hccl.Comm {self.id} rank {self.rank}/{self.size} device={self.device} " \
               f"transport={self.transport}>"

    # -- HcclGetRankSize / HcclGetRankId / HcclCommDestroy ----------------------------------------
    def rank_size(self) -> int:
        self._live("get_rank_size")
        return self.size

    def rank_id(self) -> int:
        self._live("get_rank_id")
        return self.rank

    def destroy(self) -> None:
        """Mirrors `HcclCommDestroy`; synchronise the streams using it first (as in HCCL)."""
        self._live("comm_destroy")
        self.destroyed = True
        self.ep.close()

    def _live(self, api: str) -> None:
        if self.destroyed:
            raise HcclError(E_PARA, f"{api}: comm must not be destroyed, got comm {self.id}")

    # -- argument checks --------------------------------------------------------------------------
    def _stream(self, stream, api: str) -> Stream:
        if stream is None:
            stream = current_stream()
        if not isinstance(stream, Stream):
            raise HcclError(E_PARA, f"{api}: stream must be an rt.Stream or None, got "
                                    f"stream={stream!r}")
        if stream.device != self.device:
            raise HcclError(E_PARA, f"{api}: stream must be on the comm's device {self.device}, "
                                    f"got a stream of device {stream.device}")
        return stream

    def _buf(self, x, count, dtype, api: str, role: str):
        """(ptr, count, dtype) of a device buffer argument, checked."""
        if isinstance(x, DeviceArray):
            dt = x.dtype if dtype is None else dtype_of(dtype, api)
            count = x.nbytes // dt.itemsize if count is None else count
            ptr, where, cap = int(x.ptr), x.device, x.nbytes
        elif isinstance(x, (int, np.integer)) and not isinstance(x, bool) or \
                isinstance(x, DeviceBuffer):
            ptr = int(x.ptr if isinstance(x, DeviceBuffer) else x)
            where = device_of(ptr)
            if where is None:
                raise HcclError(E_PARA, f"{api}: {role} must be device memory, got the host "
                                        f"address 0x{ptr:x}")
            if count is None or dtype is None:
                raise HcclError(E_PARA, f"{api}: count and dtype must be given with a device "
                                        f"pointer {role}, got count={count!r}, dtype={dtype!r}")
            dt, cap = dtype_of(dtype, api), None
        else:
            raise HcclError(E_PARA, f"{api}: {role} must be device memory (rt.DeviceArray or a "
                                    f"device pointer), got a host buffer "
                                    f"{type(x).__name__}; copy it to the device first")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise HcclError(E_PARA, f"{api}: count must be an int >= 0, got count={count!r}")
        count = int(count)
        if where != self.device:
            raise HcclError(E_PARA, f"{api}: {role} must be on the comm's device {self.device}, "
                                    f"got memory of device {where}")
        nbytes = count * dt.itemsize
        if cap is not None and nbytes > cap:
            raise HcclError(E_PARA, f"{api}: {role} must hold count={count} {dt} elements "
                                    f"({nbytes} bytes), got {cap} bytes")
        try:
            device_view(ptr, nbytes, api)
        except AclError as e:
            raise HcclError(E_PARA, f"{api}: {role}: {e.message}") from None
        return ptr, count, dt

    def _rank(self, r, api: str, role: str, other: bool = False) -> int:
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or \
                not 0 <= r < self.size or other and r == self.rank:
            why = f" and not this rank ({self.rank})" if other else ""
            raise HcclError(E_PARA, f"{api}: {role} must be in [0, {self.size}){why}, "
                                    f"got {role}={r!r}")
        return int(r)

    def _counts(self, counts, displs, api: str, role: str):
        try:
            counts = [int(c) for c in counts]
            displs = [int(d) for d in displs]
        except (TypeError, ValueError):
            counts = None
        if counts is None or len(counts) != self.size or len(displs) != self.size or \
                min(counts + displs, default=0) < 0:
            raise HcclError(E_PARA, f"{api}: {role} counts and displacements must be "
                                    f"{self.size} ints >= 0 each")
        return [(d, d + c) for c, d in zip(counts, displs)]

    # -- enqueueing -------------------------------------------------------------------------------
    def _enqueue(self, stream, api: str, name: str, nbytes: int, bufs, body, args,
                 collective: bool = True, dt=np.uint8):
        self._live(api)
        stream = self._stream(stream, api)
        core = stream.live_core(api)
        with self._lock:
            if collective:
                self._seq += 1
            tag = coll_tag(self._seq)
        comm = self
        if "algorithm" not in args and name in _OP_KEYS:
            algo, why = alg.choose_other(self.algo_config, _OP_KEYS[name])
            args = {**args, "algorithm": algo, **({"algorithm_reason": why} if why else {})}
        args = {"ranks": self.size, "rank": self.rank, "transport": self.transport, **args}
        args.update(npu_estimate(name, args["algorithm"], self.size, nbytes, self.servers,
                                 self.soc))

        def run():
            ctx = _Ctx(comm, tag, f"{api} (rank {comm.rank}/{comm.size})", dt)
            try:
                body(ctx)
            finally:
                ctx.release()
            comm.stats["collectives"] += 1

        task = Task(core, run, "hccl", name, nbytes, "compute", args)
        task.on_done = _bandwidth
        accesses = [(p, w) for p, n, w in bufs if n]
        stream.submit(task, accesses=accesses)
        if accesses:
            record_use([a for a, _ in accesses], core, task.seq)
        return task

    def _view(self, ptr: int, count: int, dt) -> alg.Buf:
        return alg.Buf(ptr, device_view(ptr, count * dt.itemsize).view(dt))

    # -- collectives ------------------------------------------------------------------------------
    def all_reduce(self, send, recv, count=None, dtype=None, op=0, stream=None):
        """Mirrors `HcclAllReduce`: recv = op over ranks of send (count elements)."""
        api = "all_reduce"
        sp, count, dt = self._buf(send, count, dtype, api, "send")
        rp, _, _ = self._buf(recv, count, dt, api, "recv")
        op = op_of(op, api)
        nb = count * dt.itemsize
        algo, why = alg.choose_all_reduce(
            self.algo_config, self.size, nb,
            lambda a: npu_estimate("HcclAllReduce", a, self.size, nb, self.servers,
                                   self.soc)["npu_est_us"])
        return self._enqueue(stream, api, "HcclAllReduce", nb, [(sp, nb, False), (rp, nb, True)],
                             lambda c: alg.all_reduce(c, self._view(sp, count, dt),
                                                      self._view(rp, count, dt), op, algo),
                             {"op": OP_NAMES[op], "dtype": str(dt), "count": count,
                              "algorithm": algo, "algorithm_reason": why}, dt=dt)

    def broadcast(self, buf, count=None, dtype=None, root=0, stream=None):
        """Mirrors `HcclBroadcast`: every rank's buf = root's buf."""
        api = "broadcast"
        p, count, dt = self._buf(buf, count, dtype, api, "buf")
        root = self._rank(root, api, "root")
        nb = count * dt.itemsize
        return self._enqueue(stream, api, "HcclBroadcast", nb, [(p, nb, True)],
                             lambda c: alg.broadcast(c, self._view(p, count, dt), root),
                             {"dtype": str(dt), "count": count, "root": root}, dt=dt)

    def all_gather(self, send, recv, send_count=None, dtype=None, stream=None):
        """Mirrors `HcclAllGather`: recv[i*send_count:(i+1)*send_count] = rank i's send."""
        api = "all_gather"
        sp, c, dt = self._buf(send, send_count, dtype, api, "send")
        rp, _, _ = self._buf(recv, c * self.size, dt, api, "recv")
        segs = [(i * c, (i + 1) * c) for i in range(self.size)]
        return self._enqueue(stream, api, "HcclAllGather", c * self.size * dt.itemsize,
                             [(sp, c, False), (rp, c, True)],
                             lambda x: alg.all_gather_v(x, self._view(sp, c, dt),
                                                        self._view(rp, c * self.size, dt), segs),
                             {"dtype": str(dt), "count": c}, dt=dt)

    def all_gather_v(self, send, send_count, recv, recv_counts, recv_displs, dtype=None,
                     stream=None):
        """Mirrors `HcclAllGatherV`: rank i's send lands at recv[recv_displs[i]:][:recv_counts[i]]
        (send_count must equal recv_counts[rank])."""
        api = "all_gather_v"
        segs = self._counts(recv_counts, recv_displs, api, "recv")
        sp, c, dt = self._buf(send, send_count, dtype, api, "send")
        lo, hi = segs[self.rank]
        if c != hi - lo:
            raise HcclError(E_PARA, f"{api}: send_count must equal recv_counts[{self.rank}], got "
                                    f"send_count={c}, recv_counts[{self.rank}]={hi - lo}")
        end = max(h for _, h in segs)
        rp, _, _ = self._buf(recv, end, dt, api, "recv")
        return self._enqueue(stream, api, "HcclAllGatherV", end * dt.itemsize,
                             [(sp, c, False), (rp, end, True)],
                             lambda x: alg.all_gather_v(x, self._view(sp, c, dt),
                                                        self._view(rp, end, dt), segs),
                             {"dtype": str(dt), "count": end}, dt=dt)

    def reduce_scatter(self, send, recv, recv_count=None, dtype=None, op=0, stream=None):
        """Mirrors `HcclReduceScatter`: rank r's recv = op over ranks of
        send[r*recv_count:(r+1)*recv_count]."""
        api = "reduce_scatter"
        rp, c, dt = self._buf(recv, recv_count, dtype, api, "recv")
        n = self.size
        return self._reduce_scatter(api, "HcclReduceScatter", send, [(i * c, (i + 1) * c)
                                                                      for i in range(n)],
                                    rp, c, dt, op, stream)

    def reduce_scatter_v(self, send, send_counts, send_displs, recv, recv_count=None,
                         dtype=None, op=0, stream=None):
        """Mirrors `HcclReduceScatterV`: rank r's recv = op over ranks of
        send[send_displs[r]:][:send_counts[r]] (recv_count must equal send_counts[rank])."""
        api = "reduce_scatter_v"
        segs = self._counts(send_counts, send_displs, api, "send")
        rp, c, dt = self._buf(recv, recv_count, dtype, api, "recv")
        lo, hi = segs[self.rank]
        if c != hi - lo:
            raise HcclError(E_PARA, f"{api}: recv_count must equal send_counts[{self.rank}], got "
                                    f"recv_count={c}, send_counts[{self.rank}]={hi - lo}")
        return self._reduce_scatter(api, "HcclReduceScatterV", send, segs, rp, c, dt, op, stream)

    def _reduce_scatter(self, api, name, send, segs, rp, c, dt, op, stream):
        end = max(h for _, h in segs)
        sp, _, _ = self._buf(send, end, dt, api, "send")
        op = op_of(op, api)
        return self._enqueue(stream, api, name, end * dt.itemsize,
                             [(sp, end, False), (rp, c, True)],
                             lambda x: alg.reduce_scatter_v(x, self._view(sp, end, dt), segs,
                                                            self._view(rp, c, dt), op),
                             {"op": OP_NAMES[op], "dtype": str(dt), "count": end}, dt=dt)

    def reduce(self, send, recv, count=None, dtype=None, op=0, root=0, stream=None):
        """Mirrors `HcclReduce`: root's recv = op over ranks of send (recv unused elsewhere)."""
        api = "reduce"
        sp, count, dt = self._buf(send, count, dtype, api, "send")
        root = self._rank(root, api, "root")
        rp = self._buf(recv, count, dt, api, "recv")[0] if self.rank == root else None
        op = op_of(op, api)
        nb = count * dt.itemsize
        bufs = [(sp, nb, False)] + ([(rp, nb, True)] if rp is not None else [])
        return self._enqueue(
            stream, api, "HcclReduce", nb, bufs,
            lambda x: alg.reduce(x, self._view(sp, count, dt),
                                 self._view(rp, count, dt) if rp is not None else None, op, root),
            {"op": OP_NAMES[op], "dtype": str(dt), "count": count, "root": root},
            dt=dt)

    def scatter(self, send, recv, recv_count=None, dtype=None, root=0, stream=None):
        """Mirrors `HcclScatter`: rank i's recv = root's send[i*recv_count:(i+1)*recv_count]."""
        api = "scatter"
        rp, c, dt = self._buf(recv, recv_count, dtype, api, "recv")
        root = self._rank(root, api, "root")
        sp = self._buf(send, c * self.size, dt, api, "send")[0] if self.rank == root else None
        bufs = [(rp, c, True)] + ([(sp, c, False)] if sp is not None else [])
        return self._enqueue(
            stream, api, "HcclScatter", c * self.size * dt.itemsize, bufs,
            lambda x: alg.scatter(x, self._view(sp, c * self.size, dt) if sp is not None
                                  else None, self._view(rp, c, dt), root),
            {"dtype": str(dt), "count": c, "root": root}, dt=dt)

    def alltoall(self, send, send_count=None, send_type=None, recv=None, recv_count=None,
                 recv_type=None, stream=None):
        """Mirrors `HcclAlltoAll`: rank j's recv[i*c:(i+1)*c] = rank i's send[j*c:(j+1)*c]."""
        api = "alltoall"
        n = self.size
        if send_count is None and isinstance(send, DeviceArray):
            send_count = send.size // n
        if recv_count is None and isinstance(recv, DeviceArray):
            recv_count = recv.size // n
        if send_count != recv_count:
            raise HcclError(E_PARA, f"{api}: send_count must equal recv_count, got "
                                    f"{send_count} and {recv_count}")
        c = send_count
        return self._alltoallv(api, "HcclAlltoAll", send, [c] * n, [i * c for i in range(n)],
                               send_type, recv, [c] * n, [i * c for i in range(n)], recv_type,
                               stream)

    def alltoallv(self, send, send_counts, sdispls, send_type, recv, recv_counts, rdispls,
                  recv_type=None, stream=None):
        """Mirrors `HcclAlltoAllV`: rank j's recv[rdispls[i]:][:recv_counts[i]] = rank i's
        send[sdispls[j]:][:send_counts[j]]."""
        return self._alltoallv("alltoallv", "HcclAlltoAllV", send, send_counts, sdispls,
                               send_type, recv, recv_counts, rdispls, recv_type, stream)

    def _alltoallv(self, api, name, send, scounts, sdispls, stype, recv, rcounts, rdispls,
                   rtype, stream):
        ssegs = self._counts(scounts, sdispls, api, "send")
        rsegs = self._counts(rcounts, rdispls, api, "recv")
        send_end, recv_end = max(h for _, h in ssegs), max(h for _, h in rsegs)
        sp, _, dt = self._buf(send, send_end, stype, api, "send")
        rp, _, rdt = self._buf(recv, recv_end, rtype if rtype is not None else dt, api, "recv")
        if rdt != dt:
            raise HcclError(E_PARA, f"{api}: send and recv types must be equal, got {dt} and "
                                    f"{rdt}")
        return self._enqueue(stream, api, name, sum(h - lo for lo, h in ssegs) * dt.itemsize,
                             [(sp, send_end, False), (rp, recv_end, True)],
                             lambda x: alg.alltoallv(x, self._view(sp, send_end, dt), ssegs,
                                                     self._view(rp, recv_end, dt), rsegs),
                             {"dtype": str(dt), "algorithm": "pairwise"}, dt=dt)

    def send(self, buf, count=None, dtype=None, dest_rank=None, stream=None):
        """Mirrors `HcclSend`: matched in order by `recv` on dest_rank."""
        api = "send"
        p, count, dt = self._buf(buf, count, dtype, api, "buf")
        peer = self._rank(dest_rank, api, "dest_rank", other=True)
        nb = count * dt.itemsize
        return self._enqueue(stream, api, "HcclSend", nb, [(p, nb, False)],
                             lambda x: alg.send(x, self._view(p, count, dt), peer),
                             {"dtype": str(dt), "count": count, "peer": peer,
                              "algorithm": "p2p"}, collective=False)

    def recv(self, buf, count=None, dtype=None, src_rank=None, stream=None):
        """Mirrors `HcclRecv`: matched in order with `send` on src_rank."""
        api = "recv"
        p, count, dt = self._buf(buf, count, dtype, api, "buf")
        peer = self._rank(src_rank, api, "src_rank", other=True)
        nb = count * dt.itemsize
        return self._enqueue(stream, api, "HcclRecv", nb, [(p, nb, True)],
                             lambda x: alg.recv(x, self._view(p, count, dt), peer),
                             {"dtype": str(dt), "count": count, "peer": peer,
                              "algorithm": "p2p"}, collective=False)

    def batch_send_recv(self, items, stream=None):
        """Mirrors `HcclBatchSendRecv`: every item (`SendRecvItem` or a tuple (type, buf, count,
        dtype, remote_rank)) is posted at once; the task ends when all have completed."""
        api = "batch_send_recv"
        plan, bufs, nbytes = [], [], 0
        for it in items:
            if not isinstance(it, SendRecvItem):
                it = SendRecvItem(*it)
            if it.send_recv_type not in (0, 1):
                raise HcclError(E_PARA, f"{api}: send_recv_type must be HCCL_SEND (0) or "
                                        f"HCCL_RECV (1), got {it.send_recv_type!r}")
            is_send = it.send_recv_type == 0
            p, c, dt = self._buf(it.buf, it.count, it.data_type, api, "buf")
            peer = self._rank(it.remote_rank, api, "remote_rank", other=True)
            plan.append((is_send, p, c, dt, peer))
            bufs.append((p, c * dt.itemsize, not is_send))
            nbytes += c * dt.itemsize
        return self._enqueue(
            stream, api, "HcclBatchSendRecv", nbytes, bufs,
            lambda x: alg.batch_send_recv(x, [(s, self._view(p, c, dt), peer)
                                              for s, p, c, dt, peer in plan]),
            {"items": len(plan), "algorithm": "p2p"}, collective=False)

    def barrier(self, stream=None):
        """Mirrors `HcclBarrier`: the task ends once every rank's barrier has started."""
        return self._enqueue(stream, "barrier", "HcclBarrier", 0, [], alg.barrier,
                             {"algorithm": "dissemination"})


#: task name -> the op name HCCL_ALGO uses for it
_OP_KEYS = {"HcclAllGather": "allgather", "HcclAllGatherV": "allgather",
            "HcclReduceScatter": "reducescatter", "HcclReduceScatterV": "reducescatter",
            "HcclBroadcast": "broadcast", "HcclReduce": "reduce", "HcclScatter": "scatter"}


class _Ctx:
    """What an algorithm needs while it runs on one rank (see `rt.hccl.algorithms`)."""

    def __init__(self, comm: Comm, tag: int, what: str, dt):
        self.comm = comm
        self.ep = comm.ep
        self.rank, self.size = comm.rank, comm.size
        self.tag = tag
        self.what = what
        self.deadline = time.perf_counter_ns() + int(comm.exec_timeout * 1e9)
        self.chunk_bytes = max(comm.chunk_bytes, 1)
        self.chunk = max(1, self.chunk_bytes // np.dtype(dt).itemsize)   # elements
        self._scratch = []
        self.reducer = get_reducer()

    def scratch(self, count: int, dt) -> alg.Buf:
        a = DeviceArray((max(count, 1),), dt, device=self.comm.device)
        self._scratch.append(a)
        return alg.Buf(int(a.ptr), a.host_view()[:count])

    def release(self) -> None:
        for a in self._scratch:
            a.free()
        self._scratch = []

    def reduce(self, op: int, dst: alg.Buf, src: alg.Buf) -> None:
        fn, st = self.reducer, self.comm.stats
        if fn is not None and fn(op, dst.arr.dtype, dst.ptr, src.ptr, len(dst), self.comm.device):
            st["kernel_reductions"] += 1
            return
        numpy_reduce(op, dst.arr, src.arr)
        st["numpy_reductions"] += 1


def _bandwidth(task) -> None:
    dur = task.end_ns - task.start_ns
    if isinstance(task.args, dict) and dur > 0 and task.error is None:
        # bytes/ns = GB/s; four significant figures, so a slow run still reads > 0
        task.args["algbw_GBps"] = float(f"{task.nbytes / dur:.4g}")
