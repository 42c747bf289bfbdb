"""TPipe's lifecycle (destroy / init / reset, get_tpipe_ptr), its event-id pool
(alloc / fetch / release_event_id) and the LocalTensor metadata methods (get_position,
set_size, set_buffer_len, set_addr_with_offset, user tags, asc.DataType("int32")), in both
modes, as pyasc's generalization/basic/test_vadd_sw.py uses them."""
import numpy as np
import pytest

import ascendc as asc
import rt

TILE, NTILES, NMETA = 64, 3, 16
MTE2_V, V_MTE3, V_S = asc.HardEvent.MTE2_V, asc.HardEvent.V_MTE3, asc.HardEvent.V_S


@asc.jit
def _tile(p: asc.TPipe, i: int, xg: asc.GlobalTensor, yg: asc.GlobalTensor,
          zg: asc.GlobalTensor, mg: asc.GlobalTensor, qx: asc.TQue, qy: asc.TQue, qz: asc.TQue,
          qt: asc.TQue, tile: asc.ConstExpr[int]):
    xl = qx.alloc_tensor(xg.dtype)
    yl = qy.alloc_tensor(yg.dtype)
    zl = qz.alloc_tensor(zg.dtype)
    asc.data_copy(xl, xg[i * tile:], count=tile)
    asc.data_copy(yl, yg[i * tile:], count=tile)
    e0 = p.alloc_event_id(event=asc.HardEvent.MTE2_V)
    e1 = p.alloc_event_id(event=asc.HardEvent.MTE2_V)
    kept = p.alloc_event_id()                     # V_S, never released: reset() frees it
    asc.set_flag(event=asc.HardEvent.MTE2_V, event_id=e1)
    asc.wait_flag(event=asc.HardEvent.MTE2_V, event_id=e1)
    p.release_event_id(id=e0, event=asc.HardEvent.MTE2_V)
    e2 = p.alloc_event_id(event=asc.HardEvent.MTE2_V)     # the first free id again: 0
    p.release_event_id(e2, asc.HardEvent.MTE2_V)
    p.release_event_id(id=e1, event=asc.HardEvent.MTE2_V)
    row = i * 16
    mg.set_value(row + 0, e0)
    mg.set_value(row + 1, e1)
    mg.set_value(row + 2, e2)
    mg.set_value(row + 3, kept)
    mg.set_value(row + 4, xl.get_user_tag())      # -1 after every init_buffer
    xl.set_user_tag(7 + i)
    mg.set_value(row + 5, xl.get_user_tag())
    mg.set_value(row + 6, xl[8:].get_user_tag())  # a view of the buffer shares its tag
    mg.set_value(row + 7, xl.get_position())
    mg.set_value(row + 8, zl.get_position())
    xl.set_buffer_len(tile * 8)
    mg.set_value(row + 9, xl.get_size())
    mg.set_value(row + 10, xl.get_length())
    xl.set_size(tile)
    mg.set_value(row + 11, xl.get_size())
    tmp = qt.alloc_tensor(asc.DataType("int32"))
    mg.set_value(row + 12, tmp.get_position())
    tmp.set_value(4, 0)
    v = tmp.reinterpret_cast(asc.int16)
    v.set_addr_with_offset(tmp, 4)                # int16 view from tmp's element 4
    v.set_value(0, 77)
    mg.set_value(row + 13, v.get_size())
    mg.set_value(row + 14, tmp.get_value(4))
    asc.add(zl, xl, yl, count=tile)
    f = p.fetch_event_id(event=asc.HardEvent.V_MTE3)
    mg.set_value(row + 15, f + p.fetch_event_id(event=asc.HardEvent.V_MTE3))
    asc.set_flag(event=asc.HardEvent.V_MTE3, event_id=f)
    asc.wait_flag(event=asc.HardEvent.V_MTE3, event_id=f)
    asc.data_copy(zg[i * tile:], zl, count=tile)
    qx.free_tensor(xl)
    qy.free_tensor(yl)
    qz.free_tensor(zl)
    qt.free_tensor(tmp)


