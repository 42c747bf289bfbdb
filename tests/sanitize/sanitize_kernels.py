"""Kernels for the sanitizer's tests: each takes a `bad` flag; with bad=0 it is the correct
kernel, with bad=1 the near-identical one that breaks one rule (its npu-check class named)."""
import ascendc as asc

TILE = 64
F32 = asc.float32


@asc.jit
def gm_oob_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, off: int, bad_block: int):
    """Read3 / Write2: block `bad_block` reads x and writes z from element `off` on."""
    b = asc.get_block_idx()
    start = b * TILE
    if b == bad_block:
        start = off
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    a = buf.get(F32)
    asc.data_copy(a, xg[start:], TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg[start:], a, TILE)


@asc.jit
def adds_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """Read1 (bad=1: the input tensor is freed before adds reads it), Read2 (bad=2: only half of
    it was copied in), Free (bad=3: freed twice), Leak (bad=4: never freed), Write1 (bad=5: the
    output tensor is freed before adds writes it)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, TILE * 4)
    pipe.init_buffer(qo, 1, TILE * 4)
    a = qi.alloc_tensor(F32)
    if bad == 2:
        asc.data_copy(a, xg, TILE // 2)
    else:
        asc.data_copy(a, xg, TILE)
    qi.enque(a)
    a = qi.deque(F32)
    b = qo.alloc_tensor(F32)
    if bad == 1:
        qi.free_tensor(a)
    if bad == 5:
        qo.free_tensor(b)
    asc.adds(b, a, 1.0, TILE)
    if bad != 1 and bad != 4:
        qi.free_tensor(a)
    if bad == 3:
        qi.free_tensor(a)
    if bad != 5:
        qo.enque(b)
        b = qo.deque(F32)
        asc.data_copy(zg, b, TILE)
        qo.free_tensor(b)


@asc.jit
def pad_align_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, shift: int, rshift: int):
    """Write4 (shift not a multiple of 8 floats): data_copy_pad into a UB address that is not
    32-byte aligned; Read4 (rshift not a multiple of 8): the copy out of one."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 8)
    a = buf.get(F32)
    p = asc.DataCopyExtParams(1, 16 * 4, 0, 0, 0)
    asc.data_copy_pad(a[shift:], xg, p, asc.DataCopyPadExtParams(False, 0, 0, 0))
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy_pad(zg, a[rshift:], p)


