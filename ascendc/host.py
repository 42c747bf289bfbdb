"""Host-side tiling for `asc.adv.Matmul` (pyasc `asc.lib.host`; Ascend C `matmul_tiling`).

`t = MultiCoreMatmulTiling(get_ascendc_platform())`, then `set_a_type/set_b_type/set_c_type/
set_bias_type(TPosition.GM, CubeFormat.ND, DataType.DT_FLOAT16, is_trans)`, `set_dim(cores)`,
`set_shape(M, N, K)`, `set_org_shape(M, N, K)`, `enable_bias(flag)`, `set_buffer_space(-1, -1, -1)`
and `t.get_tiling(asc.adv.TCubeTiling())`, which fills the struct and returns 0 (-1 when no tiling
fits, with a RuntimeWarning saying why, as Ascend C logs and returns -1). Invalid arguments raise
ValueError at once.

Dtypes (Matmul's combinations): A and B both DT_FLOAT (C DT_FLOAT), both DT_FLOAT16 or DT_BF16
(C DT_FLOAT16, DT_BF16 or DT_FLOAT), or both DT_INT8 (C DT_INT32: the cube's int8 path, C0 = 32
elements, K steps of 32); the bias is DT_INT32 for int8 A/B, DT_FLOAT otherwise. Other
combinations raise ValueError in get_tiling. Capacities are in bytes, so an int8 tile of the
same L0A/L0B/L1 budget is twice as deep in K as a 16-bit one; the C tile (float32 or int32) is
4 bytes an element in L0C either way.

The tiling (an emulator's choice, not CANN's cost model, but with the same invariants):
- cores: M and N are split into m_dim x n_dim blocks (m_dim * n_dim <= set_dim) minimising the
  per-core MACs plus operand loads; single_core_m/n are multiples of 16 (or the whole M/N);
  used_core_num = ceil(M/single_core_m) * ceil(N/single_core_n); single_core_k = K.
- base tiles: base_m <= 128 and base_n <= 256, multiples of 16 (smaller for small single-core
  shapes); base_m*base_n*4 fits L0C; base_k a multiple of C0 (32 B / sizeof(A): 8 for float32,
  16 for 16-bit, 32 for int8) as large as lets A and B tiles fit L0A and L0B twice
  (db_l0a = db_l0b = 2), at most K rounded up to C0.
- L1: K goes through L1 in step_k_a = step_k_b = s chunks of base_k, double-buffered
  (depth_a1 = depth_b1 = 2*s) when (base_m + base_n)*s*base_k*sizeof fits twice, with s as large
  as fits (step_m = step_n = 1); the bias row (base_n float32/int32) is counted in share_l1_size.
- pyasc's setters: `set_c_type(TPosition.VECCALC | VECIN, ...)` (C handed tile by tile to a local
  tensor by `Matmul.iterate()` + `get_tensor_c()`; the tiling is the one for GM C),
  `set_traverse(MatrixTraverse.FIRSTM | FIRSTN)` (the C tiles' order: iterate_order 0 / 1;
  `SetTraverse`) and `set_fix_split(base_m, base_n, base_k)` (fixed base tiles, -1 = chosen as
  above; `SetFixSplit`; base_k aligned up to C0): base_k, double buffering and the L1 steps
  then follow the fixed tile.
"""
from __future__ import annotations

import enum
import warnings

import rt

from .adv.tiling import TCubeTiling
from .lang.enums import CubeFormat
from .lang.positions import BT_BYTES  # noqa: F401  (bias table bytes; one table of levels)

__all__ = ["get_ascendc_platform", "PlatformAscendC", "MatmulApiTiling", "MultiCoreMatmulTiling",
           "TPosition", "CubeFormat", "DataType", "MatrixTraverse"]


class TPosition(enum.IntEnum):
    """Mirrors `matmul_tiling::TPosition` (host enum; LCM aliases VECCALC)."""
    GM = 0
    A1 = 1
    A2 = 2
    B1 = 3
    B2 = 4
    C1 = 5
    C2 = 6
    CO1 = 7
    CO2 = 8
    VECIN = 9
    VECOUT = 10
    VECCALC = 11
    LCM = 11
    SPM = 12
    SHM = 13
    TSCM = 14
    MAX = 15


