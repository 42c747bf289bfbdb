"""pyasc's user tiling structs (`asc.language.core.struct`: Struct, Field, StructField) as kernel
arguments, nested, in both modes (pyasc's generalization/basic/test_vadd_tiling)."""
import numpy as np
import pytest

from ascendc import pyasc_compat

with pyasc_compat.installed():
    import asc
    from asc.language.core.dtype import KnownTypes as KT
    from asc.language.core.struct import Field, Struct, StructField


class BlockCfg(Struct):
    block_length = Field(dtype=KT.int32, default=0)


class TileCfg(Struct):
    tile_length = Field(dtype=KT.int32, default=0)
    tile_num = Field(dtype=KT.int32, default=0)
    scale = Field(dtype=KT.float32, default=1.0)


class KernelCfg(Struct):
    block = StructField(BlockCfg)
    tile = StructField(TileCfg)


@asc.jit
def scaled_copy(x: asc.GlobalAddress, z: asc.GlobalAddress, cfg: KernelCfg):
    offset = asc.get_block_idx() * cfg.block.block_length
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + offset)
    zg.set_global_buffer(z + offset)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=cfg.tile.tile_length * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=cfg.tile.tile_length * z.dtype.sizeof())
    for i in range(cfg.tile.tile_num):
        xl = qx.alloc_tensor(x.dtype)
        asc.data_copy(xl, xg[i * cfg.tile.tile_length:], count=cfg.tile.tile_length)
        qx.enque(xl)
        xl = qx.deque(x.dtype)
        zl = qz.alloc_tensor(z.dtype)
        asc.muls(zl, xl, cfg.tile.scale, count=cfg.tile.tile_length)
        qz.enque(zl)
        qx.free_tensor(xl)
        zl = qz.deque(z.dtype)
        asc.data_copy(zg[i * cfg.tile.tile_length:], zl, count=cfg.tile.tile_length)
        qz.free_tensor(zl)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_nested_struct_is_a_kernel_argument(mode):
    cores, tile, tiles = 4, 128, 3
    x = np.random.default_rng(0).standard_normal(cores * tile * tiles).astype(np.float32)
    z = np.zeros_like(x)
    tile_cfg = TileCfg(tile_length=tile, tile_num=0)
    tile_cfg.tile_num = tiles                  # fields are writable on the host
    tile_cfg.scale = 2.5
    cfg = KernelCfg(tile=tile_cfg)
    cfg.block = BlockCfg(block_length=tile * tiles)
    scaled_copy[cores](x, z, cfg, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x * np.float32(2.5))


def test_struct_fields_are_checked_on_the_host():
    with pytest.raises(ValueError, match=r"BlockCfg: block_length must fit int32 "
                                         r"\(\[-2147483648, 2147483647\]\), "
                                         r"got block_length=4294967296"):
        BlockCfg(block_length=2**32)
    with pytest.raises(RuntimeError, match="BlockCfg does not have a field 'length'"):
        BlockCfg(length=1)
    with pytest.raises(TypeError, match=r"KernelCfg: tile must be a TileCfg, got tile=3"):
        KernelCfg(tile=3)
    with pytest.raises(RuntimeError, match="Struct 'Empty' must have at least one field"):
        type("Empty", (Struct,), {})
    # an unset StructField takes its struct's defaults; the kernel record nests
    rec = KernelCfg()._kernel_record()
    assert rec.tile.tile_length == 0 and rec.tile.scale == 1.0 and rec.block.block_length == 0
    assert isinstance(rec.block.block_length, np.int32)
