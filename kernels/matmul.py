"""Matrix multiply on the cube path: C (M x N, float32) = A (M x K) @ B (K x N).

Inputs are float32, float16 or bfloat16 (both operands the same dtype); the cube accumulates in
float32 (L0C) and C is always float32 (2-byte inputs too: fixpipe writes L0C out unquantised).

Per output tile (base_m x base_n, the L0C tile) and per K chunk (base_k):
  GM -> L1   `data_copy` with Nd2NzParams: A chunk as NZ (C0-wide column strips, m16 rows each);
             B chunk as 16-column strips, each a row-major (k_pad x 16) block, i.e. C0 x 16
             fractals (the standard NZ for 2-byte types; for float32 the layout that a transposing
             load_data turns into ZN, see ascendc/lang/prims/cube.py).
  L1 -> L0A  `load_data` NZ -> ZZ, one call per 16-row block of A.
  L1 -> L0B  `load_data(if_transpose=True)` -> ZN, one call per 16-column strip of B, for each
             l0_n-wide part of the tile.
  mmad       into L0C (NZ), `cmatrix_init_val=True` on the first K chunk, accumulating after.
  fixpipe    L0C -> GM, NZ -> ND, once per tile.
Output tiles are numbered column-major (tm fastest) and each core (block) takes a contiguous,
balanced range, so consecutive tiles of a core share the B column panel, the larger of the two
operand chunks (base_k x base_n), while it is still in the CPU's caches.

Ragged shapes: every primitive is called with the exact tile extents (mt, nt, kt), so rows and
columns beyond M/N are never read from GM nor written to it. The K tail needs zeros in the fractal
padding (the cube reads whole C0-deep fractals on hardware), so for a K chunk that is not a
multiple of C0 the padding of the last A strip and of the tail rows of every B strip is zero-filled
in L1 from a small zero GM workspace (`zeros` argument) before the Nd2Nz copy. Rows past M and
columns past N inside a fractal hold garbage; they only produce L0C cells fixpipe never writes.
No host-side padding or copies.

Double buffering: L1 (A1/B1) queues have depth 2 (the GM->L1 copy of the next K chunk can overlap
the cube work on this one); L0A/L0B get depth 2 when two buffers fit, which is not the case for
the default float32 tiles (a 128 x 128 float32 chunk fills L0A/L0B): large mmad calls amortise
each call's fixed costs (checks, the repack of L0B) and the emulator cannot show overlap anyway.

Speed (emulator): the float32 mmad runs a fractal-aware GEMM on L0A/L0B/L0C in place
(ascendc/lang/prims/cubegemm.py, about the speed of a single-threaded BLAS call of the same
size). `python -m bench.kernels_matmul --steps` splits one K chunk of a 128 x 256 tile by
primitive; measured (thread CPU time, loaded 2-core AMD EPYC): Nd2Nz copies 7 us, load_data to
L0A 3 us and to L0B 7 us, the two mmads 44 us, fixpipe 0.3 us per chunk at K=2048; total 61 us
against 78 us for np.dot of the same product on one BLAS thread (with the former BLAS-based
mmad: 89 us for the two mmads, 112 us per chunk). load_data's fixed cost per call (~0.3 us of
checks and bookkeeping, 24 calls per chunk) is the largest cost left outside the GEMM.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt
from ascendc.adv import nd2nz_strips

from ._host import ceil_div, is_device

DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(asc.bfloat16.numpy))
MAX_LD = 65535          # Nd2NzParams.src_d_value (row length of A and B in elements)
MAX_MNK = 4095          # mmad m, n, k and fixpipe n_size


# ---- tiling ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatmulTiling:
    """How `matmul_kernel` cuts C = A @ B. Sizes in elements; capacities are checked against
    `soc` (rt.get_soc name). Mirrors the roles of TCubeTiling's baseM/baseN/baseK and dbL0A/B."""
    m: int
    n: int
    k: int
    dtype: str            # input dtype name: "float32", "float16" or "bfloat16"
    base_m: int           # rows of an output tile (L0C rows, mmad m), multiple of 16
    base_n: int           # columns of an output tile (L0C columns), multiple of 16
    base_k: int           # K per chunk (L1 and L0A/L0B depth, mmad k), multiple of 16
    l0_n: int             # columns per mmad (L0B width), multiple of 16 dividing base_n
    block_dim: int        # cores used
    depth_l1: int = 2     # A1/B1 queue depth (2 = double buffering)
    depth_l0a: int = 1    # A2 queue depth
    depth_l0b: int = 1    # B2 queue depth
    soc: str = ""         # SoC name ("" = the current one)

    def __post_init__(self):
        bad = [f"{f}={getattr(self, f)}" for f in ("m", "n", "k", "block_dim")
               if getattr(self, f) < 1]
        if bad:
            raise ValueError(f"MatmulTiling: m, n, k and block_dim must be >= 1, got {bad}")
        if np.dtype(self.dtype) not in DTYPES:
            raise ValueError(f"MatmulTiling: dtype must be float32, float16 or bfloat16, got "
                             f"dtype={self.dtype!r}")
        for f in ("base_m", "base_n", "base_k", "l0_n"):
            v = getattr(self, f)
            if v < 16 or v % 16 or v > MAX_MNK:
                raise ValueError(f"MatmulTiling: {f} must be a multiple of 16 in [16, 4080], got "
                                 f"{f}={v}")
        c0 = 32 // np.dtype(self.dtype).itemsize
        if self.base_k > 255 * c0:
            raise ValueError(f"MatmulTiling: base_k must be <= {255 * c0} for {self.dtype} "
                             f"(load_data repeat_times <= 255 fractals of {c0}), got "
                             f"base_k={self.base_k}")
        if self.base_n % self.l0_n:
            raise ValueError(f"MatmulTiling: l0_n must divide base_n, got l0_n={self.l0_n} "
                             f"base_n={self.base_n}")
        for f in ("depth_l1", "depth_l0a", "depth_l0b"):
            if getattr(self, f) not in (1, 2):
                raise ValueError(f"MatmulTiling: {f} must be 1 or 2, got {f}={getattr(self, f)}")
        if self.k > MAX_LD or self.n > MAX_LD:
            raise ValueError(f"MatmulTiling: k and n must be <= {MAX_LD} (Nd2NzParams.src_d_value "
                             f"is the GM row length), got k={self.k} n={self.n}")
        soc = rt.get_soc(self.soc or None)
        isz = np.dtype(self.dtype).itemsize
        used = [("L1", self.depth_l1 * (self.base_m + self.base_n) * self.base_k * isz,
                 soc.l1_bytes, "depth_l1*(base_m+base_n)*base_k*sizeof"),
                ("L0A", self.depth_l0a * self.base_m * self.base_k * isz, soc.l0a_bytes,
                 "depth_l0a*base_m*base_k*sizeof"),
                ("L0B", self.depth_l0b * self.base_k * self.l0_n * isz, soc.l0b_bytes,
                 "depth_l0b*base_k*l0_n*sizeof"),
                ("L0C", self.base_m * self.base_n * 4, soc.l0c_bytes, "base_m*base_n*4")]
        for level, need, cap, what in used:
            if need > cap:
                raise ValueError(f"MatmulTiling: {what} must fit {level} ({cap} bytes on "
                                 f"{soc.name}), got {need} bytes for {self}")

    @property
    def tiles(self) -> int:
        return ceil_div(self.m, self.base_m) * ceil_div(self.n, self.base_n)

    @property
    def zeros_len(self) -> int:
        """Elements of the zero workspace (K-tail padding of one A strip or of all B strips)."""
        c0 = 32 // np.dtype(self.dtype).itemsize
        return max(self.base_m * c0, ceil_div(self.base_n, 16) * 16 * (c0 - 1), 16)


