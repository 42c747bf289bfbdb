"""Our kernels vs Triton kernels run by Triton's CPU interpreter (TRITON_INTERPRET=1), same data.

    pip install -e '.[triton]'
    python -m bench.triton_peers                          # add 1M fp32, FA B1 N2 S256 D64 fp32
    python -m bench.triton_peers --n 4194304 --seq 512 --causal --repeats 3

Peers: the vector add of Triton's tutorial 01 (`add_kernel`, BLOCK_SIZE 1024) and a FlashAttention
forward with the structure of Triton's tutorial 06 (one program per (batch*head, BLOCK_M query
block), a loop over BLOCK_N key blocks, online softmax with a running max and sum in base 2,
optional causal mask), both executed by Triton's interpreter, which runs the programs one after
another in Python with numpy. Both Triton results are checked against numpy first so the ratio
compares correct outputs. Repeats alternate ours / Triton (other load hits both alike). The
ratio column is Triton time / our time (>1: ours is faster).

The interpreter is switched on only in this process, lazily: importing this module does not
import triton; the first call that needs it sets os.environ["TRITON_INTERPRET"] = "1" and then
imports triton (Triton reads the variable when a kernel is decorated).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from bench._timing import interleaved_medians

_TRITON = None  # (triton, tl, kernels namespace) once loaded


def triton_available() -> bool:
    """True if triton (and torch, which its interpreter takes tensors of) import. Never raises."""
    try:
        _load()
        return True
    except BaseException:  # noqa: BLE001 - an availability probe must not raise
        return False


def _load():
    """Import triton with the interpreter enabled and define the kernels (once)."""
    global _TRITON
    if _TRITON is not None:
        return _TRITON
    os.environ["TRITON_INTERPRET"] = "1"
    import torch  # noqa: F401  (the interpreter's tensors)
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        # Triton tutorial 01 (vector addition).
        pid = tl.program_id(axis=0)
        block_start = pid * BLOCK_SIZE
        offsets = block_start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(output_ptr + offsets, x + y, mask=mask)

    @triton.jit
    def attn_fwd_kernel(Q, K, V, Out, sm_scale, seq_len,
                        stride_h, stride_s,  # (B*N, S, D) contiguous: head, row strides
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        CAUSAL: tl.constexpr):
        # Tutorial-06-shaped forward: grid (cdiv(S, BLOCK_M), B*N).
        start_m = tl.program_id(0)
        off_bh = tl.program_id(1)
        base = off_bh * stride_h
        rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols0 = tl.arange(0, BLOCK_N)
        dims = tl.arange(0, HEAD_DIM)
        row_ok = rows < seq_len
        q = tl.load(Q + base + rows[:, None] * stride_s + dims[None, :],
                    mask=row_ok[:, None], other=0.0)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
        if CAUSAL:
            hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len)  # later key blocks fully masked
        else:
            hi = seq_len
        for start_n in range(0, hi, BLOCK_N):
            cols = start_n + cols0
            col_ok = cols < seq_len
            kt = tl.load(K + base + cols[None, :] * stride_s + dims[:, None],
                         mask=col_ok[None, :], other=0.0)  # K^T block, (HEAD_DIM, BLOCK_N)
            qk = tl.dot(q, kt) * qk_scale
            keep = col_ok[None, :]
            if CAUSAL:
                keep = keep & (rows[:, None] >= cols[None, :])
            qk = tl.where(keep, qk, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(V + base + cols[:, None] * stride_s + dims[None, :],
                        mask=col_ok[:, None], other=0.0)
            acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
            m_i = m_new
        acc = acc / l_i[:, None]
        tl.store(Out + base + rows[:, None] * stride_s + dims[None, :],
                 acc.to(Out.dtype.element_ty), mask=row_ok[:, None])

    class K:
        pass
    K.add_kernel, K.attn_fwd_kernel = add_kernel, attn_fwd_kernel
    _TRITON = (triton, tl, K)
    return _TRITON


def triton_add(x: np.ndarray, y: np.ndarray, block_size: int = 1024) -> np.ndarray:
    """x + y by the tutorial's add_kernel under Triton's interpreter (numpy in, numpy out)."""
    import torch
    triton, _, K = _load()
    tx = torch.from_numpy(np.ascontiguousarray(x).reshape(-1))
    ty = torch.from_numpy(np.ascontiguousarray(y).reshape(-1))
    out = torch.empty_like(tx)
    n = tx.numel()
    K.add_kernel[(triton.cdiv(n, block_size),)](tx, ty, out, n, BLOCK_SIZE=block_size)
    return out.numpy().reshape(np.shape(x))


def triton_flash_attention(q, k, v, *, causal=False, scale=None, block_m=64, block_n=64):
    """softmax(scale Q K^T [causal]) V for BNSD numpy arrays (same shape for q, k, v; D a power
    of two >= 16) by the tutorial-06-shaped kernel under Triton's interpreter."""
    import torch
    triton, _, K = _load()
    b, n, s, d = q.shape
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"triton_flash_attention: q, k, v must share a BNSD shape, got "
                         f"{q.shape}, {k.shape}, {v.shape}")
    tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(a).reshape(b * n, s, d)) for a in (q, k, v))
    out = torch.empty_like(tq)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    grid = (triton.cdiv(s, block_m), b * n)
    K.attn_fwd_kernel[grid](tq, tk, tv, out, scale, s, tq.stride(0), tq.stride(1),
                            HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal))
    return out.numpy().reshape(b, n, s, d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1 << 20, help="add: elements (fp32)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--block-m", type=int, default=64, help="Triton FA BLOCK_M")
    ap.add_argument("--block-n", type=int, default=64, help="Triton FA BLOCK_N")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip", default="", help="comma list of cases to skip: add,fa")
    a = ap.parse_args(argv)

    if not triton_available():
        print("triton not installed (or its interpreter cannot be imported): skipping the "
              "Triton-interpreter peers. Install with: pip install -e '.[triton]'")
        return 0
    import triton
    from kernels.add import add
    from kernels.flash_attention import flash_attention, flash_attention_reference
    from kernels.tolerances import tolerance

    skip = set(filter(None, a.skip.split(",")))
    rng = np.random.default_rng(0)
    rows = []  # (case, variant, seconds, ratio-or-None)
    print(f"triton {triton.__version__}, TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, median of "
          f"{a.repeats} (interleaved)")

    if "add" not in skip:
        x = rng.random(a.n, dtype=np.float32)
        y = rng.random(a.n, dtype=np.float32)
        ref = x + y
        t = time.perf_counter()
        z = add(x, y)  # first call: Numba compile or disk-cache load
        first = time.perf_counter() - t
        np.testing.assert_array_equal(z, ref)
        zt = triton_add(x, y)
        np.testing.assert_array_equal(zt, ref)
        print(f"add n={a.n} fp32: both exact vs numpy; our first call {first:.2f} s")
        t_ours, t_tri = interleaved_medians([lambda: add(x, y), lambda: triton_add(x, y)],
                                            a.repeats, warmup=0)
        rows += [("add", "kernels.add.add (numpy in/out)", t_ours, None),
                 ("add", "Triton add_kernel, interpreter", t_tri, t_tri / t_ours)]

    if "fa" not in skip:
        shape = (a.batch, a.heads, a.seq, a.head_dim)
        q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
        ref = flash_attention_reference(q, k, v, causal=a.causal)[0]
        tol = tolerance(np.float32)
        t = time.perf_counter()
        o = flash_attention(q, k, v, layout="BNSD", causal=a.causal)
        first = time.perf_counter() - t
        ot = triton_flash_attention(q, k, v, causal=a.causal, block_m=a.block_m,
                                    block_n=a.block_n)
        err_ours = float(np.max(np.abs(o - ref)))
        err_tri = float(np.max(np.abs(ot - ref)))
        np.testing.assert_allclose(o, ref, rtol=tol[0], atol=tol[1])
        np.testing.assert_allclose(ot, ref, rtol=tol[0], atol=tol[1])
        print(f"FA BNSD {shape} fp32 causal={a.causal}: max |err| vs float64 numpy: ours "
              f"{err_ours:.2e}, Triton {err_tri:.2e} (rtol, atol {tol}); our first call "
              f"{first:.2f} s")
        t_ours, t_tri = interleaved_medians(
            [lambda: flash_attention(q, k, v, layout="BNSD", causal=a.causal),
             lambda: triton_flash_attention(q, k, v, causal=a.causal, block_m=a.block_m,
                                            block_n=a.block_n)], a.repeats, warmup=0)
        rows += [("fa", "kernels.flash_attention (numpy in/out)", t_ours, None),
                 ("fa", f"Triton FA fwd {a.block_m}x{a.block_n}, interpreter", t_tri,
                  t_tri / t_ours)]

    print(f"{'variant':<42}{'median ms':>12}{'Triton/ours':>13}")
    for _, name, tm, ratio in rows:
        r = f"{ratio:.1f}x" if ratio is not None else ""
        print(f"{name:<42}{tm * 1e3:>12.2f}{r:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
