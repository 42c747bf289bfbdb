"""Ring attention (docs/ring-attention.md): time, compute/communication overlap and scaling.

In one process (ranks = emulated devices, `comm_init_all`):
    python -m bench.ring_attention              # B1 N8 D64 fp32, S=8192 total, 2 and 4 ranks
    python -m bench.ring_attention --seq 2048 --ranks 2,4,8 --causal
Across processes (one rank per process, MPI transport):
    mpiexec -n 4 python -m bench.ring_attention --mpi

For each rank count: the wall time of one ring_attention over the whole sequence (every rank's
call enqueued, then every stream synchronised), checked against single-device FA on the same
S; the single-device FlashAttention time on the same total S ("time vs single-device
FA"); strong scaling (same total S); and, from the profiler's records of the timed run, per rank:
the FA kernels' busy time, the K/V transfers' (HcclBatchSendRecv tasks on the comm stream) busy
time, how much of the transfers overlaps FA, how many receives of shard t+1 started before the
FA of shard t ended, and the compute stream's idle time inside the ring. Writes a chrome trace
of the largest run (ring_attention_trace.json, or ..._rank<r>.json under MPI).
Compiled mode by default (kernels warmed up on a small S first, so compile time is not timed).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import rt
from rt import hccl
from kernels.flash_attention import flash_attention_tiling, flash_attention_with_stats
from kernels.ring_attention import comm_stream_for, ring_attention


def _union(iv):
    """Total length of the union of (start, end) intervals, and the merged list."""
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return sum(e - s for s, e in out), out


def _intersect(a, b):
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap_stats(records, compute_stream: int, comm_stream: int) -> dict:
    """Overlap of one rank's ring from the profiler's records (times in ms)."""
    fa = sorted((r for r in records if r.stream == compute_stream and r.kind == "kernel"
                 and "flash_attention" in r.name), key=lambda r: r.start_ns)
    kern = [(r.start_ns, r.end_ns) for r in records if r.stream == compute_stream
            and r.kind == "kernel"]
    comm = sorted((r for r in records if r.stream == comm_stream and r.kind == "hccl"),
                  key=lambda r: r.start_ns)
    busy_c, uc = _union(kern)
    busy_x, ux = _union([(r.start_ns, r.end_ns) for r in comm])
    lo = min([r.start_ns for r in comm] + [s for s, _ in kern])
    hi = max([r.end_ns for r in comm] + [e for _, e in kern])
    # receive t (of shard t+1) vs FA t; with causal skipping FA t may be absent: compare only
    # while there is one FA per step
    early = sum(1 for t in range(min(len(comm), len(fa) - 1))
                if comm[t].start_ns < fa[t].end_ns) if len(fa) > len(comm) else None
    return {"span_ms": (hi - lo) / 1e6, "compute_ms": busy_c / 1e6, "comm_ms": busy_x / 1e6,
            "overlap_ms": _intersect(uc, ux) / 1e6, "idle_ms": (hi - lo - busy_c) / 1e6,
            "early_recvs": early, "steps": len(comm)}


def _qkv(b, n, s, d, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((b, n, s, d)).astype(np.float32) for _ in range(3)]


def _fmt_overlap(st) -> str:
    frac = st["overlap_ms"] / st["comm_ms"] if st["comm_ms"] else 0.0
    early = "n/a" if st["early_recvs"] is None else f"{st['early_recvs']}/{st['steps']}"
    return (f"FA+merge busy {st['compute_ms']:8.1f} ms, transfers {st['comm_ms']:7.1f} ms, "
            f"{frac:5.1%} of them under compute, compute idle {st['idle_ms']:6.1f} ms, "
            f"recv(t+1) started before FA(t) ended: {early}")


def _tiling(d, s):
    """The default FA tiling of an s x s problem, passed explicitly so that the warm-up on a
    small S compiles the very specialisation the timed runs use."""
    return flash_attention_tiling(d, np.float32, s, s)


def single_fa(q, k, v, causal, interpret, reps, tiling=None):
    rt.set_device(0)
    s = rt.Stream()
    dq, dk, dv = (rt.to_device(x) for x in (q, k, v))
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = flash_attention_with_stats(dq, dk, dv, causal=causal, stream=s,
                                         interpret=interpret, tiling=tiling)[0]
        s.synchronize()
        best = min(best, time.perf_counter() - t)
    return best, out.copy_to_host()


def in_process(args) -> None:
    rt.init()
    b, h, S, d = args.batch, args.heads, args.seq, args.head_dim
    ranks = [int(x) for x in args.ranks.split(",")]
    q, k, v = _qkv(b, h, S, d)
    comms = {n: hccl.comm_init_all(list(range(n))) for n in ranks}     # one ring per count
    streams = []
    for i in range(max(ranks)):
        rt.set_device(i)
        streams.append(rt.Stream())

    def ring(n, qq, kk, vv):
        cs = comms[n]
        sl = qq.shape[2] // n
        outs, sts = [], streams[:n]
        ins = [[rt.to_device(np.ascontiguousarray(x[:, :, i * sl:(i + 1) * sl]), device=i)
                for x in (qq, kk, vv)] for i in range(n)]
        t = time.perf_counter()
        for i, c in enumerate(cs):
            outs.append(ring_attention(*ins[i], comm=c, stream=sts[i], causal=args.causal,
                                       interpret=args.interpret, tiling=_tiling(d, S // n)))
        for s in sts:
            s.synchronize()
        dt = time.perf_counter() - t
        return dt, np.concatenate([o.copy_to_host() for o in outs], axis=2)

    # warm-up on a small S: compiles (or loads) the FA and merge kernels of this D/causal/tiling
    w = _qkv(b, h, 128 * max(ranks), d, 1)
    single_fa(*(x[:, :, :256] for x in w), args.causal, args.interpret, 1, _tiling(d, S))
    for n in ranks:
        ring(n, *(x[:, :, :128 * n] for x in w))
    print(f"ring attention B{b} N{h} S={S} (total) D{d} fp32 {'causal' if args.causal else ''}"
          f" ({'interpret' if args.interpret else 'compiled'} mode, in one process, "
          f"{rt.default_core_count()} core workers)")
    t_fa, ref = single_fa(q, k, v, args.causal, args.interpret, args.reps, _tiling(d, S))
    print(f"  single-device FA, S={S}: {t_fa * 1e3:9.1f} ms")
    results = {}
    for n in ranks:
        best, prof = float("inf"), None
        for _ in range(args.reps):
            with rt.profile() as p:
                dt, out = ring(n, q, k, v)
            if dt < best:
                best, prof = dt, p
        err = float(np.abs(out - ref).max())
        results[n] = best
        print(f"  {n} ranks (S_local={S // n}): {best * 1e3:9.1f} ms = {t_fa / best:5.2f}x "
              f"single-device FA (max |ring - FA| {err:.1e})")
        for i in range(n):
            st = overlap_stats(prof.records, streams[i].id, comm_stream_for(streams[i]).id)
            print(f"    rank {i}: {_fmt_overlap(st)}")
        if n == max(ranks):
            path = prof.export_chrome_trace(args.trace)
            print(f"    chrome trace: {path}")
    print("  strong scaling (same total S; all ranks share this host's cores): " +
          ", ".join(f"{n} ranks {t_fa / t:.2f}x" for n, t in results.items()))


def over_mpi(args) -> None:
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    me, n = world.Get_rank(), world.Get_size()
    rt.init()
    info = world.bcast(bytes(hccl.get_root_info()) if me == 0 else None, root=0)
    comm = hccl.comm_init_root_info(n, info, me)
    b, h, S, d = args.batch, args.heads, args.seq, args.head_dim
    sl = S // n
    s = rt.Stream()

    def ring(qq, kk, vv):
        sl = qq.shape[2] // n
        part = [rt.to_device(np.ascontiguousarray(x[:, :, me * sl:(me + 1) * sl]))
                for x in (qq, kk, vv)]
        world.Barrier()
        t = time.perf_counter()
        o = ring_attention(*part, comm=comm, stream=s, causal=args.causal,
                           interpret=args.interpret, tiling=_tiling(d, S // n))
        s.synchronize()
        world.Barrier()
        return time.perf_counter() - t, o.copy_to_host()

    w = _qkv(b, h, 128 * n, d, 1)
    ring(*w)                                         # warm-up (compile or load)
    q, k, v = _qkv(b, h, S, d)
    best, prof, out = float("inf"), None, None
    for _ in range(args.reps):
        with rt.profile() as p:
            dt, o = ring(q, k, v)
        if dt < best:
            best, prof, out = dt, p, o
    st = overlap_stats(prof.records, s.id, comm_stream_for(s).id)
    path = prof.export_chrome_trace(args.trace.replace(".json", f"_rank{me}.json"))
    t_fa = None
    if me == 0:                                      # the baseline while the others wait
        single_fa(*(x[:, :, :256] for x in w), args.causal, args.interpret, 1, _tiling(d, S))
        t_fa, ref = single_fa(q, k, v, args.causal, args.interpret, args.reps, _tiling(d, S))
        err = float(np.abs(out - ref[:, :, :sl]).max())
    # the others wait without spinning (mpich's Barrier busy-polls and would take the cores
    # from rank 0's baseline)
    req = world.Ibarrier()
    while not req.Test():
        time.sleep(0.01)
    lines = world.gather(f"    rank {me}: {_fmt_overlap(st)}; trace {path}", root=0)
    if me == 0:
        print(f"ring attention B{b} N{h} S={S} (total) D{d} fp32 "
              f"{'causal ' if args.causal else ''}over MPI, {n} ranks (one per process; "
              f"{'interpret' if args.interpret else 'compiled'} mode)")
        print(f"  single-device FA, S={S}: {t_fa * 1e3:9.1f} ms")
        print(f"  {n} ranks (S_local={sl}): {best * 1e3:9.1f} ms = {t_fa / best:5.2f}x "
              f"single-device FA (rank 0: max |ring - FA| {err:.1e})")
        print("\n".join(lines))
    comm.destroy()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=8192, help="total S (split over the ranks)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--ranks", default="2,4", help="in-process rank counts, e.g. 2,4,8")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--reps", type=int, default=1, help="timed runs per case (best is kept)")
    ap.add_argument("--interpret", action="store_true", help="interpret mode (default compiled)")
    ap.add_argument("--mpi", action="store_true", help="one rank per process (under mpiexec)")
    ap.add_argument("--trace", default="ring_attention_trace.json")
    args = ap.parse_args(argv)
    if args.seq % max(int(x) for x in args.ranks.split(",")):
        ap.error(f"--seq must be a multiple of every rank count, got --seq={args.seq}")
    if not args.mpi:
        in_process(args)
        return
    try:
        over_mpi(args)
    except BaseException:
        # one rank failing would leave the others waiting in their transfers until
        # HCCL_EXEC_TIMEOUT: end the whole job instead
        import traceback
        from mpi4py import MPI
        traceback.print_exc()
        MPI.COMM_WORLD.Abort(1)


if __name__ == "__main__":
    main()
