"""The NPU view of a collective: an ESTIMATE of its time on real links, from the SoC's link specs.

The emulator's own time for a collective is CPU copies and says nothing about an NPU cluster, so
every collective task also carries `npu_est_us` (microseconds), `est_link` and `est_source` in
its profiler args. The model is the alpha-beta (latency-bandwidth) cost model that HCCL's user
guide uses for its algorithms ("集合通信算法介绍": Ring, RHD, ... each with a time formula in
alpha = per-message latency and beta = seconds per byte) and that Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH" (IJHPCA 19(1), 2005) derive:
with n ranks, N bytes (the task's `nbytes`, see below), B = link bandwidth (bytes/s, one
direction of one link) and a = link latency (s):

| collective (algorithm)        | time                                                   |
|---|---|
| all_reduce, ring              | 2(n-1) a + 2 (n-1)/n N/B                               |
| all_reduce, H-D_R, n = 2^k    | 2 log2(n) a + 2 (n-1)/n N/B                            |
| all_reduce, H-D_R, other n    | 2 a + 2 N/B + the above with p = 2^floor(log2 n)       |
| reduce_scatter(_v), all_gather(_v) (ring) | (n-1) a + (n-1)/n N/B                      |
| reduce (ring RS + gather)     | n a + 2 (n-1)/n N/B                                    |
| broadcast (pipelined chain)   | (n-1) a + N/B                                          |
| scatter (root sends n-1 parts)| a + (n-1)/n N/B                                        |
| alltoall(v) (pairwise)        | (n-1) a + (n-1)/n N/B                                  |
| send, recv, batch_send_recv   | a + N/B                                                |
| barrier (dissemination)       | ceil(log2 n) a                                         |

N is the full vector for all_reduce/reduce/broadcast, the whole input of reduce_scatter, the
whole output of all_gather, root's whole buffer for scatter, one rank's send bytes for
alltoall(v), the bytes of the transfer for point-to-point. Left out, as assumptions: the
reduction's compute time (gamma: HCCL reduces on the AI Core or in the link's inline reduce),
contention, HCCL's small-message mesh/star variants inside a server (level0), and a ring's
pipeline fill. The link is the SoC's intra-server link (HCCS on 910B) when every rank of the
communicator is on one server, else its inter-server link (RoCE) for every step: the ring's
slowest hop bounds it. Link numbers: `rt.soc.LINKS` (sources and assumptions listed there).
"""
from __future__ import annotations

import math

from ..soc import LinkSpec, get_links


def _log2_ceil(n: int) -> int:
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def estimate_seconds(name: str, algorithm: str, n: int, nbytes: int, bw: float,
                     lat: float) -> float:
    """The table above: `name` is the task's name (`HcclAllReduce`, ...)."""
    if n <= 1:
        return 0.0
    frac = (n - 1) / n
    t = nbytes / bw
    if name == "HcclAllReduce":
        if algorithm == "H-D_R":
            p = 1 << (n.bit_length() - 1)
            pw = 2 * int(math.log2(p)) * lat + 2 * (p - 1) / p * t
            return pw if p == n else 2 * lat + 2 * t + pw
        return 2 * (n - 1) * lat + 2 * frac * t
    if name in ("HcclReduceScatter", "HcclReduceScatterV", "HcclAllGather", "HcclAllGatherV",
                "HcclAlltoAll", "HcclAlltoAllV"):
        return (n - 1) * lat + frac * t
    if name == "HcclReduce":
        return n * lat + 2 * frac * t
    if name == "HcclBroadcast":
        return (n - 1) * lat + t
    if name == "HcclScatter":
        return lat + frac * t
    if name in ("HcclSend", "HcclRecv", "HcclBatchSendRecv"):
        return lat + t
    if name == "HcclBarrier":
        return _log2_ceil(n) * lat
    raise ValueError(f"estimate_seconds: name must be an HCCL task name, got name={name!r}")


def link_of(links: LinkSpec, servers) -> tuple[str, float, float]:
    """(link name, bandwidth, latency) for ranks on `servers` (one id per rank, None = one
    server)."""
    if servers is None or len(set(servers)) <= 1:
        return links.intra, links.intra_bandwidth, links.intra_latency
    return links.inter, links.inter_bandwidth, links.inter_latency


def npu_estimate(name: str, algorithm: str, n: int, nbytes: int, servers=None,
                 soc: str | None = None) -> dict:
    """The profiler args of the estimate: npu_est_us, est_link, est_source."""
    links = get_links(soc)
    link, bw, lat = link_of(links, servers)
    us = estimate_seconds(name, algorithm, n, nbytes, bw, lat) * 1e6
    return {"npu_est_us": round(us, 3), "est_link": link,
            "est_source": f"estimate, not measured: alpha-beta model (rt/hccl/estimate.py) on "
                          f"{link} {bw / 1e9:g} GB/s, {lat * 1e6:g} us/message (assumed values, "
                          f"see rt.soc.LINKS)"}
