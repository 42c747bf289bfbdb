"""`acl.hccl`: HCCL in the facade's style (`import rt.acl as acl; acl.hccl.all_reduce(...)`).

Every function returns an `HcclResult` code (`ret`) or `(value, ret)` and never raises: an
`HcclError` becomes its code, any other runtime error HCCL_E_RUNTIME (15); the message is kept
for `acl.get_recent_err_msg()`. Communicators are int handles; buffers are device pointers (ints
from `acl.rt.malloc`) with a count and an `HcclDataType`.

Streams: a stream handle of `acl.rt.create_stream`, an `rt.Stream`, or 0/None for the current
device's default stream (resolved by `acl.rt.stream_of`).
"""
from __future__ import annotations

import functools
import itertools
import logging
import threading

from .. import hccl as _hccl
from .. import log as _log
from ..errors import AclError as _AclError, set_recent_err_msg as _set_msg
from ..hccl.types import HcclResult
from ..stream import Stream as _Stream
from . import rt as _acl_rt

HCCL_SUCCESS = 0
_lock = threading.Lock()
_comms: dict = {}
_ids = itertools.count(0x4CC1000, 0x10)


def _code(e: Exception) -> int:
    if isinstance(e, _hccl.HcclError):
        return e.code
    _set_msg(f"[{HcclResult.HCCL_E_RUNTIME} HCCL_E_RUNTIME] {getattr(e, 'message', e)}")
    return int(HcclResult.HCCL_E_RUNTIME)


def _logged(code: int, e: Exception, fn) -> int:
    """Every failing call writes a CANN-style HCCL error line naming the acl.hccl call."""
    _log.write(logging.ERROR, "HCCL", f"acl.hccl.{fn.__name__}: {getattr(e, 'message', e)} "
               f"(HcclResult {code})")
    return code


def _ret(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            fn(*args, **kwargs)
            return HCCL_SUCCESS
        except _AclError as e:
            return _logged(_code(e), e, fn)
    return wrapper


def _value(default):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs), HCCL_SUCCESS
            except _AclError as e:
                return default, _logged(_code(e), e, fn)
        return wrapper
    return deco


def _register(comm) -> int:
    with _lock:
        h = next(_ids)
        _comms[h] = comm
    return h


def _comm(handle, api: str):
    c = _comms.get(handle) if isinstance(handle, int) else None
    if c is None:
        raise _hccl.HcclError(HcclResult.HCCL_E_PARA,
                              f"hccl.{api}: comm must be a live HcclComm handle, got {handle!r}")
    return c


def _stream(s, api: str):
    if isinstance(s, _Stream):
        return s
    try:
        return _acl_rt.stream_of(s, f"hccl.{api}")
    except _AclError as e:
        raise _hccl.HcclError(HcclResult.HCCL_E_PARA,
                              f"hccl.{api}: stream must be an acl stream handle, an rt.Stream or "
                              f"0 (default stream), got {s!r}") from e


def get_error_string(ret: int) -> str:
    """Mirrors `HcclGetErrorString`."""
    try:
        return HcclResult(ret).name
    except ValueError:
        return "HCCL_E_UNKNOWN"


@_value(b"")
def get_root_info():
    """Mirrors `HcclGetRootInfo`: (4108-byte root info, ret)."""
    return bytes(_hccl.get_root_info())


@_value(0)
def comm_init_root_info(n_ranks: int, root_info, rank: int):
    """Mirrors `HcclCommInitRootInfo`: (comm handle, ret)."""
    return _register(_hccl.comm_init_root_info(n_ranks, root_info, rank))


@_value(0)
def comm_init_cluster_info(cluster_info: str, rank: int):
    """Mirrors `HcclCommInitClusterInfo(clusterInfo, rank, comm)`: (comm handle, ret);
    `cluster_info` is the rank table's path."""
    return _register(_hccl.comm_init_cluster_info(cluster_info, rank))


@_value([])
def comm_init_all(ndev: int, devices):
    """Mirrors `HcclCommInitAll(ndev, devices, comms)`: ([comm handles], ret)."""
    devices = list(devices)
    if ndev != len(devices):
        raise _hccl.HcclError(HcclResult.HCCL_E_PARA, f"hccl.comm_init_all: ndev must equal "
                                                      f"len(devices), got {ndev} and "
                                                      f"{len(devices)}")
    return [_register(c) for c in _hccl.comm_init_all(devices)]


