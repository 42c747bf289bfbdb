"""One rank of the multi-process HCCL tests: `mpiexec -n N python mpi_worker.py <scenario>`.

Writes one JSON line per report to $HCCL_TEST_OUT/rank<r>.jsonl (tests/rt/hccl/test_mpi.py
reads them), or prints `RESULT <rank> <json>`. Scenarios:
- collectives: every collective over MPI, checked against numpy on every rank;
- never_joins: the last rank never calls comm_init_root_info (HCCL_CONNECT_TIMEOUT);
- exec_timeout: the last rank never calls the all_reduce (HCCL_EXEC_TIMEOUT);
- cluster_info: comm_init_cluster_info from the rank table $HCCL_TEST_TABLE, all-reduces;
- bad_table: comm_init_cluster_info on a bad table (or with ranks swapped), reports the error;
- algo_mismatch: the last rank sets HCCL_ALGO=ring, the others leave it unset (the join refuses).
"""
import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import rt
from rt import hccl

world = MPI.COMM_WORLD
me, n = world.Get_rank(), world.Get_size()


def report(**kw):
    """One JSON line per report, into $HCCL_TEST_OUT/rank<r>.jsonl (or stdout)."""
    line = json.dumps(kw)
    out = os.environ.get("HCCL_TEST_OUT")
    if out:
        with open(os.path.join(out, f"rank{me}.jsonl"), "a") as f:
            f.write(line + "\n")
    else:
        print(f"RESULT {me} {line}", flush=True)


def init_comm():
    rt.init()
    info = hccl.get_root_info() if me == 0 else None
    info = world.bcast(bytes(info) if info is not None else None, root=0)   # out of band: MPI
    return hccl.comm_init_root_info(n, info, me)


def check(name, got, want):
    ok = bool(np.array_equal(got, want)) if got.dtype.kind in "iu" else \
        bool(np.allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2))
    if not ok:
        report(failed=name, got=got[:8].astype(float).tolist(),
               want=np.asarray(want)[:8].astype(float).tolist())
    return ok


def collectives():
    comm = init_comm()
    s = rt.Stream()
    ok = True
    rng = np.random.default_rng(1)
    all_data = {dt: [rng.uniform(1, 3, 1001).astype(hccl.dtype_of(dt, "t")) for _ in range(n)]
                for dt in ("fp32", "int32", "bf16", "int8")}
    for dt, data in all_data.items():
        for op, uf in (("sum", np.add), ("prod", np.multiply), ("max", np.maximum),
                       ("min", np.minimum)):
            if op == "prod" and dt == "bf16":
                continue
            x = rt.to_device(data[me])
            y = rt.device_zeros((1001,), x.dtype)
            t = comm.all_reduce(x, y, op=op, stream=s)
            s.synchronize()
            assert t.done
            want = data[0].astype(np.float64) if dt in ("fp32", "bf16") else data[0].copy()
            for d in data[1:]:
                want = uf(want, d.astype(want.dtype))
            ok &= check(f"all_reduce {dt} {op}", y.copy_to_host(), want)
    b = rt.to_device(np.full(777, me, np.int16))
    comm.broadcast(b, root=n - 1, stream=s)
    g = rt.device_zeros((5 * n,), np.float32)
    comm.all_gather(rt.to_device(np.full(5, me, np.float32)), g, stream=s)
    rs_in = rt.to_device(np.arange(3 * n, dtype=np.int64) * (me + 1))
    rs_out = rt.device_zeros((3,), np.int64)
    comm.reduce_scatter(rs_in, rs_out, 3, op="sum", stream=s)
    red = rt.device_zeros((9,), np.float64)
    comm.reduce(rt.to_device(np.full(9, me + 1.0)), red, op="sum", root=0, stream=s)
    sc = rt.device_zeros((4,), np.int32)
    comm.scatter(rt.to_device(np.arange(4 * n, dtype=np.int32)), sc, 4, root=0, stream=s)
    a2a = rt.device_zeros((2 * n,), np.int32)
    comm.alltoall(rt.to_device(np.arange(2 * n, dtype=np.int32) + 100 * me), 2, "int32", a2a, 2,
                  "int32", stream=s)
    p2p = rt.device_zeros((6,), np.float32)
    src = rt.to_device(np.full(6, 10.0 + me, np.float32))
    comm.batch_send_recv([(0, src, 6, "fp32", (me + 1) % n), (1, p2p, 6, "fp32", (me - 1) % n)],
                         stream=s)
    comm.barrier(stream=s)
    s.synchronize()
    ok &= check("broadcast", b.copy_to_host(), np.full(777, n - 1))
    ok &= check("all_gather", g.copy_to_host(), np.repeat(np.arange(n), 5))
    total = np.arange(3 * n) * sum(range(1, n + 1))
    ok &= check("reduce_scatter", rs_out.copy_to_host(), total[3 * me:3 * me + 3])
    if me == 0:
        ok &= check("reduce", red.copy_to_host(), np.full(9, n * (n + 1) / 2))
    ok &= check("scatter", sc.copy_to_host(), np.arange(4 * me, 4 * me + 4))
    want = np.concatenate([np.arange(2 * me, 2 * me + 2) + 100 * i for i in range(n)])
    ok &= check("alltoall", a2a.copy_to_host(), want)
    ok &= check("batch_send_recv", p2p.copy_to_host(), np.full(6, 10.0 + (me - 1) % n))
    if me == 0:
        x = rt.to_device(np.arange(8, dtype=np.float32))
        comm.send(x, dest_rank=1, stream=s)
    elif me == 1:
        y = rt.device_zeros((8,), np.float32)
        comm.recv(y, src_rank=0, stream=s)
        s.synchronize()
        ok &= check("send/recv", y.copy_to_host(), np.arange(8))
    s.synchronize()
    report(ok=bool(ok), device=comm.device, transport=comm.transport, rank=comm.rank_id(),
           size=comm.rank_size())
    comm.destroy()


