"""Every collective of rt.hccl against numpy over ranks, in one process (comm_init_all).

Ranks are emulated devices; each rank's collective is a task on its own stream, so all ranks run
at once on their stream workers. Chunks are tiny (64 bytes) so the pipelined ring is exercised.
"""
import zlib

import numpy as np
import pytest

import rt
from rt import hccl
from rt.hccl import HcclResult

from hccl_test_data import DTYPES, _check, _data, _reference


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_all_reduce_every_dtype_and_op(ranks, dtype, op):
    R = ranks(3)
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op)).encode()))
    data = _data(rng, 3, 101, dtype, op)              # 101: ragged over 3 ranks and chunks
    xs, ys = R.put(data), R.empty(101, data[0].dtype)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.all_reduce(x, y, op=op, comm=c, stream=s)
    want = _reference(op, data)
    for got in R.get(ys):
        _check(got, want, dtype)


@pytest.mark.parametrize("n,count", [(1, 7), (2, 1), (4, 3), (5, 1000), (8, 257)])
def test_all_reduce_ranks_and_ragged_counts_in_place(ranks, n, count):
    R = ranks(n)
    data = _data(np.random.default_rng(n), n, count, "int32")
    xs = R.put(data)
    for c, s, x in zip(R.comms, R.streams, xs):
        c.all_reduce(x, x, stream=s)                  # in place, as HCCL allows
    want = _reference("sum", data)
    for got in R.get(xs):
        np.testing.assert_array_equal(got, want)


def test_all_reduce_with_device_pointers_and_explicit_count(ranks):
    R = ranks(2)
    data = [np.arange(10, dtype=np.float32) * (r + 1) for r in range(2)]
    xs, ys = R.put(data), R.empty(10, np.float32)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.all_reduce(x.ptr, y.ptr, 6, hccl.HcclDataType.HCCL_DATA_TYPE_FP32,
                        hccl.HcclReduceOp.HCCL_REDUCE_SUM, c, s)
    for got in R.get(ys):
        np.testing.assert_array_equal(got[:6], np.arange(6) * 3.0)
        np.testing.assert_array_equal(got[6:], 0)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("root", [0, -1])
def test_broadcast(ranks, n, root):
    R = ranks(n)
    root %= n
    data = [np.full(77, r, np.int16) for r in range(n)]
    xs = R.put(data)
    for c, s, x in zip(R.comms, R.streams, xs):
        hccl.broadcast(x, root=root, comm=c, stream=s)
    for got in R.get(xs):
        np.testing.assert_array_equal(got, data[root])


@pytest.mark.parametrize("n", [2, 3, 4])
def test_all_gather(ranks, n):
    R = ranks(n)
    data = _data(np.random.default_rng(1), n, 13, "float16")
    xs, ys = R.put(data), R.empty(13 * n, np.float16)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.all_gather(x, y, comm=c, stream=s)
    for got in R.get(ys):
        np.testing.assert_array_equal(got, np.concatenate(data))


