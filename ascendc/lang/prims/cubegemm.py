"""The float32 GEMM of the emulated cube (`mmad` for f16/bf16/f32 inputs), on the fractal layouts.

`gemm_nz(c, a, bp, m16, n16, k, c0, kpad, init)`: L0C (NZ, float32: 16-column strips of m16
rows) = (or +=) A @ B, with A in L0A's ZZ layout as float32 (16 x C0 fractals, row-major grid
over (m16/16, kpad/C0)) and B packed by `pack_zn` as one row-major kpad x 16 float32 block per
16-column strip (bp[(strip * kpad + k) * 16 + j]).

Every output element is computed the same way, wherever it sits and whatever the shape of the
call: acc = 0; acc = fma(A[r, i], B[i, c], acc) for i = 0..k-1 in order; then C = acc (init) or
C + acc (accumulating: a two-level sum over K chunks, as BLAS blocks K). So the result is
position-independent: two columns with identical inputs get bit-identical outputs, as on the
NPU, where one datapath computes every cell. BLAS does not promise this (its first column block
and edge kernels round differently), hence this kernel.

The micro-kernel is LLVM IR (an intrinsic): MR rows x NR strips of accumulators, one <16 x float>
value per L0C row of a strip (one AVX-512 register, two AVX2 ones; MR and NR are sized to the
CPU's register file, see BLOCKINGS, and do not change the result), A broadcast from L0A in
place (no unpacking), C read and written in place in L0C (no packing); only B is repacked
(O(k * n) per mmad against O(m * n * k) work).
`h2f16` converts 16 float16 values to float32 with one vector fpext (the CPU's half -> float,
exact, as the element-wise conversion it replaces, about 1.5x faster: 0.6 us for a 128 x 128
operand). Helpers serve the cube path's data movement too: `make_transpose` (the fractal
transpose of load_data(if_transpose) and of pack_zn, 512-bit registers through a network of
two-input shuffles), `copy32` (Nd2Nz's
32-byte C0 rows) and `copy64` (a 16-element L0C row in fixpipe, two adjacent C0 rows in Nd2Nz).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ..core import prim
from ..numba_link import target_features

__all__ = ["BLOCKINGS", "HOST_BLOCKING", "copy32", "copy64", "gemm_nz", "gemm_nz_blocked",
           "gemm_zn", "gemm_zn_blocked", "h2f16", "host_blocking", "make_transpose", "pack_zn"]

_F32 = ir.FloatType()
_I64 = ir.IntType(64)
_V16 = ir.VectorType(_F32, 16)


def _data_ptr(context, builder, aty, a):
    return context.make_array(aty)(context, builder, a).data


def _make_ukernel(mr, nr):
    """Intrinsic ukernel(c, co, cstr, a, ao, ashift, b, bo, bstr, k, init): for rows i < mr and
    strips s < nr, C row (co + s*cstr + i*16, 16 floats) (+)= sum_kk A[i, kk] * B[kk, s] with
    A[i, kk] at a[ao + i*C0 + (kk >> ashift) * 16*C0 + kk % C0] (C0 = 1 << ashift) and B row kk of
    strip s at b[bo + s*bstr + kk*16 : +16]."""
    @intrinsic
    def ukernel(typingctx, c, co, cstr, a, ao, ashift, b, bo, bstr, k, init):
        if not all(isinstance(t, types.Array) and t.dtype == types.float32 for t in (c, a, b)):
            return None
        i64 = types.int64
        sig = types.void(c, i64, i64, a, i64, i64, b, i64, i64, i64, i64)

        def codegen(context, builder, signature, args):
            c_, co_, cstr_, a_, ao_, ash_, b_, bo_, bstr_, k_, init_ = args
            cp = _data_ptr(context, builder, signature.args[0], c_)
            ap = _data_ptr(context, builder, signature.args[3], a_)
            bp = _data_ptr(context, builder, signature.args[6], b_)
            c0 = builder.shl(_I64(1), ash_)

            def crow(s, i):
                off = builder.add(co_, builder.add(builder.mul(_I64(s), cstr_), _I64(16 * i)))
                return builder.bitcast(builder.gep(cp, [off]), _V16.as_pointer())

            accs = [[cgutils.alloca_once(builder, _V16) for _ in range(nr)] for _ in range(mr)]
            for i in range(mr):
                for s in range(nr):
                    builder.store(ir.Constant(_V16, None), accs[i][s])
            fma = cgutils.get_or_insert_function(builder.module,
                                                 ir.FunctionType(_V16, [_V16] * 3),
                                                 "llvm.fma.v16f32")
            zeros16 = ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16)
            with cgutils.for_range(builder, k_) as loop:
                kk = loop.index
                # A[., kk]: fractal kk // C0 (16*C0 apart), column kk % C0
                acol = builder.add(ao_, builder.add(
                    builder.shl(builder.lshr(kk, ash_), builder.add(ash_, _I64(4))),
                    builder.and_(kk, builder.sub(c0, _I64(1)))))
                brow = builder.add(bo_, builder.mul(kk, _I64(16)))
                bv = [builder.load(builder.bitcast(
                    builder.gep(bp, [builder.add(brow, builder.mul(_I64(s), bstr_))]),
                    _V16.as_pointer()), align=4) for s in range(nr)]
                for i in range(mr):
                    av = builder.load(builder.gep(ap, [builder.add(acol,
                                                                   builder.mul(_I64(i), c0))]))
                    splat = builder.shuffle_vector(
                        builder.insert_element(ir.Constant(_V16, ir.Undefined), av, _I64(0)),
                        ir.Constant(_V16, ir.Undefined), zeros16)
                    for s in range(nr):
                        builder.store(builder.call(fma, [splat, bv[s], builder.load(accs[i][s])]),
                                      accs[i][s])
            is_init = builder.icmp_signed("!=", init_, _I64(0))
            for i in range(mr):
                for s in range(nr):
                    acc = builder.load(accs[i][s])
                    old = builder.load(crow(s, i), align=4)
                    builder.store(builder.select(is_init, acc, builder.fadd(old, acc)),
                                  crow(s, i), align=4)
            return context.get_dummy_value()
        return sig, codegen
    return ukernel


# The micro-kernel's blockings, (rows, strips), by index: as many accumulators as the vector
# register file holds beside one B row per strip and the A broadcast (a 16-float row is one
# AVX-512 register, two AVX2 ones, four SSE ones). A 16-row fractal block is rows, rows, ...,
# then the 16 % rows left (8 + 8, 6 + 6 + 4, 2 x 8). All three are compiled in: the host's is
# the default, and the tests run each on any CPU.
#   0 AVX-512, 32 registers: 8 x 2 = 16 accumulators + 2 + 1
#   1 AVX/AVX2, 16 registers: 6 x 1 = 12 (x 2 registers) + 2 + 1; 8 x 2 there needs 32 for
#     its accumulators alone and spilled them: 34.5 against 94.5 GFLOP/s for 128^3 on Zen 3
#   2 SSE, 16 registers: 2 x 1 = 8 (x 4) + 4 + 1
BLOCKINGS = ((8, 2), (6, 1), (2, 1))


def host_blocking(features=None) -> int:
    """The index in BLOCKINGS for the CPU Numba compiles for (`features`: the enabled feature
    names, by default `target_features()`, those of Numba's code generator)."""
    on = target_features() if features is None else features
    if "avx512f" in on:
        return 0
    return 1 if any(f.startswith("avx") for f in on) else 2


HOST_BLOCKING = host_blocking()
_UK8_2, _UK8_1 = _make_ukernel(8, 2), _make_ukernel(8, 1)
_UK6, _UK4, _UK2 = _make_ukernel(6, 1), _make_ukernel(4, 1), _make_ukernel(2, 1)


@prim
def gemm_nz(c, a, bp, m16, n16, k, c0, kpad, init):
    """See module doc. c: L0C as float32 (>= m16*n16), a: ZZ float32, bp: from pack_zn."""
    gemm_nz_blocked(c, a, bp, m16, n16, k, c0, kpad, init, HOST_BLOCKING)


@prim
def gemm_nz_blocked(c, a, bp, m16, n16, k, c0, kpad, init, which):
    """gemm_nz with the micro-kernel blocking BLOCKINGS[which]."""
    nr = BLOCKINGS[which][1]
    nbn = n16 // 16
    for s0 in range(0, nbn, nr):
        _strips_gemm(c, a, bp, s0 * kpad * 16, s0, min(nr, nbn - s0), m16, kpad // c0, c0, k,
                     init, which)


@prim
def _strips_gemm(c, a, bp, bo, s0, ns, m16, kb, c0, k, init, which):
    """C's strips s0 .. s0 + ns - 1 (ns: the blocking's strips, or 1 for the last of an odd
    count) (+)= A @ B, those strips of B packed (pack_zn's layout) from bp[bo]: one
    micro-kernel call per BLOCKINGS[which] rows (and the rest of each 16-row block)."""
    ash = np.int64(0)
    while (np.int64(1) << ash) < c0:
        ash += 1
    ini = np.int64(1 if init else 0)
    kpad = kb * c0
    mr = BLOCKINGS[which][0]
    cs, bs = m16 * 16, kpad * 16
    for rb in range(0, m16, 16):
        for r in range(0, 16, mr):
            ao = (rb // 16) * kb * 16 * c0 + r * c0
            co = (s0 * m16 + rb + r) * 16
            rows = min(mr, 16 - r)
            if rows == 8 and ns == 2:
                _UK8_2(c, co, cs, a, ao, ash, bp, bo, bs, k, ini)
            elif rows == 8:
                _UK8_1(c, co, cs, a, ao, ash, bp, bo, bs, k, ini)
            elif rows == 6:
                _UK6(c, co, cs, a, ao, ash, bp, bo, bs, k, ini)
            elif rows == 4:
                _UK4(c, co, cs, a, ao, ash, bp, bo, bs, k, ini)
            else:
                _UK2(c, co, cs, a, ao, ash, bp, bo, bs, k, ini)


def _network(rows, cols, lanes):
    """The transpose of a row-major rows x cols block (powers of two, held in n / lanes vector
    registers of `lanes` elements) as stages of two-input shuffles: a list of stages, each a
    list of (a, b, mask) per output register (shuffle of the previous stage's registers a and b,
    mask lanes >= `lanes` taken from b). Element e sits at position p (register p // lanes, lane
    p % lanes); the transpose is a permutation of p's bits, and each stage swaps one register bit
    with a lane bit (a pair of registers exchanging half of their lanes), so log2(registers)
    stages at most; the last stage also puts the lanes in their final order."""
    n = rows * cols
    nreg = n // lanes
    lb, rb = lanes.bit_length() - 1, nreg.bit_length() - 1

    def dest(e):            # where element e ends: (r, c) -> (c, r)
        return (e % cols) * rows + e // cols
    target = [[0] * lanes for _ in range(nreg)]
    for e in range(n):
        target[dest(e) // lanes][dest(e) % lanes] = e
    layouts = [[[r * lanes + q for q in range(lanes)] for r in range(nreg)]]
    pos = list(range(n))                    # element -> current position
    for k in range(rb):
        pb = lb + k                         # register bit k: which lane bit must move there
        qb = next(b for b in range(lb + rb) if all(
            ((pos[e] >> b) & 1) == ((dest(e) >> pb) & 1) for e in range(n)))
        if qb == pb:
            continue
        for e in range(n):
            p = pos[e]
            x, y = (p >> pb) & 1, (p >> qb) & 1
            pos[e] = p & ~(1 << pb) & ~(1 << qb) | (y << pb) | (x << qb)
        lay = [[0] * lanes for _ in range(nreg)]
        for e in range(n):
            lay[pos[e] // lanes][pos[e] % lanes] = e
        layouts.append(lay)
    if len(layouts) == 1:
        layouts.append(target)
    else:                                   # same registers' contents, final lane order
        assert all(sorted(a) == sorted(b) for a, b in zip(layouts[-1], target))
        layouts[-1] = target
    stages = []
    for prev, lay in zip(layouts, layouts[1:]):
        where = {e: (r, q) for r, regs in enumerate(prev) for q, e in enumerate(regs)}
        ops = []
        for regs in lay:
            srcs = sorted({where[e][0] for e in regs})
            assert len(srcs) <= 2
            a, b = srcs[0], srcs[-1]
            ops.append((a, b, [where[e][1] + (lanes if where[e][0] != a else 0)
                               for e in regs]))
        stages.append(ops)
    return stages


def make_transpose(rows, cols):
    """Intrinsic tr(out, oo, b, bo): the row-major rows x cols block at b[bo:] transposed to
    cols x rows at out[oo:] (same element type; rows, cols powers of two). A block of 512 bits
    or more moves as 512-bit registers through a network of two-input shuffles (`_network`:
    log2(registers) stages, each one shuffle per register, which the CPU does as one
    two-source permute); smaller blocks as one vector load, one shuffle and one store. About
    1.3-3x faster than one shuffle of the whole block (which LLVM lowers to several permutes
    and blends per output register) and 3x faster than the element loop."""
    n = rows * cols
    mask = [(i % rows) * cols + i // rows for i in range(n)]

    @intrinsic
    def tr(typingctx, out, oo, b, bo):
        if not (isinstance(out, types.Array) and isinstance(b, types.Array)
                and out.dtype == b.dtype):
            return None
        sig = types.void(out, types.int64, b, types.int64)

        def codegen(context, builder, signature, args):
            ety = context.get_data_type(signature.args[0].dtype)
            op = builder.gep(_data_ptr(context, builder, signature.args[0], args[0]), [args[1]])
            bp = builder.gep(_data_ptr(context, builder, signature.args[2], args[2]), [args[3]])
            width = context.get_abi_sizeof(ety) * 8
            lanes = 512 // width if 512 % width == 0 else 0
            if lanes < 2 or n % lanes or n // lanes < 2:
                vty = ir.VectorType(ety, n)
                v = builder.load(builder.bitcast(bp, vty.as_pointer()), align=1)
                t = builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                           ir.Constant(ir.VectorType(ir.IntType(32), n), mask))
                builder.store(t, builder.bitcast(op, vty.as_pointer()), align=1)
                return context.get_dummy_value()
            vty = ir.VectorType(ety, lanes)
            regs = [builder.load(builder.bitcast(builder.gep(bp, [_I64(r * lanes)]),
                                                 vty.as_pointer()), align=1)
                    for r in range(n // lanes)]
            for ops in _network(rows, cols, lanes):
                regs = [builder.shuffle_vector(regs[a], regs[b2], ir.Constant(
                    ir.VectorType(ir.IntType(32), lanes), m)) for a, b2, m in ops]
            for r, v in enumerate(regs):
                builder.store(v, builder.bitcast(builder.gep(op, [_I64(r * lanes)]),
                                                 vty.as_pointer()), align=1)
            return context.get_dummy_value()
        return sig, codegen
    return tr


_TR8 = make_transpose(16, 8)      # f32 fractals (C0 = 8)
_TR16 = make_transpose(16, 16)    # f16/bf16 fractals converted to float32 (C0 = 16)


@prim
def pack_zn(b, nbn, kb, c0):
    """ZN float32 (fractal (kb, nb) = the 16(n) x C0(k) block of B^T, grid row-major over (kb,
    nbn)) -> one row-major (kb*C0) x 16 block per 16-column strip."""
    out = np.empty(nbn * kb * c0 * 16, np.float32)
    _pack_strips(out, b, 0, nbn, nbn, kb, c0)
    return out


@prim
def _pack_strips(out, b, s0, ns, nbn, kb, c0):
    """Strips s0 .. s0 + ns - 1 of ZN `b` (as pack_zn) into `out` from element 0."""
    kpad = kb * c0
    for f in range(kb):         # the source in memory order (reads of one K row of fractals
        for j in range(ns):     # 4 KiB apart, strip by strip, were 1.3x slower)
            src = (f * nbn + s0 + j) * 16 * c0
            dst = (j * kpad + f * c0) * 16
            if c0 == 8:
                _TR8(out, dst, b, src)
            else:
                _TR16(out, dst, b, src)


@prim
def gemm_zn(c, a, b, m16, n16, k, c0, kb, init):
    """`gemm_nz` with B as L0B holds it (ZN float32, kb fractal rows of n16/16 fractals): each
    group of the blocking's 16-column strips is repacked as `pack_zn` does, into a small buffer
    the row blocks then read while it is in the CPU's L1, instead of all of B into a fresh array
    first (the same products in the same order: bit-identical to pack_zn + gemm_nz)."""
    gemm_zn_blocked(c, a, b, m16, n16, k, c0, kb, init, HOST_BLOCKING)


@prim
def gemm_zn_blocked(c, a, b, m16, n16, k, c0, kb, init, which):
    """gemm_zn with the micro-kernel blocking BLOCKINGS[which]."""
    nr = BLOCKINGS[which][1]
    nbn = n16 // 16
    bp = np.empty(nr * kb * c0 * 16, np.float32)
    for s0 in range(0, nbn, nr):
        ns = min(nr, nbn - s0)
        _pack_strips(bp, b, s0, ns, nbn, kb, c0)
        _strips_gemm(c, a, bp, 0, s0, ns, m16, kb, c0, k, init, which)


def _make_copy(nbytes):
    """Intrinsic copy(t, do, s, so): `nbytes` bytes from element so of s to element do of t (the
    bits as they are; callers pass arrays of one element type, or of one width, where they
    take this path): one unaligned vector move."""
    @intrinsic
    def copy(typingctx, t, do, s, so):
        if not (isinstance(t, types.Array) and isinstance(s, types.Array)):
            return None
        sig = types.void(t, types.uint64, s, types.uint64)

        def codegen(context, builder, signature, args):
            vty = ir.VectorType(ir.IntType(8), nbytes).as_pointer()
            dp = builder.gep(_data_ptr(context, builder, signature.args[0], args[0]), [args[1]])
            sp = builder.gep(_data_ptr(context, builder, signature.args[2], args[2]), [args[3]])
            builder.store(builder.load(builder.bitcast(sp, vty), align=1),
                          builder.bitcast(dp, vty), align=1)
            return context.get_dummy_value()
        return sig, codegen
    return copy


# one C0 row of a fractal (Nd2Nz's 32-byte rows: 2x faster than the element loop); 64 bytes:
# an L0C row of 16 float32 / int32 (fixpipe without conversion), or two adjacent C0 rows
copy32 = _make_copy(32)
copy64 = _make_copy(64)


_V16H = ir.VectorType(ir.HalfType(), 16)


@intrinsic
def h2f16(typingctx, out, oo, u, uo):
    """out[oo:oo+16] (float32) = the float16 values whose bits are u[uo:uo+16] (uint16): one
    unaligned vector load and one fpext (exact: every float16 is a float32; NaNs keep their
    payload, a signalling NaN comes out quiet, as any arithmetic on it would make it)."""
    if not (isinstance(out, types.Array) and out.dtype == types.float32
            and isinstance(u, types.Array) and u.dtype == types.uint16):
        return None
    sig = types.void(out, types.int64, u, types.int64)

    def codegen(context, builder, signature, args):
        op = builder.gep(_data_ptr(context, builder, signature.args[0], args[0]), [args[1]])
        up = builder.gep(_data_ptr(context, builder, signature.args[2], args[2]), [args[3]])
        h = builder.load(builder.bitcast(up, _V16H.as_pointer()), align=2)
        builder.store(builder.fpext(h, _V16), builder.bitcast(op, _V16.as_pointer()), align=4)
        return context.get_dummy_value()
    return sig, codegen
