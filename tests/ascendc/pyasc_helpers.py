"""Kernel-language helpers shared by the pyasc-style kernels of the tests: a GlobalTensor over a
GM address, and the copy-in / copy-out stages of a queue (alloc, data_copy, enque, deque)."""
import ascendc as asc


@asc.jit
def gm_tensor(addr):
    """A GlobalTensor over the whole of `addr`."""
    g = asc.GlobalTensor()
    g.set_global_buffer(addr)
    return g


@asc.jit
def copy_in(q, g, n, dtype):
    """n elements of g into a new tensor of q, through the queue: the dequeued tensor."""
    t = q.alloc_tensor(dtype)
    asc.data_copy(t, g, count=n)
    q.enque(t)
    return q.deque(dtype)


@asc.jit
def copy_out(g, q, t, n, dtype):
    """Tensor t of q through the queue to g's first n elements; frees it."""
    q.enque(t)
    t = q.deque(dtype)
    asc.data_copy(g, t, count=n)
    q.free_tensor(t)