class DataType(enum.IntEnum):
    """Mirrors `matmul_tiling::DataType` (ge::DataType values)."""
    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_INT8 = 2
    DT_INT32 = 3
    DT_UINT8 = 4
    DT_INT16 = 6
    DT_UINT16 = 7
    DT_UINT32 = 8
    DT_INT64 = 9
    DT_UINT64 = 10
    DT_DOUBLE = 11
    DT_BOOL = 12
    DT_BF16 = 27


_SIZE = {DataType.DT_FLOAT: 4, DataType.DT_FLOAT16: 2, DataType.DT_BF16: 2, DataType.DT_INT8: 1}
_AB_TYPES = (DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_BF16, DataType.DT_INT8)
_C_TYPES = (DataType.DT_FLOAT, DataType.DT_FLOAT16, DataType.DT_BF16, DataType.DT_INT32)
_BIAS_TYPES = (DataType.DT_FLOAT, DataType.DT_INT32)
# the C dtypes Matmul has for each A/B dtype (asc.adv.Matmul's own check, by dtype here)
_C_FOR = {DataType.DT_INT8: (DataType.DT_INT32,), DataType.DT_FLOAT: (DataType.DT_FLOAT,),
          DataType.DT_FLOAT16: (DataType.DT_FLOAT16, DataType.DT_BF16, DataType.DT_FLOAT),
          DataType.DT_BF16: (DataType.DT_FLOAT16, DataType.DT_BF16, DataType.DT_FLOAT)}
MAX_LD = 65535      # GM row length of A/B/C in elements (Nd2NzParams.src_d_value, fixpipe)
MAX_L1_K = 4080     # K depth of one L1 chunk (Nd2Nz dst_nz_matrix_stride = k*16 <= 65535)
MAX_LD_INT8_STRIP = 32767   # int8 A^T / B rows: two GM rows per Nd2Nz row (src_d_value = 2*ld)
# the batch layout fields of each role (SetALayout/SetBLayout(b, s, n, g, d), SetCLayout(b, s1, n,
# g, s2)), as TCubeTiling's <role>_layout_info_<name>
_LAYOUT_NAMES = {"a": ("b", "s", "n", "g", "d"), "b": ("b", "s", "n", "g", "d"),
                 "c": ("b", "s1", "n", "g", "s2")}


class MatrixTraverse(enum.IntEnum):
    """Mirrors `matmul_tiling::MatrixTraverse`."""
    NOSET = 0
    FIRSTM = 1
    FIRSTN = 2


class PlatformAscendC:
    """Mirrors `platform_ascendc::PlatformAscendC`: the SoC a tiling is computed for."""

    def __init__(self, soc=None):
        self.soc = rt.get_soc(soc)

    def get_soc_version(self) -> str:
        return self.soc.name

    def get_core_num_aic(self) -> int:
        return self.soc.ai_core_num

    def get_core_num_aiv(self) -> int:
        return self.soc.vector_core_num

    def get_core_num(self) -> int:
        return self.soc.vector_core_num

    def __repr__(self):
        return f"PlatformAscendC({self.soc.name})"


def get_ascendc_platform(soc: str | None = None) -> PlatformAscendC:
    """Mirrors `PlatformAscendCManager::GetInstance()`: the current SoC (rt.get_soc) or `soc`."""
    return PlatformAscendC(soc)


