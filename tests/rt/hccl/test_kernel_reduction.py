"""The collectives' reduction done by a kernel in the kernel language (kernels/hccl_reduce.py)
on the rank's device cores, registered into rt.hccl by a layer above rt."""
import numpy as np
import pytest

import rt
from rt import hccl

hr = pytest.importorskip("kernels.hccl_reduce")


@pytest.fixture
def kernel_reducer():
    hr.install()
    yield
    hr.uninstall()


def test_all_reduce_reduces_with_the_kernel(ranks, kernel_reducer):
    R = ranks(3, chunk_bytes=4096)                 # 1024 fp32 per chunk: several launches
    rng = np.random.default_rng(7)
    data = [rng.standard_normal(5000).astype(np.float32) for _ in range(3)]
    xs, ys = R.put(data), R.empty(5000, np.float32)
    with rt.profile() as prof:
        for c, s, x, y in zip(R.comms, R.streams, xs, ys):
            c.all_reduce(x, y, op="sum", stream=s)
        got = R.get(ys)
    want = np.sum(np.stack(data).astype(np.float64), axis=0)
    for y in got:
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    for c in R.comms:
        assert c.stats["kernel_reductions"] >= 2 and c.stats["numpy_reductions"] == 0
    kernels = [r for r in prof.records if r.kind == "kernel" and r.name == "binary_kernel"]
    assert {r.device for r in kernels} == {0, 1, 2}   # each rank reduces on its own device


def test_dtypes_the_vector_unit_lacks_fall_back_to_numpy(ranks, kernel_reducer):
    R = ranks(2)
    data = [np.arange(40, dtype=np.int8), np.full(40, 3, np.int8)]
    xs = R.put(data)
    for c, s, x in zip(R.comms, R.streams, xs):
        hccl.all_reduce(x, x, op="max", comm=c, stream=s)
    for y in R.get(xs):
        np.testing.assert_array_equal(y, np.maximum(data[0], data[1]))
    assert all(c.stats["kernel_reductions"] == 0 and c.stats["numpy_reductions"] > 0
               for c in R.comms)
