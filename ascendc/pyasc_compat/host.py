"""pyasc's `asc.lib.host` for pyasc scripts: `ascendc.host` (the Matmul host tiling) plus what
pyasc's tutorials also call on it, until ascendc.host grows them:

- `set_c_type(TPosition.VECCALC | VECIN, ...)`: C delivered tile by tile to a local tensor
  (`Matmul.iterate()` + `get_tensor_c()`); the tiling is the same as for GM;
- `set_traverse(MatrixTraverse.FIRSTM | FIRSTN)`: the order of the C tiles (tiling.iterate_order
  0 / 1), mirrors `MatmulApiTilingBase::SetTraverse`;
- `set_fix_split(base_m=-1, base_n=-1, base_k=-1)`: fixed base tile sizes (-1: chosen as usual),
  mirrors `SetFixSplit`; base_k and the L1 steps are then recomputed for the fixed tile.
"""
from __future__ import annotations

import enum
import warnings

from .. import host as _host
from ..host import CubeFormat, DataType, PlatformAscendC, TPosition, get_ascendc_platform


class MatrixTraverse(enum.IntEnum):
    """Mirrors `matmul_tiling::MatrixTraverse`."""
    NOSET = 0
    FIRSTM = 1
    FIRSTN = 2


_LOCAL_C = (TPosition.VECCALC, TPosition.VECIN)
_SIZE = {DataType.DT_FLOAT: 4, DataType.DT_FLOAT16: 2, DataType.DT_BF16: 2}


class _NoFit(Exception):
    pass


def _ceil(a, b):
    return -(-a // b)


def _init_pyasc(self):
    self.__dict__.setdefault("traverse", MatrixTraverse.NOSET)
    self.__dict__.setdefault("fix_split", (-1, -1, -1))


def set_c_type(self, position, format, dtype):
    if int(position) in _LOCAL_C:      # same tiling; the kernel's Matmul type says where C goes
        position = TPosition.GM
    return _BASE["set_c_type"](self, position, format, dtype)


def set_traverse(self, traverse):
    _init_pyasc(self)
    try:
        self.traverse = MatrixTraverse(int(traverse))
    except ValueError:
        raise ValueError(f"{self._api}.set_traverse: traverse must be a MatrixTraverse, got "
                         f"traverse={traverse!r}") from None
    return 0


def set_fix_split(self, base_m_in=-1, base_n_in=-1, base_k_in=-1):
    api = f"{self._api}.set_fix_split"
    for name, v in (("base_m", base_m_in), ("base_n", base_n_in), ("base_k", base_k_in)):
        if isinstance(v, bool) or not isinstance(v, int) or (v != -1 and (v < 16 or v % 16)):
            raise ValueError(f"{api}: {name} must be -1 or a positive multiple of 16, got "
                             f"{name}={v!r}")
    self.fix_split = (base_m_in, base_n_in, base_k_in)
    return 0


def get_tiling(self, tiling) -> int:
    """As ascendc.host's (0, or -1 with a RuntimeWarning when the fixed split fits no
    tiling)."""
    try:
        return _BASE["get_tiling"](self, tiling)
    except _NoFit as e:
        warnings.warn(str(e), RuntimeWarning, stacklevel=2)
        return -1


def _compute(self, api) -> dict:
    _init_pyasc(self)
    f = _BASE["_compute"](self, api)
    if self.traverse == MatrixTraverse.FIRSTN:
        f["iterate_order"] = 1
    fm, fn, fk = self.fix_split
    if fm == fn == fk == -1:
        return f
    return self._refit(api, f, fm, fn, fk)


def _refit(self, api, f, fm, fn, fk):
    """Base tile (base_m, base_n[, base_k]) fixed: base_k, L0 double buffering and L1 steps
    as ascendc.host chooses them for that tile."""
    soc = self.platform.soc
    isz = _SIZE[self.types["a"][0]]
    c0 = 32 // isz
    k = f["single_core_k"]
    bm = f["base_m"] if fm == -1 else fm
    bn = f["base_n"] if fn == -1 else fn
    l0c = soc.l0c_bytes if self.space[1] < 0 else self.space[1]
    l1 = soc.l1_bytes if self.space[0] < 0 else self.space[0]
    if bm * bn * 4 > l0c:
        raise _NoFit(f"{api}: the fixed base_m x base_n float32 C tile must fit L0C, got "
                        f"base_m={bm} base_n={bn} for l0c_size={l0c}")
    if fk == -1:
        cap_k = min(soc.l0a_bytes // 2 // (bm * isz), soc.l0b_bytes // 2 // (bn * isz),
                    255 * c0, _ceil(k, c0) * c0)
        bk = max(cap_k // c0 * c0, c0)
        if bk >= 16 and _ceil(k, c0) * c0 >= 16:
            bk = max(bk // 16 * 16, 16)
    else:
        bk = fk
    if bm * bk * isz > soc.l0a_bytes or bk * bn * isz > soc.l0b_bytes:
        raise _NoFit(f"{api}: the base_m x base_k A tile and base_k x base_n B tile must "
                        f"fit L0A/L0B, got base_m={bm} base_n={bn} base_k={bk}")
    db_a = 2 if 2 * bm * bk * isz <= soc.l0a_bytes else 1
    db_b = 2 if 2 * bk * bn * isz <= soc.l0b_bytes else 1
    bias_l1 = bn * 4 if self.bias else 0
    per_step = (bm + bn) * bk * isz
    steps = max(1, min(_ceil(k, bk), _host.MAX_L1_K // bk))
    db1, step = 2, steps
    while step > 0 and 2 * step * per_step + bias_l1 > l1:
        step -= 1
    if step == 0:
        db1, step = 1, 1
        if per_step + bias_l1 > l1:
            raise _NoFit(f"{api}: one base_m x base_k A tile and base_k x base_n B tile "
                            f"must fit L1, got {per_step + bias_l1} bytes for l1_size={l1}")
    step = _ceil(_ceil(k, bk), _ceil(_ceil(k, bk), step))
    f.update(base_m=bm, base_n=bn, base_k=bk, depth_a1=db1 * step, depth_b1=db1 * step,
             step_k_a=step, step_k_b=step, db_l0a=db_a, db_l0b=db_b,
             share_l1_size=db1 * step * per_step + bias_l1, share_l0c_size=bm * bn * 4)
    return f


# Stopgap until ascendc.host grows these (asc.lib.host must stay ascendc.host's classes, and
# that module is not this package's): they are added to ascendc.host.MatmulApiTiling (and so
# MultiCoreMatmulTiling) once, when this module is imported; what ascendc.host already does is
# unchanged (NOSET traverse and no fixed split give its tiling, GM C as before).
if "_pyasc_base" not in _host.MatmulApiTiling.__dict__:     # once per process
    _host.MatmulApiTiling._pyasc_base = {n: getattr(_host.MatmulApiTiling, n)
                                         for n in ("set_c_type", "get_tiling", "_compute")}
    for _name, _f in (("set_c_type", set_c_type), ("set_traverse", set_traverse),
                      ("set_fix_split", set_fix_split), ("get_tiling", get_tiling),
                      ("_compute", _compute), ("_refit", _refit)):
        setattr(_host.MatmulApiTiling, _name, _f)
_BASE = _host.MatmulApiTiling._pyasc_base
MatmulApiTiling = _host.MatmulApiTiling
MultiCoreMatmulTiling = _host.MultiCoreMatmulTiling


__all__ = ["get_ascendc_platform", "PlatformAscendC", "MatmulApiTiling", "MultiCoreMatmulTiling",
           "TPosition", "CubeFormat", "DataType", "MatrixTraverse"]
