"""The Python kernel authors write, in both modes: tuple assignment and unpacking of handles
and scalars (`a, b = asc.GlobalTensor(), asc.GlobalTensor()`, swaps, nested tuples); what the
compiler still refuses is listed in docs/kernel-python.md with its error."""
import numpy as np
import pytest

import ascendc as asc


@asc.jit
def tuple_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int,
                 TILE: asc.ConstExpr[int]):
    x_gm, y_gm, z_gm = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    x_gm.set_global_buffer(x, n)
    y_gm.set_global_buffer(y, n)
    z_gm.set_global_buffer(z, n)
    pipe = asc.TPipe()
    [qa, qb], qo = (asc.TQue(asc.TPosition.VECIN, 1), asc.TQue(asc.TPosition.VECIN, 1)), \
        asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qa, 1, TILE * x.dtype.sizeof())
    pipe.init_buffer(qb, 1, TILE * y.dtype.sizeof())
    pipe.init_buffer(qo, 1, TILE * z.dtype.sizeof())
    scale, (shift, extra) = 2.0, (3.0, 1.0)
    shift, extra = extra, shift             # a swap: the values are read before either store
    for i in range(n // TILE):
        a, b = qa.alloc_tensor(x.dtype), qb.alloc_tensor(y.dtype)
        asc.data_copy(a, x_gm[i * TILE:], TILE)
        asc.data_copy(b, y_gm[i * TILE:], TILE)
        qa.enque(a)
        qb.enque(b)
        a, b = qb.deque(y.dtype), qa.deque(x.dtype)     # a is y's tile now, b x's
        o = qo.alloc_tensor(z.dtype)
        asc.muls(o, b, scale, TILE)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.add(o, o, a, TILE)
        asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.adds(o, o, shift * 10.0 + extra, TILE)
        qo.enque(o)
        qa.free_tensor(b)
        qb.free_tensor(a)
        o = qo.deque(z.dtype)
        asc.data_copy(z_gm[i * TILE:], o, TILE)
        qo.free_tensor(o)


def test_tuple_assignment_of_handles_and_scalars(mode):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(512).astype(np.float32)
    y = rng.standard_normal(512).astype(np.float32)
    z = np.zeros_like(x)
    tuple_kernel[1](x, y, z, 512, 128, interpret=(mode == "interpret"))
    np.testing.assert_allclose(z, 2 * x + y + 13.0, rtol=1e-6)


@asc.jit
def mismatched(x: asc.GlobalAddress):
    a, b = 1, 2, 3
    asc.printf("%d %d", a, b)


def test_tuple_assignment_of_different_lengths_is_a_compile_error():
    with pytest.raises(asc.CompileError, match=r"tuple assignment must have as many targets as "
                                               r"values, got 2 targets and 3 values"):
        mismatched[1](np.zeros(8, np.float32), interpret=False)