@_value(0)
def get_rank_size(comm):
    return _comm(comm, "get_rank_size").rank_size()


@_value(0)
def get_rank_id(comm):
    return _comm(comm, "get_rank_id").rank_id()


@_ret
def comm_destroy(comm):
    _comm(comm, "comm_destroy").destroy()
    with _lock:
        _comms.pop(comm, None)


@_ret
def all_reduce(send_buf, recv_buf, count, data_type, op, comm, stream):
    _comm(comm, "all_reduce").all_reduce(send_buf, recv_buf, count, data_type, op,
                                         _stream(stream, "all_reduce"))


@_ret
def broadcast(buf, count, data_type, root, comm, stream):
    _comm(comm, "broadcast").broadcast(buf, count, data_type, root, _stream(stream, "broadcast"))


@_ret
def reduce_scatter(send_buf, recv_buf, recv_count, data_type, op, comm, stream):
    _comm(comm, "reduce_scatter").reduce_scatter(send_buf, recv_buf, recv_count, data_type, op,
                                                 _stream(stream, "reduce_scatter"))


@_ret
def all_gather(send_buf, recv_buf, send_count, data_type, comm, stream):
    _comm(comm, "all_gather").all_gather(send_buf, recv_buf, send_count, data_type,
                                         _stream(stream, "all_gather"))


@_ret
def reduce(send_buf, recv_buf, count, data_type, op, root, comm, stream):
    _comm(comm, "reduce").reduce(send_buf, recv_buf, count, data_type, op, root,
                                 _stream(stream, "reduce"))


@_ret
def scatter(send_buf, recv_buf, recv_count, data_type, root, comm, stream):
    _comm(comm, "scatter").scatter(send_buf, recv_buf, recv_count, data_type, root,
                                   _stream(stream, "scatter"))


@_ret
def send(send_buf, count, data_type, dest_rank, comm, stream):
    _comm(comm, "send").send(send_buf, count, data_type, dest_rank, _stream(stream, "send"))


@_ret
def recv(recv_buf, count, data_type, src_rank, comm, stream):
    _comm(comm, "recv").recv(recv_buf, count, data_type, src_rank, _stream(stream, "recv"))


@_ret
def alltoall(send_buf, send_count, send_type, recv_buf, recv_count, recv_type, comm, stream):
    _comm(comm, "alltoall").alltoall(send_buf, send_count, send_type, recv_buf, recv_count,
                                     recv_type, _stream(stream, "alltoall"))


@_ret
def alltoallv(send_buf, send_counts, sdispls, send_type, recv_buf, recv_counts, rdispls,
              recv_type, comm, stream):
    _comm(comm, "alltoallv").alltoallv(send_buf, send_counts, sdispls, send_type, recv_buf,
                                       recv_counts, rdispls, recv_type,
                                       _stream(stream, "alltoallv"))


@_ret
def all_gather_v(send_buf, send_count, recv_buf, recv_counts, recv_displs, data_type, comm,
                 stream):
    _comm(comm, "all_gather_v").all_gather_v(send_buf, send_count, recv_buf, recv_counts,
                                             recv_displs, data_type,
                                             _stream(stream, "all_gather_v"))


@_ret
def reduce_scatter_v(send_buf, send_counts, send_displs, recv_buf, recv_count, data_type, op,
                     comm, stream):
    _comm(comm, "reduce_scatter_v").reduce_scatter_v(send_buf, send_counts, send_displs,
                                                     recv_buf, recv_count, data_type, op,
                                                     _stream(stream, "reduce_scatter_v"))


@_ret
def batch_send_recv(items, item_num, comm, stream):
    items = list(items)
    if item_num != len(items):
        raise _hccl.HcclError(HcclResult.HCCL_E_PARA, f"hccl.batch_send_recv: item_num must "
                                                      f"equal len(items), got {item_num} and "
                                                      f"{len(items)}")
    _comm(comm, "batch_send_recv").batch_send_recv(items, _stream(stream, "batch_send_recv"))


@_ret
def barrier(comm, stream):
    _comm(comm, "barrier").barrier(_stream(stream, "barrier"))