@asc.jit
def lifecycle_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                     meta: asc.GlobalAddress, tile: asc.ConstExpr[int],
                     ntiles: asc.ConstExpr[int]):
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    mg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    yg.set_global_buffer(y)
    zg.set_global_buffer(z)
    mg.set_global_buffer(meta)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    qt = asc.TQue(asc.TPosition.VECCALC, 1)
    for i in range(ntiles):
        pipe.destroy()
        pipe.init()
        pipe.init_buffer(que=qx, num=1, len=tile * x.dtype.sizeof())
        pipe.init_buffer(que=qy, num=1, len=tile * y.dtype.sizeof())
        pipe.init_buffer(que=qz, num=1, len=tile * z.dtype.sizeof())
        pipe.init_buffer(que=qt, num=1, len=tile * 4)
        _tile(asc.get_tpipe_ptr(), i, xg, yg, zg, mg, qx, qy, qz, qt, tile)
        pipe.reset()


def test_pipe_lifecycle_event_ids_and_tensor_metadata(mode):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(TILE * NTILES).astype(np.float32)
    y = rng.standard_normal(TILE * NTILES).astype(np.float32)
    z = np.zeros_like(x)
    meta = np.full(NMETA * NTILES, -99, np.int32)
    lifecycle_kernel[1](x, y, z, meta, TILE, NTILES, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x + y)
    vecin, vecout, veccalc = (int(asc.TPosition.VECIN), int(asc.TPosition.VECOUT),
                              int(asc.TPosition.VECCALC))
    for i in range(NTILES):
        want = [0, 1, 0, 0, -1, 7 + i, 7 + i, vecin, vecout, TILE * 2, TILE * 8, TILE, veccalc,
                TILE * 2, 77, 0]
        np.testing.assert_array_equal(meta[i * NMETA:(i + 1) * NMETA], want, err_msg=f"tile {i}")


@asc.jit
def refill_kernel(z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """A buffer written, the pipe reset (then destroyed and re-initialised), the same queue
    initialised again at the same address: its buffer is fresh (NaN in checked mode) and the
    capacity released is available again (a 150 KB buffer fits UB only once)."""
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    big = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=q, num=1, len=n * 4)
    pipe.init_buffer(que=big, num=1, len=150 * 1024)
    t = q.alloc_tensor(asc.float32)
    asc.duplicate(t, 3.0, count=n)
    asc.set_flag(asc.HardEvent.V_S, 0)          # the scalar read waits for the vector write
    asc.wait_flag(asc.HardEvent.V_S, 0)
    zg.set_value(0, t.get_value(0))
    q.free_tensor(t)
    pipe.reset()
    pipe.init_buffer(que=q, num=1, len=n * 4)
    pipe.init_buffer(que=big, num=1, len=150 * 1024)
    t = q.alloc_tensor(asc.float32)
    zg.set_value(1, t.get_value(0))
    asc.duplicate(t, 4.0, count=n)
    q.free_tensor(t)
    pipe.destroy()
    pipe.init()
    pipe.init_buffer(que=q, num=1, len=n * 4)
    pipe.init_buffer(que=big, num=1, len=150 * 1024)
    t = q.alloc_tensor(asc.float32)
    zg.set_value(2, t.get_value(0))
    q.free_tensor(t)


def test_released_buffers_are_fresh_and_free_their_capacity(mode):
    z = np.zeros(8, np.float32)
    refill_kernel[1](z, 8, interpret=(mode == "interpret"))
    assert z[0] == 3.0
    assert np.isnan(z[1]) and np.isnan(z[2]), \
        f"a re-initialised buffer must be fresh (NaN) in checked mode, got {z[1:3]}"


@asc.jit
def misuse_kernel(x: asc.GlobalAddress, case: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    q2 = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=q, num=1, len=256)
    if case == 0:                       # event-id pool exhausted
        for _ in range(9):
            pipe.alloc_event_id(event=asc.HardEvent.MTE2_V)
    elif case == 1:                     # a queue used after destroy()
        pipe.destroy()
        pipe.init()
        t = q.alloc_tensor(asc.float32)
        q.free_tensor(t)
    elif case == 2:                     # a tensor held across destroy()
        t = q.alloc_tensor(asc.float32)
        pipe.destroy()
        q.free_tensor(t)
    elif case == 3:                     # init_buffer on a destroyed pipe
        pipe.destroy()
        pipe.init_buffer(que=q2, num=1, len=256)
    elif case == 4:                     # set_buffer_len beyond what UB holds
        t = q.alloc_tensor(asc.float32)
        t.set_buffer_len(256 * 1024)
        q.free_tensor(t)
    elif case == 5:                     # set_size beyond what UB holds
        t = q.alloc_tensor(asc.float32)
        t.set_size(64 * 1024)
        q.free_tensor(t)
    elif case == 6:                     # release of an id never allocated
        pipe.release_event_id(id=3, event=asc.HardEvent.V_MTE3)
    elif case == 7:                     # init() pairs with destroy()
        pipe.init()
    elif case == 8:                     # capacity still checked after reset
        pipe.reset()
        pipe.init_buffer(que=q, num=1, len=150 * 1024)
        pipe.init_buffer(que=q2, num=1, len=150 * 1024)
    elif case == 9:                     # user tags live in TQue/TBuf buffers
        s = asc.LocalTensor(asc.float32, asc.TPosition.VECCALC, 65536, 64)   # past q's
        xg.set_value(0, s.get_user_tag())
    elif case == 10:                    # event ids of a destroyed pipe
        pipe.destroy()
        pipe.fetch_event_id(event=asc.HardEvent.V_S)