def _ceil(a, b):
    return -(-a // b)


def _align(a, b):
    return _ceil(a, b) * b


def _int(api, name, v, lo, hi=None):
    if isinstance(v, bool) or not hasattr(v, "__index__") or v < lo or \
            (hi is not None and v > hi):
        rule = f"be >= {lo}" if hi is None else f"be in [{lo}, {hi}]"
        raise ValueError(f"{api}: {name} must {rule}, got {name}={v!r}")
    return int(v)


class MatmulApiTiling:
    """Mirrors `matmul_tiling::MatmulApiTiling` (one core; see MultiCoreMatmulTiling)."""

    _api = "MatmulApiTiling"

    def __init__(self, platform: PlatformAscendC | None = None):
        if platform is not None and not isinstance(platform, PlatformAscendC):
            raise TypeError(f"{self._api}: platform must come from host.get_ascendc_platform(), "
                            f"got platform={type(platform).__name__}")
        self.platform = platform or get_ascendc_platform()
        self.types = {}
        self.shape = None
        self.org_shape = None
        self.dim = 1
        self.bias = False
        self.space = (-1, -1, -1)
        self.traverse = MatrixTraverse.NOSET
        self.fix_split = (-1, -1, -1)
        self.layouts = {}       # role -> (b, s, n, g, d): batch layouts (set_a/b/c_layout)
        self.batch_num = 0

    # -- setters ---------------------------------------------------------------------------------
    def _set_type(self, role, position, fmt, dtype, is_trans, allowed):
        api = f"{self._api}.set_{role}_type"
        if role == "c" and int(position) in (TPosition.VECCALC, TPosition.VECIN):
            position = TPosition.GM    # same tiling; the kernel's MatmulType says where C goes
        if int(position) != TPosition.GM:
            raise ValueError(f"{api}: position must be TPosition.GM (only GM operands are "
                             f"emulated), got position={TPosition(int(position)).name}")
        if int(fmt) != CubeFormat.ND and not (int(fmt) == CubeFormat.NZ and role in "ab"):
            raise ValueError(f"{api}: format must be CubeFormat.ND (or NZ for a and b), got "
                             f"format={CubeFormat(int(fmt)).name}")
        if dtype not in allowed:
            names = ", ".join(d.name for d in allowed)
            raise ValueError(f"{api}: dtype must be one of {names}, got dtype={dtype!r}")
        self.types[role] = (DataType(dtype), bool(is_trans))
        return 0

    def set_a_type(self, position, format, dtype, is_trans=False):
        return self._set_type("a", position, format, dtype, is_trans, _AB_TYPES)

    def set_b_type(self, position, format, dtype, is_trans=False):
        return self._set_type("b", position, format, dtype, is_trans, _AB_TYPES)

    def set_c_type(self, position, format, dtype):
        return self._set_type("c", position, format, dtype, False, _C_TYPES)

    def set_bias_type(self, position, format, dtype):
        return self._set_type("bias", position, format, dtype, False, _BIAS_TYPES)

    def set_shape(self, m, n, k):
        api = f"{self._api}.set_shape"
        self.shape = tuple(_int(api, nm, v, 1) for nm, v in (("m", m), ("n", n), ("k", k)))
        return 0

    def set_org_shape(self, m, n, k, kb=None, kc=None):
        api = f"{self._api}.set_org_shape"
        ka = _int(api, "k", k, 1)
        kb = ka if kb is None else _int(api, "kb", kb, 1)
        self.org_shape = (_int(api, "m", m, 1), _int(api, "n", n, 1), ka, kb)
        return 0

    def enable_bias(self, flag=True):
        self.bias = bool(flag)
        return 0

    set_bias = enable_bias

    def set_buffer_space(self, l1_size=-1, l0c_size=-1, ub_size=-1, bt_size=-1):
        api = f"{self._api}.set_buffer_space"
        soc = self.platform.soc
        self.space = (_int(api, "l1_size", l1_size, -1, soc.l1_bytes),
                      _int(api, "l0c_size", l0c_size, -1, soc.l0c_bytes),
                      _int(api, "ub_size", ub_size, -1, soc.ub_bytes))
        return 0

    def set_traverse(self, traverse):
        try:
            self.traverse = MatrixTraverse(int(traverse))
        except (TypeError, ValueError):
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

    def _set_layout(self, role, b, s, n, g, d):
        # SetALayout/SetBLayout(b, s, n, g, d), SetCLayout(b, s1, n, g, s2): the batch layout of
        # an operand (batch count, rows, heads, groups, columns) for Matmul::IterateBatch
        api = f"{self._api}.set_{role}_layout"
        self.layouts[role] = tuple(_int(api, nm, v, 1, 2**31 - 1)
                                   for nm, v in zip(_LAYOUT_NAMES[role], (b, s, n, g, d)))
        return 0

    def set_a_layout(self, b, s, n, g, d):
        return self._set_layout("a", b, s, n, g, d)

    def set_b_layout(self, b, s, n, g, d):
        return self._set_layout("b", b, s, n, g, d)

    def set_c_layout(self, b, s1, n, g, s2):
        return self._set_layout("c", b, s1, n, g, s2)

    def set_batch_num(self, batch):
        """Mirrors `SetBatchNum(batch)`: the number of batches Matmul::IterateBatch computes."""
        self.batch_num = _int(f"{self._api}.set_batch_num", "batch", batch, 1, 2**31 - 1)
        return 0

    # -- the tiling ------------------------------------------------------------------------------
    def get_tiling(self, tiling: TCubeTiling) -> int:
        """Mirrors `GetTiling(TCubeTiling&)`: fills `tiling`; 0 on success, -1 (and a
        RuntimeWarning naming the reason) when no tiling fits."""
        api = f"{self._api}.get_tiling"
        if not isinstance(tiling, TCubeTiling):
            raise TypeError(f"{api}: tiling must be an asc.adv.TCubeTiling, got "
                            f"tiling={type(tiling).__name__}")
        try:
            fields = self._compute(api)
        except _NoTiling as e:
            warnings.warn(str(e), RuntimeWarning, stacklevel=2)
            return -1
        for k, v in fields.items():
            setattr(tiling, k, v)
        return 0

    def _inputs(self, api):
        missing = [r for r in ("a", "b", "c") if r not in self.types]
        if missing:
            raise _NoTiling(f"{api}: set_a_type, set_b_type and set_c_type must be called "
                            f"first, got no type for {', '.join(missing)}")
        if self.shape is None and self.org_shape is None:
            raise _NoTiling(f"{api}: set_shape or set_org_shape must be called first, got "
                            f"no shape")
        (da, ta), (db, tb) = self.types["a"], self.types["b"]
        if _SIZE[da] != _SIZE[db] or {da, db} == {DataType.DT_FLOAT16, DataType.DT_BF16}:
            raise ValueError(f"{api}: a and b must have the same dtype, got a={da.name} "
                             f"b={db.name}")
        dc = self.types["c"][0]
        if dc not in _C_FOR[da]:
            raise ValueError(f"{api}: c must be DT_INT32 for DT_INT8 a and b (quantised int8 C "
                             f"is not emulated), DT_FLOAT for DT_FLOAT a and b, DT_FLOAT16, "
                             f"DT_BF16 or DT_FLOAT for 16-bit a and b, got a={da.name} "
                             f"c={dc.name}")
        dbias = self.types.get("bias", (None,))[0]
        want = DataType.DT_INT32 if da == DataType.DT_INT8 else DataType.DT_FLOAT
        if self.bias and dbias is not None and dbias != want:
            raise ValueError(f"{api}: bias must be DT_INT32 for DT_INT8 a and b, DT_FLOAT "
                             f"otherwise, got a={da.name} bias={dbias.name}")
        org = self.org_shape or (*self.shape[:2], self.shape[2], self.shape[2])
        shape = self.shape or (org[0], org[1], org[2])
        if shape[0] > org[0] or shape[1] > org[1] or shape[2] > min(org[2], org[3]):
            raise ValueError(f"{api}: shape must fit in the org shape, got shape={shape} "
                             f"org_shape={org}")
        lds = {"org k": org[2] if not ta else org[0], "org n": org[1],
               "org kb": org[3] if tb else org[1]}
        for name, v in lds.items():
            if v > MAX_LD:
                raise ValueError(f"{api}: GM row lengths must be <= {MAX_LD} elements "
                                 f"(Nd2NzParams.src_d_value), got {name}={v}")
        if da == DataType.DT_INT8:     # int8 A^T and B go to L1 as strips, two rows a copy
            strips = {"org m (a transposed)": org[0] if ta else 0,
                      "org n (b not transposed)": 0 if tb else org[1]}
            for name, v in strips.items():
                if v > MAX_LD_INT8_STRIP:
                    raise ValueError(f"{api}: GM row lengths of int8 A^T and B must be <= "
                                     f"{MAX_LD_INT8_STRIP} elements (two rows per "
                                     f"Nd2NzParams.src_d_value), got {name}={v}")
        return shape, org, _SIZE[da]

    def _cores(self, m, n, k):
        """(single_m, single_n) minimising per-core MACs + operand loads over m_dim*n_dim <= dim."""
        best = None
        for md in range(1, min(self.dim, _ceil(m, 16)) + 1):
            nd = max(1, min(self.dim // md, _ceil(n, 16)))
            sm = min(_align(_ceil(m, md), 16), m)
            sn = min(_align(_ceil(n, nd), 16), n)
            used = _ceil(m, sm) * _ceil(n, sn)
            cost = sm * sn * k + 8 * (sm + sn) * k
            if best is None or (cost, used) < best[0]:
                best = ((cost, used), sm, sn)
        return best[1], best[2]

    def _compute(self, api) -> dict:
        (m, n, k), org, isz = self._inputs(api)   # org: (M, N, Ka, Kb), the GM matrices
        soc = self.platform.soc
        c0 = 32 // isz
        l1 = soc.l1_bytes if self.space[0] < 0 else self.space[0]
        l0c = soc.l0c_bytes if self.space[1] < 0 else self.space[1]
        sm, sn = self._cores(m, n, k)
        fm, fn, fk = self.fix_split
        bm = min(128, _align(sm, 16)) if fm == -1 else fm
        bn = min(256, _align(sn, 16)) if fn == -1 else fn   # 256 floats: also the bias table
        while bm * bn * 4 > l0c:     # shrink the larger side the user did not fix
            can_n, can_m = fn == -1 and bn > 16, fm == -1 and bm > 16
            if can_n and (bn >= bm or not can_m):
                bn -= 16
            elif can_m:
                bm -= 16
            else:
                break
        if bm * bn * 4 > l0c:
            fixed = "fixed " if (fm, fn) != (-1, -1) else ""
            raise _NoTiling(f"{api}: the {fixed}base_m x base_n float32 C tile must fit L0C, got "
                            f"base_m={bm} base_n={bn} for l0c_size={l0c}")
        if fk == -1:
            cap_k = min(soc.l0a_bytes // 2 // (bm * isz), soc.l0b_bytes // 2 // (bn * isz),
                        255 * c0, _align(k, c0))
            bk = max(cap_k // c0 * c0, c0)
            if bk >= 16 and _align(k, c0) >= 16:
                bk = max(bk // 16 * 16, 16)
        else:
            bk = _align(fk, c0)     # SetFixSplit aligns base_k up to C0 (32 for int8)
        if bm * bk * isz > soc.l0a_bytes or bk * bn * isz > soc.l0b_bytes:
            raise _NoTiling(f"{api}: the base_m x base_k A tile and base_k x base_n B tile must "
                            f"fit L0A/L0B, got base_m={bm} base_n={bn} base_k={bk}")
        db_a = 2 if 2 * bm * bk * isz <= soc.l0a_bytes else 1
        db_b = 2 if 2 * bk * bn * isz <= soc.l0b_bytes else 1
        bias_l1 = bn * 4 if self.bias else 0
        per_step = (bm + bn) * bk * isz
        steps = max(1, min(_ceil(k, bk), MAX_L1_K // bk))
        db1, step = 2, steps
        while step > 0 and 2 * step * per_step + bias_l1 > l1:
            step -= 1
        if step == 0:
            db1, step = 1, 1
            if per_step + bias_l1 > l1:
                raise _NoTiling(f"{api}: one base_m x base_k A tile and base_k x base_n B tile "
                                f"must fit L1, got {per_step + bias_l1} bytes for "
                                f"l1_size={l1}")
        step = _ceil(_ceil(k, bk), _ceil(_ceil(k, bk), step))   # equal chunks, same count
        return dict(
            used_core_num=_ceil(m, sm) * _ceil(n, sn), m=org[0], n=org[1], k_a=org[2],
            k_b=org[3],
            single_core_m=sm, single_core_n=sn, single_core_k=k, base_m=bm, base_n=bn,
            base_k=bk, depth_a1=db1 * step, depth_b1=db1 * step, step_m=1, step_n=1,
            step_k_a=step, step_k_b=step, is_bias=int(self.bias),
            iterate_order=int(self.traverse == MatrixTraverse.FIRSTN),
            share_l1_size=db1 * step * per_step + bias_l1, share_l0c_size=bm * bn * 4,
            share_ub_size=0, db_l0a=db_a, db_l0b=db_b, db_l0c=1, batch_m=1, batch_n=1,
            **self._layout_fields())

    def _layout_fields(self) -> dict:
        out = {"batch_num": self.batch_num}
        for role, names in _LAYOUT_NAMES.items():
            for nm, v in zip(names, self.layouts.get(role, (0,) * 5)):
                out[f"{role}_layout_info_{nm}"] = v
        return out


class MultiCoreMatmulTiling(MatmulApiTiling):
    """Mirrors `matmul_tiling::MultiCoreMatmulTiling`: a tiling that splits M and N over
    `set_dim(n)` cores (see the module doc for how)."""

    _api = "MultiCoreMatmulTiling"

    def set_dim(self, dim):
        hi = self.platform.soc.vector_core_num
        self.dim = _int(f"{self._api}.set_dim", "dim", dim, 1, hi)
        return 0


class _NoTiling(Exception):
    pass