@asc.jit
def flags_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """GM -> UB -> GM through one buffer, ordered by flags. bad=1: the copy-out runs without
    the MTE2_MTE3 flag (Sync2, RAW); bad=2: the second copy-in overwrites the buffer without
    waiting for the copy-out (Write3, WAR); bad=3: a set_flag never waited for (Sync3);
    bad=4: the same event id set twice (Sync4); bad=5: wait_flag with no set_flag (Sync3);
    bad=6: an event id out of range (Sync4); bad=7: a pipe_barrier of MTE2 instead of the
    MTE2_MTE3 flag (it orders MTE2 alone: Sync2, RAW); bad=8: pipe_barrier(PIPE_ALL) instead
    (clean)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 2 * TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 2 * TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    a = buf.get(F32)
    asc.data_copy(a, xg, TILE)
    if bad == 7:
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    elif bad == 8:
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    elif bad != 1:
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg, a, TILE)
    if bad != 2:
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
    asc.data_copy(a, xg[TILE:], TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 1)
    if bad == 4:
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 1)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 1)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 1)
    asc.data_copy(zg[TILE:], a, TILE)
    if bad == 3:
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 2)
    if bad == 5:
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, 3)
    if bad == 6:
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 9)


@asc.jit
def stomp_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, spread: int):
    """Every block copies its tile of x to z at block_idx * TILE * spread: spread=0 makes all
    blocks write the same bytes (multi-core stomp)."""
    b = asc.get_block_idx()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    a = buf.get(F32)
    asc.data_copy(a, xg[b * TILE:], TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg[b * TILE * spread:], a, TILE)


@asc.jit
def queue_kernel(x: asc.GlobalAddress, what: int):
    """Buffer2 (what=1: deque of an empty queue), Buffer1 (2: a second alloc_tensor of a
    one-buffer queue), Buffer4 (3: a tensor freed to another queue), Buffer0 (4: a queue used
    before its init_buffer), Buffer3 (5: a view starting past the tensor's end); what=0 is
    correct (and takes the in-bounds view)."""
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    other = asc.TQue(asc.TPosition.VECIN, 1)
    late = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 256)
    pipe.init_buffer(other, 1, 256)
    if what != 4:
        pipe.init_buffer(late, 1, 256)
    u = late.alloc_tensor(F32)
    t = q.alloc_tensor(F32)
    if what == 1:
        t = q.deque(F32)
    if what == 2:
        t = q.alloc_tensor(F32)
    if what == 3:
        other.free_tensor(t)
    if what == 5:
        v = t[80:]
    else:
        v = t[32:]
    asc.duplicate(v, 1.0, 16)
    q.free_tensor(t)
    late.free_tensor(u)


@asc.jit
def overlap_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """Two copy-ins whose UB destinations overlap: the second must come after the first has
    landed (pipe_barrier(PIPE_MTE2)); bad=1 leaves the barrier out (Sync1)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 2 * TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 2 * TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 6)
    a = buf.get(F32)
    asc.data_copy(a, xg, TILE)
    if bad != 1:
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    asc.data_copy(a[TILE // 2:], xg[TILE:], TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg, a, TILE + TILE // 2)


@asc.jit
def interleave_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """Two copy-ins of 32-byte blocks one block apart in UB (DataCopyParams dst_stride 1): the
    second fills the gaps the first left, so no barrier is needed between them; bad=1 starts
    the second at the first's blocks (Sync1: they overlap with no barrier)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 2 * TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 2 * TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 8)
    a = buf.get(F32)
    p = asc.DataCopyParams(block_count=TILE // 8, block_len=1, src_stride=0, dst_stride=1)
    asc.data_copy(a, xg, repeat_params=p)
    asc.data_copy(a[8 - 8 * bad:], xg[TILE:], repeat_params=p)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg, a, 2 * TILE)


FULL, FREE = 1, 2       # cross-core flag ids


@asc.jit(kernel_type="MIX_AIC_1_2")
def xflag_kernel(x: asc.GlobalAddress, bad: int):
    """The AIC hands each AIV of its group a flag (mode 2) that the AIV waits for. bad=1: the
    AIC sets it once more than the AIVs wait (a set left pending, Sync3); bad=2: the AIVs wait
    for a flag no core sets (Sync3, the launch stops there)."""
    if asc.ascend_is_aic():
        asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
        if bad == 1:
            asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
    else:
        asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_MTE2)
        if bad == 2:
            asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_MTE2)


@asc.jit
def cast_reduce_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """z = x through a half-precision round trip, z[0] = sum(x[:TILE]). bad=1: the first cast
    reads a scratch tensor nothing wrote (Read2); bad=2: so does the reduction (Read2)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 1, TILE * 4)
    pipe.init_buffer(qo, 1, TILE * 4)
    pipe.init_buffer(tmp, TILE * 12)
    a = qi.alloc_tensor(F32)
    asc.data_copy(a, xg, TILE)
    qi.enque(a)
    a = qi.deque(F32)
    h = tmp.get_with_offset(TILE, 0, asc.float16)
    w = tmp.get_with_offset(TILE, TILE * 4, F32)
    scratch = tmp.get_with_offset(TILE, TILE * 8, F32)
    if bad == 1:
        asc.cast(h, w, asc.RoundMode.CAST_NONE, TILE)
    else:
        asc.cast(h, a, asc.RoundMode.CAST_NONE, TILE)
    o = qo.alloc_tensor(F32)
    asc.cast(o, h, asc.RoundMode.CAST_NONE, TILE)
    if bad == 2:
        asc.reduce_sum(o, w, scratch, TILE)
    else:
        asc.reduce_sum(o, a, scratch, TILE)
    qi.free_tensor(a)
    qo.enque(o)
    o = qo.deque(F32)
    asc.data_copy(zg, o, TILE)
    qo.free_tensor(o)


@asc.jit
def _fractal_buffers(pipe):
    """L1 (A1, B1), L0A, L0B float16 and L0C float32 buffers of one 16 x 16 x 16 fractal."""
    ba1 = asc.TBuf(asc.TPosition.A1)
    bb1 = asc.TBuf(asc.TPosition.B1)
    ba2 = asc.TBuf(asc.TPosition.A2)
    bb2 = asc.TBuf(asc.TPosition.B2)
    bc = asc.TBuf(asc.TPosition.CO1)
    pipe.init_buffer(ba1, 512)
    pipe.init_buffer(bb1, 512)
    pipe.init_buffer(ba2, 512)
    pipe.init_buffer(bb2, 512)
    pipe.init_buffer(bc, 1024)
    return (ba1.get(asc.float16), bb1.get(asc.float16), ba2.get(asc.float16),
            bb2.get(asc.float16), bc.get(asc.float32))


@asc.jit
def cube_flags_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      bad: int):
    """c = a @ b for one 16 x 16 x 16 float16 fractal, the cube pipes ordered by explicit flags
    over TBuf buffers: MTE2 (GM -> L1), MTE1 (L1 -> L0A/L0B), CUBE (mmad), FIXPIPE (L0C -> GM).
    bad=1 drops the MTE2 -> MTE1 flag, bad=2 the MTE1 -> M flag, bad=3 the M -> FIX flag (Sync2
    with the two pipes named)."""
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, 256)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b, 256)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c, 256)
    pipe = asc.TPipe()
    a1, b1, a2, b2, cl = _fractal_buffers(pipe)
    asc.data_copy(a1, ag, asc.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0))
    asc.data_copy(b1, bg, asc.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0))
    if bad != 1:
        asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.load_data(a2, a1, asc.LoadData2DParams(0, 1, 1, 0, 0, False, 0))
    asc.load_data(b2, b1, asc.LoadData2DParams(0, 1, 1, 0, 0, True, 0))
    if bad != 2:
        asc.set_flag(asc.HardEvent.MTE1_M, 0)
        asc.wait_flag(asc.HardEvent.MTE1_M, 0)
    asc.mmad(cl, a2, b2, asc.MmadParams(m=16, n=16, k=16, unit_flag=0, cmatrix_source=False,
                                         cmatrix_init_val=True))
    if bad != 3:
        asc.set_flag(asc.HardEvent.M_FIX, 0)
        asc.wait_flag(asc.HardEvent.M_FIX, 0)
    asc.fixpipe(cg, cl, asc.FixpipeParamsV220(16, 16, 16, 16))