MISUSE = [
    (0, r"TPipe.alloc_event_id: a free event id must be available \(8 per HardEvent; "
        r"release_event_id missing\?\), got all 8 ids of MTE2_V allocated"),
    (1, r"TQue.alloc_tensor: the queue's buffers must not be used after "
        r"TPipe.destroy\(\)/reset\(\) released them \(init_buffer it again\), got a released "
        r"VECIN TQue #0"),
    (2, r"TPipe.destroy: every tensor must be freed with free_tensor first, got 1 tensor\(s\) "
        r"still held by VECIN TQue #0"),
    (3, r"TPipe.init_buffer: the TPipe must be initialised again with init\(\) after "
        r"destroy\(\), got init_buffer for VECCALC TQue #1 on a destroyed TPipe"),
    (4, r"LocalTensor.set_buffer_len: the tensor must end inside the \d+ bytes of UB, got "
        r"data_len=262144 \(bytes 0 to 262144 of UB\)"),
    (5, r"LocalTensor.set_size: the tensor must end inside the \d+ bytes of UB, got "
        r"size=65536 \(bytes 0 to 262144 of UB\)"),
    (6, r"TPipe.release_event_id: id must be taken by alloc_event_id, got id=3 of V_MTE3, "
        r"which is not allocated"),
    (7, r"TPipe.init: the TPipe must be destroyed first \(the constructor initialises it; "
        r"init\(\) pairs with destroy\(\)\), got init\(\) on a live TPipe"),
    (8, r"TPipe.init_buffer: VECCALC TQue #1 must fit in UB, asked 153600 bytes"),
    (9, r"LocalTensor.get_user_tag: not supported for a tensor outside every TQue/TBuf buffer"),
    (10, r"TPipe.fetch_event_id: the TPipe must be initialised again with init\(\) after "
         r"destroy\(\), got a destroyed TPipe"),
]


@pytest.mark.parametrize("case,message", MISUSE, ids=[str(c) for c, _ in MISUSE])
def test_misuse_is_an_error_naming_the_rule(mode, case, message):
    with pytest.raises(rt.AclError, match=message):
        misuse_kernel[1](np.zeros(64, np.float32), case, interpret=(mode == "interpret"))


@asc.jit
def no_pipe_kernel(x: asc.GlobalAddress):
    p = asc.get_tpipe_ptr()
    p.alloc_event_id(event=asc.HardEvent.V_S)


def test_get_tpipe_ptr_needs_a_tpipe(mode):
    with pytest.raises(rt.AclError, match=r"asc.get_tpipe_ptr: the kernel must create its "
                                          r"TPipe first \(pipe = asc.TPipe\(\)\), got no TPipe"):
        no_pipe_kernel[1](np.zeros(8, np.float32), interpret=(mode == "interpret"))


def test_datatype_by_name():
    assert asc.DataType("int32") == asc.int32 and asc.DataType("half") == asc.float16
    assert asc.DataType("float16").storage == asc.float16.storage
    with pytest.raises(TypeError, match=r"asc.DataType: name must be one of .*got "
                                        r"name='complex64'"):
        asc.DataType("complex64")


@asc.jit
def dtype_from_variable_kernel(x: asc.GlobalAddress, n: int):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=q, num=1, len=256)
    name = "int32"
    t = q.alloc_tensor(asc.DataType(name))
    q.free_tensor(t)


def test_compiled_datatype_needs_a_string_literal():
    with pytest.raises(asc.CompileError, match=r"asc.DataType\(name\) must name a dtype with a "
                                               r"string literal, got asc.DataType\(name\)"):
        dtype_from_variable_kernel[1](np.zeros(8, np.float32), 8, interpret=False)
