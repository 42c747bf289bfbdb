"""All-reduce bandwidth of rt.hccl (issue 14 §4, first numbers).

In one process: `python -m bench.hccl_allreduce [--mib 64] [--ranks 8] [--kernel]` compares the
algorithm bandwidth (bytes / time) of an in-process ring all-reduce over emulated devices with
one device-to-device `rt.memcpy` of the same bytes.
Across processes: `mpiexec -n 4 python -m bench.hccl_allreduce --mpi [--mib 64]` compares
rt.hccl over MPI with mpi4py's own `Allreduce` on the same buffers.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import rt
from rt import hccl


def _best(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def in_process(mib: int, n: int, reps: int) -> None:
    rt.init()
    count = mib * (1 << 20) // 4
    comms = hccl.comm_init_all(list(range(n)))
    streams = []
    for c in comms:
        rt.set_device(c.device)
        streams.append(rt.Stream())
    xs = [rt.to_device(np.ones(count, np.float32), device=c.device) for c in comms]

    def allreduce():
        for c, s, x in zip(comms, streams, xs):
            c.all_reduce(x, x, stream=s)
        for s in streams:
            s.synchronize()

    t = _best(allreduce, reps)
    rt.set_device(0)
    a = rt.device_empty((count,), np.float32, device=0)
    b = rt.device_empty((count,), np.float32, device=1)
    tm = _best(lambda: rt.memcpy(b.ptr, a.ptr, a.nbytes, rt.MemcpyKind.DEVICE_TO_DEVICE), reps)
    nb = count * 4
    print(f"in-process all-reduce {mib} MiB fp32 on {n} devices: {t * 1e3:.1f} ms, "
          f"algbw {nb / t / 1e9:.2f} GB/s; one D2D memcpy of the same bytes: {tm * 1e3:.1f} ms "
          f"({nb / tm / 1e9:.2f} GB/s); ratio {tm / t:.3f}; "
          f"reductions kernel/numpy: {comms[0].stats['kernel_reductions']}/"
          f"{comms[0].stats['numpy_reductions']}")


def over_mpi(mib: int, reps: int) -> None:
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    me, n = world.Get_rank(), world.Get_size()
    rt.init()
    info = world.bcast(bytes(hccl.get_root_info()) if me == 0 else None, root=0)
    comm = hccl.comm_init_root_info(n, info, me)
    s = rt.Stream()
    count = mib * (1 << 20) // 4
    x = rt.to_device(np.ones(count, np.float32))
    y = rt.device_empty((count,), np.float32)

    def ours():
        world.Barrier()
        comm.all_reduce(x, y, stream=s)
        s.synchronize()

    xv, yv = x.host_view(), y.host_view()

    def theirs():
        world.Barrier()
        world.Allreduce(xv, yv, op=MPI.SUM)

    t1, t2 = _best(ours, reps), _best(theirs, reps)
    if me == 0:
        nb = count * 4
        print(f"MPI all-reduce {mib} MiB fp32 on {n} ranks: rt.hccl {t1 * 1e3:.1f} ms "
              f"({nb / t1 / 1e9:.2f} GB/s), mpi4py Allreduce {t2 * 1e3:.1f} ms "
              f"({nb / t2 / 1e9:.2f} GB/s); ratio {t2 / t1:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mpi", action="store_true")
    ap.add_argument("--kernel", action="store_true", help="reduce with kernels/hccl_reduce.py")
    a = ap.parse_args()
    if a.kernel:
        import kernels.hccl_reduce  # noqa: F401 - registers the reduction kernel
    if a.mpi:
        over_mpi(a.mib, a.reps)
    else:
        in_process(a.mib, a.ranks, a.reps)


if __name__ == "__main__":
    main()