@asc.jit
def compare_select_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """z = max(x, 0) on TILE elements by compare_scalar (a bit mask) and select (count forms;
    the repeat forms when bad=3). bad=1: the compare reads a scratch tensor nothing wrote; bad=2:
    the select does (Read2 both)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 1, TILE * 4)
    pipe.init_buffer(qo, 1, TILE * 4)
    pipe.init_buffer(tmp, TILE * 4 + 32)
    a = qi.alloc_tensor(F32)
    asc.data_copy(a, xg, TILE)
    qi.enque(a)
    a = qi.deque(F32)
    mask = tmp.get_with_offset(32, 0, asc.uint8)
    other = tmp.get_with_offset(TILE, 32, F32)
    o = qo.alloc_tensor(F32)
    if bad == 3:
        asc.compare_scalar(mask, a, 0.0, asc.CMPMODE.GT, TILE, 1, asc.UnaryRepeatParams())
        asc.select(o, mask, a, 0.0, asc.SELMODE.VSEL_TENSOR_SCALAR_MODE, TILE, 1,
                   asc.BinaryRepeatParams())
    elif bad == 1:
        asc.compare_scalar(mask, other, 0.0, asc.CMPMODE.GT, TILE)
        asc.select(o, mask, a, 0.0, asc.SELMODE.VSEL_TENSOR_SCALAR_MODE, TILE)
    elif bad == 2:
        asc.compare_scalar(mask, a, 0.0, asc.CMPMODE.GT, TILE)
        asc.select(o, mask, other, 0.0, asc.SELMODE.VSEL_TENSOR_SCALAR_MODE, TILE)
    else:
        asc.compare_scalar(mask, a, 0.0, asc.CMPMODE.GT, TILE)
        asc.select(o, mask, a, 0.0, asc.SELMODE.VSEL_TENSOR_SCALAR_MODE, TILE)
    qo.enque(o)
    qi.free_tensor(a)
    o = qo.deque(F32)
    asc.data_copy(zg, o, TILE)
    qo.free_tensor(o)


@asc.jit
def softmax_rows_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """z = softmax over 8 rows of TILE floats (asc.adv.softmax). bad=1: it reads a scratch
    tensor nothing wrote (Read2)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 8 * TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 8 * TILE)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 1, 8 * TILE * 4)
    pipe.init_buffer(qo, 1, 8 * TILE * 4)
    pipe.init_buffer(tmp, 8 * TILE * 4 + 2 * 8 * 32)
    a = qi.alloc_tensor(F32)
    asc.data_copy(a, xg, 8 * TILE)
    qi.enque(a)
    a = qi.deque(F32)
    sm = tmp.get_with_offset(8 * 8, 0, F32)
    mx = tmp.get_with_offset(8 * 8, 8 * 32, F32)
    other = tmp.get_with_offset(8 * TILE, 2 * 8 * 32, F32)
    src = a
    if bad == 1:
        src = other
    src.set_shape_info(asc.ShapeInfo(asc.array(asc.int32, (8, TILE)),
                                     asc.array(asc.int32, (8, TILE))))
    o = qo.alloc_tensor(F32)
    asc.adv.softmax(o, sm, mx, src, asc.adv.SoftmaxTiling())
    qo.enque(o)
    qi.free_tensor(a)
    o = qo.deque(F32)
    asc.data_copy(zg, o, 8 * TILE)
    qo.free_tensor(o)


