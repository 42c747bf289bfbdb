"""Small kernels used by the language tests (module-level so both modes share compiled code)."""
import ascendc as asc

TILE = 64


@asc.jit
def copy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    """z[:n] = x[:n] through one VECIN and one VECOUT queue (single block)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, n)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, TILE * 4)
    pipe.init_buffer(qo, 1, TILE * 4)
    for t in range(n // TILE):
        a = qi.alloc_tensor(x.dtype)
        asc.data_copy(a, xg[t * TILE:], TILE)
        qi.enque(a)
        a = qi.deque(x.dtype)
        b = qo.alloc_tensor(z.dtype)
        asc.adds(b, a, 1.0, TILE)
        qo.enque(b)
        qi.free_tensor(a)
        b = qo.deque(z.dtype)
        asc.data_copy(zg[t * TILE:], b, TILE)
        qo.free_tensor(b)


@asc.jit
def no_sync_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress):
    """Forgets enque/deque between the GM->UB copy and the UB->GM copy (wrong on hardware)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    a = buf.get(asc.float32)
    asc.data_copy(a, xg, TILE)
    asc.data_copy(zg, a, TILE)


@asc.jit
def flag_sync_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress):
    """The same copy made correct with set_flag/wait_flag(MTE2_MTE3)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    a = buf.get(asc.float32)
    asc.data_copy(a, xg, TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg, a, TILE)


@asc.jit
def queue_misuse_kernel(x: asc.GlobalAddress, what: int):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    other = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 256)
    pipe.init_buffer(other, 1, 256)
    if what == 0:
        t = q.deque(asc.float32)              # deque from an empty queue
    elif what == 1:
        t = q.alloc_tensor(asc.float32)
        t2 = q.alloc_tensor(asc.float32)      # noqa: F841  beyond the one buffer: the alloc is the test
    elif what == 2:
        t = other.alloc_tensor(asc.float32)
        q.free_tensor(t)                      # a foreign tensor
    elif what == 3:
        t = q.alloc_tensor(asc.float32)       # still held at kernel end


@asc.jit
def capacity_kernel(x: asc.GlobalAddress, nbytes: int):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 2)
    pipe.init_buffer(q, 2, nbytes)


@asc.jit
def oob_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    """Every block reads TILE elements at block_idx*n: the last block runs past the end."""
    base = asc.get_block_idx() * n
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, TILE)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, TILE * 4)
    a = q.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, TILE)
    q.free_tensor(a)


@asc.jit
def two_pipes_kernel(x: asc.GlobalAddress):
    p1 = asc.TPipe()  # noqa: F841  the second TPipe() is the error under test
    p2 = asc.TPipe()  # noqa: F841


@asc.jit
def scalar_kernel(z: asc.GlobalAddress, a: int, b: float, c: asc.ConstExpr[int]):
    """Scalar types and element access: z[0] = a, z[1] = b, z[2] = c, z[3] = block count."""
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 8)
    if asc.get_block_idx() == 0:
        zg.set_value(0, a)
        zg.set_value(1, b)
        zg.set_value(2, c)
        zg.set_value(3, asc.get_block_num())
        zg.set_value(4, zg.get_value(1) * 2)


@asc.jit
def printf_kernel(z: asc.GlobalAddress):
    asc.printf("block %d of %d\n", asc.get_block_idx(), asc.get_block_num())


@asc.jit
def scalar_first_oob_kernel(n: int, x: asc.GlobalAddress):
    """A scalar parameter before the GM one: errors must still name the GM argument."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + n, TILE)


@asc.jit
def keyword_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    """copy_kernel with every call spelled with pyasc's keyword names."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(addr=x, size=n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, size=n)
    pipe = asc.TPipe()
    qi = asc.TQue(pos=asc.TPosition.VECIN, depth=1)
    qo = asc.TQue(asc.TPosition.VECOUT, depth=1)
    tmp = asc.TBuf(pos=asc.TPosition.VECCALC)
    pipe.init_buffer(que=qi, num=1, len=TILE * 4)
    pipe.init_buffer(qo, num=1, len=TILE * 4)
    pipe.init_buffer(buf=tmp, len=TILE * 4)
    for t in range(n // TILE):
        a = qi.alloc_tensor(dtype=x.dtype)
        asc.data_copy(dst=a, src=xg[t * TILE:], count=TILE)
        qi.enque(tensor=a)
        a = qi.deque(x.dtype)
        w = tmp.get(dtype=asc.float32, len=TILE)
        asc.muls(dst=w, src=a, scalar=2.0, count=TILE)
        b = qo.alloc_tensor(z.dtype)
        asc.adds(b, w, scalar=1.0, count=TILE)
        qo.enque(b)
        qi.free_tensor(tensor=a)
        b = qo.deque(dtype=z.dtype)
        asc.data_copy(zg[t * TILE:], b, count=TILE)
        qo.free_tensor(b)