def never_joins():
    rt.init()
    info = world.bcast(bytes(hccl.get_root_info()) if me == 0 else None, root=0)
    if me == n - 1:
        world.Barrier()                  # never joins; waits for the others to finish
        report(skipped=True)
        return
    t0 = time.perf_counter()
    try:
        hccl.comm_init_root_info(n, info, me)
        report(code=0)
    except hccl.HcclError as e:
        report(code=e.code, seconds=round(time.perf_counter() - t0, 2), msg=str(e))
    world.Barrier()


def exec_timeout():
    comm = init_comm()
    s = rt.Stream()
    x = rt.to_device(np.ones(100, np.float32))
    if me != n - 1:
        t0 = time.perf_counter()
        comm.all_reduce(x, x, stream=s)
        try:
            s.synchronize()
            report(code=0)
        except rt.AclError as e:
            report(code=e.code, cause=type(e.__cause__).__name__,
                   seconds=round(time.perf_counter() - t0, 2))
    world.Barrier()
    if me == n - 1:
        report(skipped=True)


def cluster_info():
    """comm_init_cluster_info from $HCCL_TEST_TABLE (HCCL rank = world rank), then all-reduces
    with whatever HCCL_ALGO says, checked against numpy; reports the algorithm and link used."""
    rt.init()
    comm = hccl.comm_init_cluster_info(os.environ["HCCL_TEST_TABLE"], me)
    s = rt.Stream()
    ok, algos, links = True, set(), set()
    rng = np.random.default_rng(7)
    for dt, count in (("fp32", 1001), ("int32", 3), ("int64", 257), ("bf16", 64)):
        data = [rng.uniform(-3, 3, count).astype(hccl.dtype_of(dt, "t")) for _ in range(n)]
        for op, uf in (("sum", np.add), ("max", np.maximum), ("min", np.minimum)):
            x = rt.to_device(data[me])
            y = rt.device_zeros((count,), x.dtype)
            t = comm.all_reduce(x, y, op=op, stream=s)
            s.synchronize()
            algos.add(t.args["algorithm"])
            links.add(t.args["est_link"])
            want = data[0].astype(np.float64) if dt in ("fp32", "bf16") else data[0].copy()
            for d in data[1:]:
                want = uf(want, d.astype(want.dtype))
            ok &= check(f"all_reduce {dt} {op} {count}", y.copy_to_host(), want)
    report(ok=bool(ok), rank=comm.rank_id(), size=comm.rank_size(), device=comm.device,
           transport=comm.transport, algorithms=sorted(algos), links=sorted(links))
    comm.destroy()


def bad_table():
    """Every rank calls comm_init_cluster_info on $HCCL_TEST_TABLE with rank
    $HCCL_TEST_RANK_SHIFT + world rank (mod n); reports the error."""
    rt.init()
    rank = (me + int(os.environ.get("HCCL_TEST_RANK_SHIFT", "0"))) % n
    try:
        hccl.comm_init_cluster_info(os.environ["HCCL_TEST_TABLE"], rank)
        report(code=0)
    except hccl.HcclError as e:
        report(code=e.code, msg=str(e))
    world.Barrier()


def algo_mismatch():
    if me == n - 1:
        os.environ["HCCL_ALGO"] = "level0:NA;level1:ring"
    rt.init()
    info = world.bcast(bytes(hccl.get_root_info()) if me == 0 else None, root=0)
    try:
        hccl.comm_init_root_info(n, info, me)
        report(code=0)
    except hccl.HcclError as e:
        report(code=e.code, msg=str(e))
    world.Barrier()


if __name__ == "__main__":
    {"collectives": collectives, "never_joins": never_joins,
     "exec_timeout": exec_timeout, "cluster_info": cluster_info,
     "bad_table": bad_table, "algo_mismatch": algo_mismatch}[sys.argv[1]]()