@pytest.mark.parametrize("op", ["sum", "max"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_reduce_scatter(ranks, n, op):
    R = ranks(n)
    data = _data(np.random.default_rng(2), n, 9 * n, "int64")
    xs, ys = R.put(data), R.empty(9, np.int64)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.reduce_scatter(x, y, 9, op=op, comm=c, stream=s)
    want = _reference(op, data)
    for r, got in enumerate(R.get(ys)):
        np.testing.assert_array_equal(got, want[9 * r:9 * (r + 1)])


@pytest.mark.parametrize("root", [0, 2])
def test_reduce(ranks, root):
    R = ranks(3)
    data = _data(np.random.default_rng(3), 3, 50, "float32")
    xs, ys = R.put(data), R.empty(50, np.float32)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.reduce(x, y, op="sum", root=root, comm=c, stream=s)
    got = R.get(ys)
    np.testing.assert_allclose(got[root], _reference("sum", data), rtol=1e-5, atol=1e-5)
    for r in range(3):
        if r != root:
            np.testing.assert_array_equal(got[r], 0)   # recv is only written at the root


def test_scatter(ranks):
    R = ranks(4)
    full = np.arange(4 * 6, dtype=np.uint8)
    xs = R.put([full if r == 1 else np.zeros_like(full) for r in range(4)])
    ys = R.empty(6, np.uint8)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.scatter(x, y, 6, root=1, comm=c, stream=s)
    for r, got in enumerate(R.get(ys)):
        np.testing.assert_array_equal(got, full[6 * r:6 * (r + 1)])


def test_alltoall(ranks):
    n, c_ = 3, 5
    R = ranks(n)
    data = [np.arange(n * c_, dtype=np.int32) + 100 * r for r in range(n)]
    xs, ys = R.put(data), R.empty(n * c_, np.int32)
    for c, s, x, y in zip(R.comms, R.streams, xs, ys):
        hccl.alltoall(x, c_, "int32", y, c_, "int32", comm=c, stream=s)
    for j, got in enumerate(R.get(ys)):
        want = np.concatenate([data[i][j * c_:(j + 1) * c_] for i in range(n)])
        np.testing.assert_array_equal(got, want)


def test_alltoallv_ragged(ranks):
    n = 3
    R = ranks(n)
    counts = np.array([[1, 2, 3], [0, 4, 1], [2, 0, 5]])       # counts[i][j]: i sends to j
    sends = []
    for i in range(n):
        sends.append(np.concatenate([np.full(counts[i][j], 10 * i + j, np.float64)
                                     for j in range(n)]))
    xs = R.put(sends)
    ys = R.empty(int(counts.sum(axis=0).max()), np.float64)
    for i, (c, s, x, y) in enumerate(zip(R.comms, R.streams, xs, ys)):
        sc = counts[i]
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
        rc = counts[:, i]
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
        hccl.alltoallv(x, sc, sd, "fp64", y, rc, rd, "fp64", comm=c, stream=s)
    for j, got in enumerate(R.get(ys)):
        want = np.concatenate([np.full(counts[i][j], 10 * i + j, np.float64) for i in range(n)])
        np.testing.assert_array_equal(got[:len(want)], want)


def test_all_gather_v_and_reduce_scatter_v_ragged(ranks):
    n = 3
    R = ranks(n)
    counts, displs = [2, 0, 5], [0, 3, 3]            # a gap and an empty rank
    data = [np.arange(counts[r], dtype=np.int32) + 10 * r for r in range(n)]
    xs = R.put([d if len(d) else np.zeros(1, np.int32) for d in data])
    ys = R.empty(8, np.int32)
    for r, (c, s, x, y) in enumerate(zip(R.comms, R.streams, xs, ys)):
        hccl.all_gather_v(x, counts[r], y, counts, displs, "int32", comm=c, stream=s)
    for got in R.get(ys):
        np.testing.assert_array_equal(got[0:2], data[0])
        np.testing.assert_array_equal(got[3:8], data[2])
    full = [np.arange(8, dtype=np.int32) * (r + 1) for r in range(n)]
    xs = R.put(full)
    zs = R.empty(5, np.int32)
    for r, (c, s, x, z) in enumerate(zip(R.comms, R.streams, xs, zs)):
        hccl.reduce_scatter_v(x, counts, displs, z, counts[r], "int32", "sum", comm=c, stream=s)
    total = np.sum(full, axis=0)
    for r, got in enumerate(R.get(zs)):
        np.testing.assert_array_equal(got[:counts[r]], total[displs[r]:displs[r] + counts[r]])


def test_send_recv_ring_and_batch(ranks):
    n = 4
    R = ranks(n)
    data = [np.full(33, r, np.float32) for r in range(n)]
    xs, ys = R.put(data), R.empty(33, np.float32)
    for r, (c, s, x, y) in enumerate(zip(R.comms, R.streams, xs, ys)):
        if r % 2 == 0:                                   # even ranks send first: no deadlock
            hccl.send(x, dest_rank=(r + 1) % n, comm=c, stream=s)
            hccl.recv(y, src_rank=(r - 1) % n, comm=c, stream=s)
        else:
            hccl.recv(y, src_rank=(r - 1) % n, comm=c, stream=s)
            hccl.send(x, dest_rank=(r + 1) % n, comm=c, stream=s)
    for r, got in enumerate(R.get(ys)):
        np.testing.assert_array_equal(got, data[(r - 1) % n])
    zs = R.empty(33, np.float32)
    for r, (c, s, x, z) in enumerate(zip(R.comms, R.streams, xs, zs)):
        items = [hccl.SendRecvItem(hccl.HcclSendRecvType.HCCL_SEND, x, 33, "fp32", (r + 1) % n),
                 (hccl.HcclSendRecvType.HCCL_RECV, z, 33, "fp32", (r - 1) % n)]
        hccl.batch_send_recv(items, comm=c, stream=s)     # all send first: batched, no deadlock
    for r, got in enumerate(R.get(zs)):
        np.testing.assert_array_equal(got, data[(r - 1) % n])


def test_rank_queries_and_destroy(ranks):
    R = ranks(3)
    assert [hccl.get_rank_id(c) for c in R.comms] == [0, 1, 2]
    assert {hccl.get_rank_size(c) for c in R.comms} == {3}
    assert [c.device for c in R.comms] == [0, 1, 2]
    hccl.comm_destroy(R.comms[0])
    with pytest.raises(hccl.HcclError) as ei:
        hccl.get_rank_id(R.comms[0])
    assert ei.value.code == HcclResult.HCCL_E_PARA


def test_refusals_carry_hccl_codes(ranks):
    R = ranks(2)
    c, s = R.comms[0], R.streams[0]
    x = rt.device_zeros((8,), np.float32, device=0)
    other = rt.device_zeros((8,), np.float32, device=1)
    cases = [
        lambda: hccl.all_reduce(np.zeros(8, np.float32), x, comm=c, stream=s),   # host buffer
        lambda: hccl.all_reduce(x, x.host_view().ctypes.data, 8, "fp32", comm=c, stream=s),
        lambda: hccl.all_reduce(x, other, comm=c, stream=s),              # another device
        lambda: hccl.all_reduce(x, x, comm=c, stream=R.streams[1]),       # stream elsewhere
        lambda: hccl.all_reduce(x, x, 9, comm=c, stream=s),               # count > buffer
        lambda: hccl.all_reduce(x, x, op=7, comm=c, stream=s),
        lambda: hccl.broadcast(x, root=2, comm=c, stream=s),
        lambda: hccl.send(x, dest_rank=0, comm=c, stream=s),              # to itself
        lambda: hccl.all_reduce(x, x, comm="comm", stream=s),
        lambda: hccl.all_reduce(x.ptr, x.ptr, 8, "int128", comm=c, stream=s),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(hccl.HcclError) as ei:
            case()
        want = HcclResult.HCCL_E_NOT_SUPPORT if i == len(cases) - 1 else HcclResult.HCCL_E_PARA
        assert ei.value.code == want, (i, ei.value)
        assert isinstance(ei.value, rt.AclError)
    assert s.query()                                      # nothing was enqueued


def test_acl_facade_returns_hccl_codes(ranks):
    import rt.acl as acl
    R = ranks(2)
    handles, ret = acl.hccl.comm_init_all(2, [0, 1])
    assert ret == 0 and len(handles) == 2
    assert acl.hccl.get_rank_id(handles[1]) == (1, 0)
    assert acl.hccl.get_rank_size(handles[0]) == (2, 0)
    xs = R.put([np.full(8, 2, np.int32), np.full(8, 5, np.int32)])
    streams = [rt.default_stream(0), rt.default_stream(1)]
    for h, s, x in zip(handles, streams, xs):
        assert acl.hccl.all_reduce(x.ptr, x.ptr, 8, 2, 3, h, s) == 0      # INT32, MIN
    for s in streams:
        s.synchronize()
    for x in xs:
        np.testing.assert_array_equal(x.copy_to_host(), 2)
    host = np.zeros(8, np.int32)
    assert acl.hccl.all_reduce(host, xs[0].ptr, 8, 2, 0, handles[0], 0) == 1   # HCCL_E_PARA
    assert "host buffer" in acl.get_recent_err_msg()
    assert acl.hccl.all_reduce(xs[0].ptr, xs[0].ptr, 8, 2, 0, 12345, 0) == 1
    assert acl.hccl.get_error_string(9) == "HCCL_E_TIMEOUT"
    assert acl.hccl.comm_destroy(handles[0]) == 0
    assert acl.hccl.comm_destroy(handles[0]) == 1