def matmul_tiling(m: int, n: int, k: int, dtype, block_dim: int | None = None,
                  soc=None) -> MatmulTiling:
    """Default tiling: the largest mmad that L0A/L0B/L0C hold (fewest layout conversions per
    FLOP in the emulator, fewest cube instructions on hardware). float32: 128 x 256 C tiles,
    128-deep K chunks, two 128-wide mmads per chunk (each fills L0A/L0B); 2-byte types:
    128 x 256 x 128 mmads with L0A double-buffered. The tile sizes depend only on the dtype and
    the SoC, not on the shape (they are compile-time constants: one compiled kernel per dtype);
    small or ragged problems just use part of each tile."""
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise TypeError(f"matmul: dtype must be float32, float16 or bfloat16, got dtype={dt}")
    spec = rt.get_soc(soc)
    isz = dt.itemsize
    base_m, base_k = 128, 128
    base_n = min(spec.l0c_bytes // (4 * base_m) // 16 * 16, 256)
    l0_n = base_n
    while base_k * l0_n * isz > spec.l0b_bytes or base_n % l0_n:
        l0_n -= 16
    depth_l0a = 2 if 2 * base_m * base_k * isz <= spec.l0a_bytes else 1
    depth_l0b = 2 if 2 * base_k * l0_n * isz <= spec.l0b_bytes else 1
    depth_l1 = 2 if 2 * (base_m + base_n) * base_k * isz <= spec.l1_bytes else 1
    tiles = ceil_div(m, base_m) * ceil_div(n, base_n)
    cores = block_dim or min(tiles, spec.ai_core_num)
    return MatmulTiling(m, n, k, dt.name, base_m, base_n, base_k, l0_n, cores,
                        depth_l1, depth_l0a, depth_l0b, spec.name)


# ---- kernel ------------------------------------------------------------------------------------

@asc.jit
def copy_a_nz(q, ag, zg, off, mt, kt, ka, m16, c0):
    """A[m0:m0+mt, k0:k0+kt] (at ag[off:], rows ka apart) -> L1 as NZ (C0-wide strips of m16
    rows); the K-tail padding of the last strip is zero-filled first. Returns it dequeued."""
    t = q.alloc_tensor(ag.dtype)
    if kt % c0 != 0:
        asc.data_copy(t[(kt // c0) * m16 * c0:], zg, m16 * c0)
        # the Nd2Nz copy rewrites part of the zeroed strip: MTE2 copies may land out of order
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    asc.data_copy(t, ag[off:], asc.Nd2NzParams(1, mt, kt, 0, ka, m16, 1, 0))
    q.enque(t)
    return q.deque(ag.dtype)


@asc.jit
def copy_b(q, bg, zg, og, off, kt, nt, nb, k_pad, rows):
    """B[k0:k0+kt, n0:n0+nt] -> L1 as 16-column strips, each a row-major k_pad x 16 block
    (C0 x 16 fractals; asc.adv's copy), of which the first `rows` rows come from GM (at bg[off:],
    nb apart) and row kt - 1 is ones when rows < kt (kernels.convmm's virtual ones row, from the
    ones workspace og); the K-tail rows kt..k_pad-1 are zero-filled first."""
    t = q.alloc_tensor(bg.dtype)
    strips = (nt + 15) // 16
    blk = 16 * bg.dtype.sizeof() // 32      # 32-byte blocks per 16-element row
    if kt < k_pad:
        asc.data_copy(t[kt * 16:], zg, asc.DataCopyParams(strips, (k_pad - kt) * blk, 0,
                                                          kt * blk))
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)   # before the strips' copies over the same rows
    if rows < kt:                           # one 16-element row of ones per strip
        asc.data_copy(t[rows * 16:], og, asc.DataCopyParams(strips, blk, 0, (k_pad - 1) * blk))
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    if rows > 0:
        nd2nz_strips(t, bg, off, rows, nt, nb, k_pad)
    q.enque(t)
    return q.deque(bg.dtype)


@asc.jit
def load_a_zz(q, a1, m16, kt, c0):
    """L1 NZ (strips of m16 rows) -> L0A ZZ for an m16 x kt chunk: one load per 16-row block."""
    t = q.alloc_tensor(a1.dtype)
    kb = (kt + c0 - 1) // c0
    for r in range(m16 // 16):
        asc.load_data(t[r * kb * 16 * c0:], a1[r * 16 * c0:],
                      asc.LoadData2DParams(0, kb, m16 // 16, 0, 0, False, 0))
    q.enque(t)
    return q.deque(a1.dtype)


@asc.jit
def load_b_zn(q, b1, j0, ns, k_pad, c0):
    """L1 strips j0.. (k_pad x 16 each) -> L0B ZN for a k_pad x ns part: one transposing load
    per 16-column strip, its k_pad/C0 fractals spread NB apart (dst_gap = NB - 1)."""
    t = q.alloc_tensor(b1.dtype)
    kb = k_pad // c0
    nbk = (ns + 15) // 16
    for j in range(nbk):
        asc.load_data(t[j * 16 * c0:], b1[(j0 + j) * k_pad * 16:],
                      asc.LoadData2DParams(0, kb, 1, 0, nbk - 1, True, 0))
    q.enque(t)
    return q.deque(b1.dtype)


@asc.jit
def mmad_strips(qb2, b1, a2, cl, m16, mt, nt, kt, k_pad, c0, l0_n, init):
    """C (+)= A2 @ B1 over the tile's nt columns, l0_n at a time (each strip of B1 loaded to L0B
    first); init: the first K chunk (C starts from 0)."""
    for j in range(0, nt, l0_n):
        ns = min(l0_n, nt - j)
        b2 = load_b_zn(qb2, b1, j // 16, ns, k_pad, c0)
        asc.mmad(cl[j * m16:], a2, b2,
                 asc.MmadParams(m=mt, n=ns, k=kt, unit_flag=0, cmatrix_source=False,
                                cmatrix_init_val=init))
        qb2.free_tensor(b2)


@asc.jit
def store_c(qc, cl, cg, off, mt, nt, m16, n, relu):
    """The finished mt x nt tile in L0C to C at element `off` (row stride n) by the fixpipe,
    relu: its relu_en."""
    qc.enque(cl)
    cl = qc.deque(asc.float32)
    asc.fixpipe(cg[off:], cl, asc.FixpipeParamsV220(nt, mt, m16, n, relu_en=relu != 0))
    qc.free_tensor(cl)


@asc.jit
def tile_range(m, n, base_m, base_n):
    """(tiles_m, first, last): this core's contiguous, balanced range of the output tiles,
    numbered column-major (tm fastest)."""
    tiles_m = (m + base_m - 1) // base_m
    tiles = tiles_m * ((n + base_n - 1) // base_n)
    bidx = asc.get_block_idx()
    bnum = asc.get_block_num()
    return (tiles_m, bidx * tiles // bnum, (bidx + 1) * tiles // bnum)


@asc.jit
def cube_queues(pipe, isz, base_m, base_n, base_k, l0_n, depth_l1, depth_l0a, depth_l0b):
    """The five queues of the tile loop (A1, B1, A2, B2, CO1) with their buffers."""
    qa1 = asc.TQue(asc.TPosition.A1, depth_l1)
    qb1 = asc.TQue(asc.TPosition.B1, depth_l1)
    qa2 = asc.TQue(asc.TPosition.A2, depth_l0a)
    qb2 = asc.TQue(asc.TPosition.B2, depth_l0b)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    pipe.init_buffer(qa1, depth_l1, base_m * base_k * isz)
    pipe.init_buffer(qb1, depth_l1, base_k * base_n * isz)
    pipe.init_buffer(qa2, depth_l0a, base_m * base_k * isz)
    pipe.init_buffer(qb2, depth_l0b, base_k * l0_n * isz)
    pipe.init_buffer(qc, 1, base_m * base_n * 4)
    return (qa1, qb1, qa2, qb2, qc)


@asc.jit
def matmul_tiles(ag, bg, cg, zg, og, qa1, qb1, qa2, qb2, qc, m, n, k, kg, relu, tiles_m, first,
                 last, base_m, base_n, base_k, l0_n):
    """Output tiles [first, last) of C = A @ B (the module doc's steps); B has kg rows in GM
    and, when kg < k, a last row of ones (`copy_b`); relu: the fixpipe's relu_en."""
    c0 = 32 // ag.dtype.sizeof()
    k_chunks = (k + base_k - 1) // base_k
    for t in range(first, last):
        m0 = t % tiles_m * base_m
        n0 = t // tiles_m * base_n
        mt = min(base_m, m - m0)
        nt = min(base_n, n - n0)
        m16 = (mt + 15) // 16 * 16
        cl = qc.alloc_tensor(asc.float32)
        for kc in range(k_chunks):
            k0 = kc * base_k
            kt = min(base_k, k - k0)
            k_pad = (kt + c0 - 1) // c0 * c0
            a1 = copy_a_nz(qa1, ag, zg, m0 * k + k0, mt, kt, k, m16, c0)
            b1 = copy_b(qb1, bg, zg, og, k0 * n + n0, kt, nt, n, k_pad, min(kt, kg - k0))
            a2 = load_a_zz(qa2, a1, m16, kt, c0)
            qa1.free_tensor(a1)
            mmad_strips(qb2, b1, a2, cl, m16, mt, nt, kt, k_pad, c0, l0_n, kc == 0)
            qa2.free_tensor(a2)
            qb1.free_tensor(b1)
        store_c(qc, cl, cg, m0 * n + n0, mt, nt, m16, n, relu)


@asc.jit
def matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                  zeros: asc.GlobalAddress, m: int, n: int, k: int,
                  base_m: asc.ConstExpr[int], base_n: asc.ConstExpr[int],
                  base_k: asc.ConstExpr[int], l0_n: asc.ConstExpr[int],
                  depth_l1: asc.ConstExpr[int], depth_l0a: asc.ConstExpr[int],
                  depth_l0b: asc.ConstExpr[int]):
    tiles_m, first, last = tile_range(m, n, base_m, base_n)
    if first >= last:
        return
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, m * k)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b, k * n)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c, m * n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(zeros)
    pipe = asc.TPipe()
    qa1, qb1, qa2, qb2, qc = cube_queues(pipe, a.dtype.sizeof(), base_m, base_n, base_k, l0_n,
                                         depth_l1, depth_l0a, depth_l0b)
    matmul_tiles(ag, bg, cg, zg, zg, qa1, qb1, qa2, qb2, qc, m, n, k, k, 0, tiles_m, first,
                 last, base_m, base_n, base_k, l0_n)


# ---- host side ---------------------------------------------------------------------------------

def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 A @ B rounded to float32 (the output dtype of `matmul`)."""
    return (np.asarray(a, np.float64) @ np.asarray(b, np.float64)).astype(np.float32)


_ZEROS: dict = {}   # device id -> (rt Device, {dtype: [DeviceArray, ...]}): zero workspaces


def _device_zeros(like: rt.DeviceArray, n: int) -> rt.DeviceArray:
    """A zero DeviceArray of >= n elements of like.dtype on like's device, cached: kernels only
    read it, so launches on any stream may share it. Cached arrays are freed when the device is
    reset (a reset hook), never earlier, since an asynchronous launch may still be reading one."""
    dev = rt.device.get_device(like.device)
    entry = _ZEROS.get(like.device)
    if entry is None or entry[0] is not dev:
        entry = _ZEROS[like.device] = (dev, {})
        dev.reset_hooks.append(_drop_zeros)
    arrays = entry[1].setdefault(np.dtype(like.dtype), [])
    if not arrays or arrays[-1].size < n:
        arrays.append(rt.device_zeros(max(n, 4096), like.dtype, device=like.device))
    return arrays[-1]


def _drop_zeros(dev) -> None:
    entry = _ZEROS.get(dev.id)
    if entry is not None and entry[0] is dev:
        del _ZEROS[dev.id]
        for arrays in entry[1].values():
            for arr in arrays:
                arr.free()


def _check_inputs(a, b):
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError(f"matmul: a and b must be 2-D, got a.shape={tuple(a.shape)} "
                         f"b.shape={tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: a.shape[1] must equal b.shape[0] (A is M x K, B is K x N), got "
                         f"a.shape={tuple(a.shape)} b.shape={tuple(b.shape)}")
    if np.dtype(a.dtype) != np.dtype(b.dtype) or np.dtype(a.dtype) not in DTYPES:
        raise TypeError(f"matmul: a and b must both be float32, float16 or bfloat16, got "
                        f"a.dtype={a.dtype} b.dtype={b.dtype}")
    m, k = (int(s) for s in a.shape)
    n = int(b.shape[1])
    if min(m, n, k) < 1:
        raise ValueError(f"matmul: M, N and K must be >= 1, got M={m} N={n} K={k}")
    return m, n, k


def matmul(a, b, *, stream=None, tiling: MatmulTiling | None = None, **launch_options):
    """C = A @ B on the cube path; C is float32. numpy in -> numpy out (synchronous);
    rt.DeviceArray in -> DeviceArray out, launched asynchronously on `stream` (nothing is
    copied: the kernel reads A and B and writes C in device memory). `launch_options` go to the
    kernel launch (interpret=, checked=, soc=)."""
    dev = is_device(a, b)
    m, n, k = _check_inputs(a, b)
    dt = np.dtype(a.dtype)
    t = tiling or matmul_tiling(m, n, k, dt, soc=launch_options.get("soc"))
    if (t.m, t.n, t.k, t.dtype) != (m, n, k, dt.name):
        raise ValueError(f"matmul: tiling must be made for these inputs, got tiling for "
                         f"{t.m}x{t.n}x{t.k} {t.dtype} and inputs M={m} N={n} K={k} {dt.name}")
    if dev:
        c = rt.device_empty((m, n), np.float32, device=a.device)
        zeros = _device_zeros(a, t.zeros_len)
    else:
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        c = rt.host_empty((m, n), np.float32)
        zeros = np.zeros(t.zeros_len, dt)
    launch = matmul_kernel[t.block_dim, stream] if stream is not None else \
        matmul_kernel[t.block_dim]
    launch(a, b, c, zeros, np.int64(m), np.int64(n), np.int64(k), t.base_m, t.base_n, t.base_k,
           t.l0_n, t.depth_l1, t.depth_l0a, t.depth_l0b, **launch_options)
    return c
