"""Ring attention (kernels/ring_attention.py): sequence-parallel FlashAttention over rt.hccl.

In one process (comm_init_all over the emulated devices, every rank enqueued from one thread or
driven from its own thread) in both modes, against the float64 numpy reference of the full
attention and against single-device FA on the whole S; the merge kernel against its numpy
reference; the overlap of transfers and FA from the profiler's recorded timestamps; under
mpiexec with ring_worker.py. One fixed FA tiling (as tests/kernels) keeps compiled
specialisations shared."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import rt
from rt import hccl
from kernels.flash_attention import FlashAttentionTiling, flash_attention_with_stats
from kernels.ring_attention import (comm_stream_for, ring_attention, ring_attention_reference,
                                    ring_merge, ring_merge_reference)
from kernels.tolerances import assert_close

TILING = FlashAttentionTiling(32, 144, 32)
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def shards(n, b, h, s, d, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((b, h, s, d)).astype(np.float32).astype(dtype)
             for _ in range(n)] for _ in range(3)]


def run_ring(ranks, q, k, v, *, causal, interpret, threads=False, **kw):
    """Every rank's ring_attention (from this thread, or one thread per rank); host outputs."""
    R = ranks(len(q), chunk_bytes=1 << 20)
    outs = [None] * R.n

    def one(i):
        c = R.comms[i]
        rt.set_device(c.device)
        dq, dk, dv = (rt.to_device(x[i], device=c.device) for x in (q, k, v))
        outs[i] = ring_attention(dq, dk, dv, comm=c, stream=R.streams[i], causal=causal,
                                 tiling=TILING, interpret=interpret, **kw)

    if threads:
        ts = [threading.Thread(target=one, args=(i,)) for i in range(R.n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        for i in range(R.n):
            one(i)
    return R, R.get(outs)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_matches_single_device_fa_and_numpy(ranks, interpret, n, causal):
    q, k, v = shards(n, 1, 2, 40, 64, seed=n)       # S_local 40: not a multiple of the S1 block
    _, got = run_ring(ranks, q, k, v, causal=causal, interpret=interpret)
    for o, want in zip(got, ring_attention_reference(q, k, v, causal=causal)):
        assert_close(o, want, np.float32, scale=5)
    rt.set_device(0)
    full = flash_attention_with_stats(*(np.concatenate(x, axis=2) for x in (q, k, v)),
                                      causal=causal, tiling=TILING, interpret=interpret)[0]
    assert_close(np.concatenate(got, axis=2), full, np.float32, scale=5)


def test_ragged_shards_and_rows_driven_from_threads(ranks, interpret):
    # S_local 45 crosses neither tile evenly; B*N*S = 180 rows leave a partial merge tile
    q, k, v = shards(3, 2, 2, 45, 64, seed=3)
    _, got = run_ring(ranks, q, k, v, causal=True, interpret=interpret, threads=True,
                      scale=0.2)
    for o, want in zip(got, ring_attention_reference(q, k, v, causal=True, scale=0.2)):
        assert_close(o, want, np.float32, scale=5)


def test_fp16_shards(ranks):
    q, k, v = shards(2, 1, 1, 48, 64, np.float16, seed=5)
    _, got = run_ring(ranks, q, k, v, causal=False, interpret=True)
    for o, want in zip(got, ring_attention_reference(q, k, v)):
        assert o.dtype == np.float16
        assert_close(o, want, np.float16, scale=3)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_merge_kernel_against_numpy(interpret, dtype):
    rt.ensure_device()
    rng = np.random.default_rng(2)
    shape = (1, 3, 70, 64)                          # 210 rows: tiles of 64 and a partial one

    def triple():
        return (rng.standard_normal(shape).astype(dtype),
                rng.standard_normal(shape[:3]).astype(np.float32) * 3,
                rng.uniform(0.5, 40, shape[:3]).astype(np.float32))
    acc, part = triple(), triple()
    want = ring_merge_reference(acc, part)
    dacc = [rt.to_device(x) for x in acc]
    s = rt.Stream()
    ring_merge(dacc, [rt.to_device(x) for x in part], stream=s, interpret=interpret)
    s.synchronize()
    o, m, l_ = (x.copy_to_host() for x in dacc)
    assert_close(o, want[0], dtype, scale=5)
    np.testing.assert_allclose(m, want[1], rtol=1e-6)
    np.testing.assert_allclose(l_, want[2], rtol=1e-5)


def test_transfer_of_the_next_shard_overlaps_the_fa_on_this_one(ranks):
    n = 4
    q, k, v = shards(n, 1, 2, 96, 64, seed=9)
    with rt.profile() as prof:
        R, got = run_ring(ranks, q, k, v, causal=False, interpret=True)
    for o, want in zip(got, ring_attention_reference(q, k, v)):
        assert_close(o, want, np.float32, scale=5)
    for i in range(n):
        cs = comm_stream_for(R.streams[i])
        fa = sorted((r for r in prof.records if r.stream == R.streams[i].id
                     and r.kind == "kernel" and "flash_attention" in r.name),
                    key=lambda r: r.start_ns)
        comm = sorted((r for r in prof.records if r.stream == cs.id and r.kind == "hccl"),
                      key=lambda r: r.start_ns)
        assert len(fa) == n and len(comm) == n - 1, (len(fa), len(comm))
        for t in range(n - 1):
            # the receive of shard t+1 starts while the FA of shard t is running...
            assert comm[t].start_ns < fa[t].end_ns, (i, t)
            # ...and the FA of shard t+1 waits for it
            assert fa[t + 1].start_ns >= comm[t].end_ns, (i, t)


def test_bad_arguments_are_refused(ranks):
    R = ranks(2)
    c = R.comms[0]
    x = rt.to_device(np.zeros((1, 1, 8, 16), np.float32))
    with pytest.raises(TypeError, match=r"ring_attention: comm must be an rt.hccl.Comm, got "
                                        r"comm=None"):
        ring_attention(x, x, x, comm=None)
    with pytest.raises(TypeError, match=r"ring_attention: q must be an rt.DeviceArray .*got "
                                        r"q=ndarray"):
        ring_attention(np.zeros((1, 1, 8, 16), np.float32), x, x, comm=c)
    x3 = rt.to_device(np.zeros((1, 8, 16), np.float32))
    with pytest.raises(ValueError, match=r"ring_attention: k must be 4-D \[B, N, S_local, D\] "
                                         r"with sizes >= 1, got k.shape=\(1, 8, 16\)"):
        ring_attention(x, x3, x, comm=c)
    x0 = rt.device_empty((1, 1, 0, 16), np.float32)
    with pytest.raises(ValueError, match=r"ring_attention: q must be 4-D \[B, N, S_local, D\] "
                                         r"with sizes >= 1, got q.shape=\(1, 1, 0, 16\)"):
        ring_attention(x0, x0, x0, comm=c)
    y = rt.to_device(np.zeros((1, 1, 9, 16), np.float32))
    with pytest.raises(ValueError, match=r"ring_attention: k and v must have q's shape "
                                         r"\(1, 1, 8, 16\), got k.shape=\(1, 1, 9, 16\)"):
        ring_attention(x, y, y, comm=c)
    h = rt.to_device(np.zeros((1, 1, 8, 16), np.float16))
    with pytest.raises(ValueError, match=r"ring_attention: q, k and v must share a dtype"):
        ring_attention(x, x, h, comm=c)
    other = rt.to_device(np.zeros((1, 1, 8, 16), np.float32), device=1)
    with pytest.raises(ValueError, match=r"ring_attention: v must be on the comm's device 0, "
                                         r"got v.device=1"):
        ring_attention(x, x, other, comm=c)
    with pytest.raises(ValueError, match=r"ring_attention: stream must be None or an rt.Stream "
                                         r"of the comm's device 0"):
        ring_attention(x, x, x, comm=c, stream=R.streams[1])
    assert c.stats["collectives"] == 0                  # nothing was enqueued


def test_one_rank_is_plain_fa():
    rt.ensure_device()
    c = hccl.comm_init_all([0])[0]
    q, k, v = (a[0] for a in shards(1, 1, 1, 33, 32, seed=4))
    s = rt.Stream()
    o = ring_attention(*(rt.to_device(x) for x in (q, k, v)), comm=c, stream=s, causal=True,
                       tiling=TILING, interpret=True)
    s.synchronize()
    assert_close(o.copy_to_host(), ring_attention_reference([q], [k], [v], causal=True)[0],
                 np.float32, scale=5)


@pytest.mark.slow
def test_under_mpiexec(tmp_path):
    pytest.importorskip("mpi4py", reason="the MPI transport needs mpi4py: pip install -e '.[mpi]'")
    n = 2
    exe = pathlib.Path(sys.executable).parent / "mpiexec"
    exe = str(exe) if exe.exists() else shutil.which("mpiexec")
    if exe is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), HCCL_TEST_OUT=str(tmp_path))
    for name in ("HCCL_EXEC_TIMEOUT", "HCCL_CONNECT_TIMEOUT", "ASCEND_EMU_HCCL_TRANSPORT"):
        env.pop(name, None)
    p = subprocess.run([exe, "-n", str(n), sys.executable, str(HERE / "ring_worker.py")],
                       env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    res = {}
    for r in range(n):
        f = tmp_path / f"rank{r}.json"
        if f.exists():
            res[r] = json.loads(f.read_text())
    assert p.returncode == 0 and len(res) == n, \
        f"mpiexec exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-3000:]}"
    for r in range(n):
        assert res[r]["transport"] == "mpi" and res[r]["rank"] == r, res[r]
        assert sorted(res[r]["max_err"]) == ["causal", "full"], res[r]
        assert all(e < 1e-4 for e in res[r]["max_err"].values()), res[r]
