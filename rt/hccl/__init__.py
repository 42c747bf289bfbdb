"""rt.hccl: HCCL (Huawei Collective Communication Library) on the emulated devices.

HCCL's calls in snake_case (`HcclAllReduce` -> `all_reduce`); communicators come from
`comm_init_all(devices)` (one process, one rank per emulated device, data moved by
device-to-device copies), `get_root_info()` + `comm_init_root_info(n_ranks, root_info, rank)` or
`comm_init_cluster_info(rank_table_path, rank)` (threads of one process, or one rank per process
under `mpirun`, data moved by MPI). Collectives
are tasks on an `rt.Stream`: asynchronous, ordered with kernels, copies and events. Failures raise
`HcclError` (an `rt.AclError` whose code is the `HcclResult`). See docs/hccl.md.
"""
from .types import (HcclResult, HcclDataType, HcclReduceOp, HcclError, DTYPES, dtype_of,
                    hccl_dtype, connect_timeout, exec_timeout)
from .comm import Comm, SendRecvItem, HcclSendRecvType, ROOT_INFO_BYTES
from .join import (RootInfo, get_root_info, comm_init_root_info, comm_init_all,
                   comm_init_cluster_info)
from .ranktable import RankTable, RankEntry, load_rank_table
from .algorithms import parse_hccl_algo
from .estimate import npu_estimate, estimate_seconds
from .reduce import set_reducer, get_reducer, numpy_reduce

__all__ = [
    "HcclResult", "HcclDataType", "HcclReduceOp", "HcclError", "DTYPES", "dtype_of",
    "hccl_dtype", "connect_timeout", "exec_timeout",
    "Comm", "RootInfo", "SendRecvItem", "HcclSendRecvType", "ROOT_INFO_BYTES",
    "get_root_info", "comm_init_root_info", "comm_init_all", "comm_init_cluster_info",
    "RankTable", "RankEntry", "load_rank_table", "parse_hccl_algo", "npu_estimate",
    "estimate_seconds",
    "set_reducer", "get_reducer", "numpy_reduce",
    "get_rank_size", "get_rank_id", "comm_destroy",
    "all_reduce", "broadcast", "all_gather", "all_gather_v", "reduce_scatter",
    "reduce_scatter_v", "reduce", "scatter", "alltoall", "alltoallv", "send", "recv",
    "batch_send_recv", "barrier",
]


def _comm(comm, api: str) -> Comm:
    if not isinstance(comm, Comm):
        raise HcclError(HcclResult.HCCL_E_PARA,
                        f"{api}: comm must be an rt.hccl.Comm, got comm={comm!r}")
    return comm


def get_rank_size(comm) -> int:
    """Mirrors `HcclGetRankSize`."""
    return _comm(comm, "get_rank_size").rank_size()


def get_rank_id(comm) -> int:
    """Mirrors `HcclGetRankId`."""
    return _comm(comm, "get_rank_id").rank_id()


def comm_destroy(comm) -> None:
    """Mirrors `HcclCommDestroy`."""
    _comm(comm, "comm_destroy").destroy()


# The collectives in HCCL's argument order (comm and stream last); see `Comm`'s methods.
def all_reduce(send, recv, count=None, dtype=None, op=0, comm=None, stream=None):
    return _comm(comm, "all_reduce").all_reduce(send, recv, count, dtype, op, stream)


def broadcast(buf, count=None, dtype=None, root=0, comm=None, stream=None):
    return _comm(comm, "broadcast").broadcast(buf, count, dtype, root, stream)


def all_gather(send, recv, send_count=None, dtype=None, comm=None, stream=None):
    return _comm(comm, "all_gather").all_gather(send, recv, send_count, dtype, stream)


def all_gather_v(send, send_count, recv, recv_counts, recv_displs, dtype=None, comm=None,
                 stream=None):
    return _comm(comm, "all_gather_v").all_gather_v(send, send_count, recv, recv_counts,
                                                    recv_displs, dtype, stream)


def reduce_scatter(send, recv, recv_count=None, dtype=None, op=0, comm=None, stream=None):
    return _comm(comm, "reduce_scatter").reduce_scatter(send, recv, recv_count, dtype, op, stream)


def reduce_scatter_v(send, send_counts, send_displs, recv, recv_count=None, dtype=None, op=0,
                     comm=None, stream=None):
    return _comm(comm, "reduce_scatter_v").reduce_scatter_v(send, send_counts, send_displs, recv,
                                                            recv_count, dtype, op, stream)


def reduce(send, recv, count=None, dtype=None, op=0, root=0, comm=None, stream=None):
    return _comm(comm, "reduce").reduce(send, recv, count, dtype, op, root, stream)


def scatter(send, recv, recv_count=None, dtype=None, root=0, comm=None, stream=None):
    return _comm(comm, "scatter").scatter(send, recv, recv_count, dtype, root, stream)


def alltoall(send, send_count=None, send_type=None, recv=None, recv_count=None, recv_type=None,
             comm=None, stream=None):
    return _comm(comm, "alltoall").alltoall(send, send_count, send_type, recv, recv_count,
                                            recv_type, stream)


def alltoallv(send, send_counts, sdispls, send_type, recv, recv_counts, rdispls, recv_type=None,
              comm=None, stream=None):
    return _comm(comm, "alltoallv").alltoallv(send, send_counts, sdispls, send_type, recv,
                                              recv_counts, rdispls, recv_type, stream)


def send(buf, count=None, dtype=None, dest_rank=None, comm=None, stream=None):
    return _comm(comm, "send").send(buf, count, dtype, dest_rank, stream)


def recv(buf, count=None, dtype=None, src_rank=None, comm=None, stream=None):
    return _comm(comm, "recv").recv(buf, count, dtype, src_rank, stream)


def batch_send_recv(items, comm=None, stream=None):
    return _comm(comm, "batch_send_recv").batch_send_recv(items, stream)


def barrier(comm=None, stream=None):
    return _comm(comm, "barrier").barrier(stream)