@asc.jit
def transpose_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """z = the 16 x 16 float16 block x transposed (asc.transpose). bad=1: it transposes a
    scratch tensor nothing wrote (Read2)."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 256)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 256)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 1, 512)
    pipe.init_buffer(qo, 1, 512)
    pipe.init_buffer(tmp, 512)
    a = qi.alloc_tensor(asc.float16)
    asc.data_copy(a, xg, 256)
    qi.enque(a)
    a = qi.deque(asc.float16)
    src = a
    if bad == 1:
        src = tmp.get(asc.float16)
    o = qo.alloc_tensor(asc.float16)
    asc.transpose(o, src)
    qo.enque(o)
    qi.free_tensor(a)
    o = qo.deque(asc.float16)
    asc.data_copy(zg, o, 256)
    qo.free_tensor(o)


@asc.jit
def sync_all_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """Each block writes its tile of x to z, meets the others at sync_all and copies the next
    block's tile back over its own part of x. bad=1: block 1 skips the sync_all (Sync3: the
    others wait for it forever)."""
    b = asc.get_block_idx()
    n = asc.get_block_num()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, TILE * 4)
    a = buf.get(F32)
    asc.data_copy(a, xg[b * TILE:], TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg[b * TILE:], a, TILE)
    if bad == 0 or b != 1:
        asc.sync_all()
    asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
    asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
    asc.data_copy(a, zg[((b + 1) % n) * TILE:], TILE)
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 1)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 1)
    asc.data_copy(xg[b * TILE:], a, TILE)


@asc.jit
def fixpipe_cols_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, bad: int):
    """Each block computes a 16 x 16 tile of c = a @ b (a: 16 x 16, b: 16 x 16*blocks) and
    writes it at column 16*block of c (row stride 16*blocks) by fixpipe: the blocks' rows
    interleave in GM without overlapping. bad=1: every block writes column 0 (a stomp); bad=2:
    every block adds its tile into column 0 under set_atomic_add (atomic adds: no stomp)."""
    blk = asc.get_block_idx()
    nb = asc.get_block_num()
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, 256)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    a1, b1, a2, b2, cl = _fractal_buffers(pipe)
    col = blk * 16
    src = col
    if bad != 0:
        col = 0
    asc.data_copy(a1, ag, asc.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0))
    asc.data_copy(b1, bg[src:], asc.Nd2NzParams(1, 16, 16, 0, 16 * nb, 16, 1, 0))
    asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.load_data(a2, a1, asc.LoadData2DParams(0, 1, 1, 0, 0, False, 0))
    asc.load_data(b2, b1, asc.LoadData2DParams(0, 1, 1, 0, 0, True, 0))
    asc.set_flag(asc.HardEvent.MTE1_M, 0)
    asc.wait_flag(asc.HardEvent.MTE1_M, 0)
    asc.mmad(cl, a2, b2, asc.MmadParams(m=16, n=16, k=16, unit_flag=0, cmatrix_source=False,
                                         cmatrix_init_val=True))
    asc.set_flag(asc.HardEvent.M_FIX, 0)
    asc.wait_flag(asc.HardEvent.M_FIX, 0)
    if bad == 2:
        asc.set_atomic_add(asc.float32)
    asc.fixpipe(cg[col:], cl, asc.FixpipeParamsV220(16, 16, 16, 16 * nb))
    asc.set_atomic_none()


@asc.jit
def strided_rows_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, bad: int):
    """x and z are 8 rows of 32 floats; block b copies its 8-float column strip of x to the same
    strip of z with DataCopyParams strides (one 32-byte block per row): the blocks' rows
    interleave in GM without overlapping. bad=1: every block writes strip 0 (a stomp)."""
    b = asc.get_block_idx()
    col = b * 8
    out = col
    if bad == 1:
        out = 0
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, 8 * 8 * 4)
    a = buf.get(F32)
    asc.data_copy(a, xg[col:], repeat_params=asc.DataCopyParams(
        block_count=8, block_len=1, src_stride=3, dst_stride=0))
    asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
    asc.data_copy(zg[out:], a, repeat_params=asc.DataCopyParams(
        block_count=8, block_len=1, src_stride=0, dst_stride=3))
