"""All-reduce across processes with rt.hccl: `mpiexec -n 4 python examples/hccl_allreduce.py`.

Rank 0 creates the root info and MPI broadcasts it (HCCL leaves that exchange to the
application); every rank joins, binds device `rank % device_count`, and sums a vector on a stream.
"""
import numpy as np
from mpi4py import MPI

import rt
from rt import hccl

world = MPI.COMM_WORLD
root_info = world.bcast(bytes(hccl.get_root_info()) if world.rank == 0 else None, root=0)
comm = hccl.comm_init_root_info(world.size, root_info, world.rank)
stream = rt.Stream()
x = rt.to_device(np.full(8, world.rank + 1, np.float32))
hccl.all_reduce(x, x, op=hccl.HcclReduceOp.HCCL_REDUCE_SUM, comm=comm, stream=stream)
stream.synchronize()
expected = world.size * (world.size + 1) / 2
assert np.all(x.copy_to_host() == expected), x.copy_to_host()
print(f"rank {hccl.get_rank_id(comm)}/{hccl.get_rank_size(comm)}: all_reduce sum = {expected}")
hccl.comm_destroy(comm)
