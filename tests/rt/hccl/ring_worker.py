"""One rank of the multi-process ring-attention test: `mpiexec -n N python ring_worker.py`.

Every process draws the same full Q, K, V (one seed), keeps its S-shard, runs
`kernels.ring_attention.ring_attention` over an MPI-transport communicator (interpret mode: no
compile per process), non-causal then causal, and writes {"rank", "transport", "max_err"} to
$HCCL_TEST_OUT/rank<r>.json (tests/rt/hccl/test_ring_attention.py reads it), or prints it.
"""
import json
import os

import numpy as np
from mpi4py import MPI

import rt
from rt import hccl
from kernels.flash_attention import FlashAttentionTiling
from kernels.ring_attention import ring_attention, ring_attention_reference

world = MPI.COMM_WORLD
me, n = world.Get_rank(), world.Get_size()


def main():
    rt.init()
    info = world.bcast(bytes(hccl.get_root_info()) if me == 0 else None, root=0)
    comm = hccl.comm_init_root_info(n, info, me)
    s = rt.Stream()
    rng = np.random.default_rng(42)
    sl = 40                                          # S_local: ragged against the 32-row tile
    q, k, v = ([rng.standard_normal((1, 2, sl, 64)).astype(np.float32) for _ in range(n)]
               for _ in range(3))
    errs = {}
    for causal in (False, True):
        out = ring_attention(rt.to_device(q[me]), rt.to_device(k[me]), rt.to_device(v[me]),
                             comm=comm, stream=s, causal=causal,
                             tiling=FlashAttentionTiling(32, 144, 32), interpret=True)
        s.synchronize()
        want = ring_attention_reference(q, k, v, causal=causal)[me]
        errs["causal" if causal else "full"] = float(np.abs(out.copy_to_host() - want).max())
    line = json.dumps({"rank": comm.rank_id(), "transport": comm.transport, "max_err": errs})
    out_dir = os.environ.get("HCCL_TEST_OUT")
    if out_dir:
        with open(os.path.join(out_dir, f"rank{me}.json"), "w") as f:
            f.write(line)
    else:
        print(f"RESULT {me} {line}", flush=True)
    comm.destroy()


if __name__ == "__main__":
    main()
