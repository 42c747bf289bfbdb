"""All-reduce bandwidth of rt.hccl (docs/hccl.md).

In one process: `python -m bench.hccl_allreduce [--mib 64] [--ranks 8] [--kernel]` compares the
algorithm bandwidth (bytes / time) of an in-process all-reduce over emulated devices with
one device-to-device `rt.memcpy` of the same bytes.
Across processes: `mpiexec -n 4 python -m bench.hccl_allreduce --mpi [--mib 64]` compares
rt.hccl over MPI with mpi4py's own `Allreduce` on the same buffers.
`--algo ring|H-D_R|auto|both` (default both): the algorithm (HCCL_ALGO) of rt.hccl's all-reduce;
`both` measures ring and halving-doubling in the same run. Each line also gives the NPU-view
estimate of the same all-reduce (rt/hccl/estimate.py, assumed link numbers).
"""
from __future__ import annotations

import argparse
import os
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


def _algos(algo: str) -> list[str]:
    return ["ring", "H-D_R"] if algo == "both" else [algo]


def _set_algo(algo: str) -> None:
    if algo == "auto":
        os.environ.pop("HCCL_ALGO", None)
    else:
        os.environ["HCCL_ALGO"] = f"level0:NA;level1:{algo}"


def in_process(mib: int, n: int, reps: int, algo: str) -> None:
    rt.init()
    count = mib * (1 << 20) // 4
    nb = count * 4
    streams, xs = [], []
    for d in range(n):
        rt.set_device(d)
        streams.append(rt.Stream())
        xs.append(rt.to_device(np.ones(count, np.float32), device=d))
    rt.set_device(0)
    a = rt.device_empty((count,), np.float32, device=0)
    b = rt.device_empty((count,), np.float32, device=1)
    tm = _best(lambda: rt.memcpy(b.ptr, a.ptr, a.nbytes, rt.MemcpyKind.DEVICE_TO_DEVICE), reps)
    print(f"one D2D memcpy of {mib} MiB: {tm * 1e3:.1f} ms ({nb / tm / 1e9:.2f} GB/s)")
    for al in _algos(algo):
        _set_algo(al)
        comms = hccl.comm_init_all(list(range(n)))
        tasks = []

        def allreduce():
            tasks[:] = [c.all_reduce(x, x, stream=s) for c, s, x in zip(comms, streams, xs)]
            for s in streams:
                s.synchronize()

        t = _best(allreduce, reps)
        args = tasks[0].args
        print(f"in-process all-reduce {mib} MiB fp32 on {n} devices, {args['algorithm']}: "
              f"{t * 1e3:.1f} ms, algbw {nb / t / 1e9:.2f} GB/s; ratio to the memcpy "
              f"{tm / t:.3f}; reductions kernel/numpy: {comms[0].stats['kernel_reductions']}/"
              f"{comms[0].stats['numpy_reductions']}; NPU estimate {args['npu_est_us']:.0f} us "
              f"on {args['est_link']}")
        for c in comms:
            c.destroy()


def over_mpi(mib: int, reps: int, algo: str) -> None:
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    me, n = world.Get_rank(), world.Get_size()
    rt.init()
    rt.set_device(me % rt.device_count())          # as comm_init_root_info binds the rank
    s = rt.Stream()
    count = mib * (1 << 20) // 4
    nb = count * 4
    x = rt.to_device(np.ones(count, np.float32))
    y = rt.device_empty((count,), np.float32)
    xv, yv = x.host_view(), y.host_view()

    def theirs():
        world.Barrier()
        world.Allreduce(xv, yv, op=MPI.SUM)

    t2 = _best(theirs, reps)
    if me == 0:
        print(f"mpi4py Allreduce {mib} MiB fp32 on {n} ranks: {t2 * 1e3:.1f} ms "
              f"({nb / t2 / 1e9:.2f} GB/s)")
    for al in _algos(algo):
        _set_algo(al)
        info = world.bcast(bytes(hccl.get_root_info()) if me == 0 else None, root=0)
        comm = hccl.comm_init_root_info(n, info, me)
        tasks = []

        def ours():
            world.Barrier()
            tasks[:] = [comm.all_reduce(x, y, stream=s)]
            s.synchronize()

        t1 = _best(ours, reps)
        if me == 0:
            args = tasks[0].args
            print(f"MPI all-reduce {mib} MiB fp32 on {n} ranks, rt.hccl {args['algorithm']}: "
                  f"{t1 * 1e3:.1f} ms ({nb / t1 / 1e9:.2f} GB/s); mpi4py/rt.hccl time ratio "
                  f"{t2 / t1:.2f}x; NPU estimate {args['npu_est_us']:.0f} us on "
                  f"{args['est_link']}")
        comm.destroy()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mpi", action="store_true")
    ap.add_argument("--kernel", action="store_true", help="reduce with kernels/hccl_reduce.py")
    ap.add_argument("--algo", default="both", choices=["ring", "H-D_R", "auto", "both"],
                    help="all-reduce algorithm (HCCL_ALGO); both = ring and H-D_R")
    a = ap.parse_args()
    if a.kernel:
        import kernels.hccl_reduce  # noqa: F401 - registers the reduction kernel
    if a.mpi:
        over_mpi(a.mib, a.reps, a.algo)
    else:
        in_process(a.mib, a.ranks, a.reps, a.algo)


if __name__ == "__main__":
    main()
