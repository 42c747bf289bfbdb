"""Ring attention: sequence-parallel FlashAttention over an `rt.hccl` communicator.

Rank r of n holds the r-th S-shard of Q, K and V ([B, N, S_local, D], BNSD). In step t it holds
the K/V shard of rank (r - t) mod n and runs `flash_attention_with_stats` of its Q against it;
meanwhile the K/V shard travels one rank further round the ring:

    compute stream:  FA(kv_0) merge | wait(recv_0) FA(kv_1) merge | wait(recv_1) FA(kv_2) ...
    comm stream:     send kv_0 -> r+1, recv kv_1 <- r-1 | wait(fa_0) send kv_1, recv kv_2 | ...

`kv_0` is the caller's k/v; later shards land in two receive buffers used in turn (the receive of
kv_{t+1} into a buffer waits for the FA that last read it, FA(kv_{t-1})), so the transfer of the
next shard overlaps the FA on the current one. Partial results merge with the online-softmax
rule on the statistics FA returns (m: row max of the scaled scores, l: row sum of exp(s - m), O
already divided by l):

    m' = max(m, m_t);  a = l e^(m - m');  b = l_t e^(m_t - m');  l' = a + b;
    O' = (a O + b O_t) / l'

done by `ring_merge_kernel` (kernel language, vector unit) in place in the step-0 result, on the
compute stream. Causal: shard i attends fully to shards j < i, causally to itself (step 0), not
at all to j > i: those steps skip FA and the merge but still pass the shards on.

Everything is enqueued (asynchronous, like FA with DeviceArrays): synchronise `stream` to read
the result. In one process every rank's call can be made from one thread (nothing blocks).
"""
from __future__ import annotations

import math
import threading
import weakref

import numpy as np

import ascendc as asc
import rt
from rt import hccl

from ._host import ceil_div
from .flash_attention import flash_attention_reference, flash_attention_with_stats

API = "ring_attention"
#: UB bytes the merge kernel's buffers may use (fits every SoC of rt.SOCS, 192 KiB UB on A2)
MERGE_UB_BUDGET = 160 * 1024


# ---- the merge kernel -------------------------------------------------------------------------

@asc.jit
def _scale_rows_into(dst, src, bc, w, r, d):
    """dst[i, :d] = src[i, :d] * w[i] for i < r (w broadcast to 32 B blocks by brcb)."""
    asc.brcb(bc, w, (r + 7) // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    for c in range(0, d, 64):
        asc.mul(dst[c:], src[c:], bc, min(64, d - c), r,
                asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=d // 8,
                                       src0_rep_stride=d // 8, src1_rep_stride=1))


@asc.jit
def ring_merge_kernel(acc_o: asc.GlobalAddress, acc_m: asc.GlobalAddress,
                      acc_l: asc.GlobalAddress, part_o: asc.GlobalAddress,
                      part_m: asc.GlobalAddress, part_l: asc.GlobalAddress, rows: int,
                      D: asc.ConstExpr[int], R: asc.ConstExpr[int], LOWP: asc.ConstExpr[bool]):
    """(acc_o, acc_m, acc_l) <- merge with (part_o, part_m, part_l), in place; o is rows x D in
    the input dtype (fp32 math; LOWP: 16-bit o cast in and out), m/l are rows of fp32. Tiles of
    R rows stride over the blocks."""
    pipe = asc.TPipe()
    sin = asc.TQue(asc.TPosition.VECIN, 1)      # m, l, m_t, l_t (R each)
    oin = asc.TQue(asc.TPosition.VECIN, 1)      # O, O_t (R x D each, input dtype)
    sout = asc.TQue(asc.TPosition.VECOUT, 1)    # m', l'
    oout = asc.TQue(asc.TPosition.VECOUT, 1)    # O'
    calc = asc.TBuf(asc.TPosition.VECCALC)
    isz = 4
    f32 = 0                                     # fp32 copies of O and O_t (LOWP only)
    if LOWP:
        isz = 2
        f32 = 2 * R * D
    pipe.init_buffer(sin, 1, 4 * R * 4)
    pipe.init_buffer(sout, 1, 2 * R * 4)
    pipe.init_buffer(oin, 1, 2 * R * D * isz)
    pipe.init_buffer(oout, 1, R * D * isz)
    pipe.init_buffer(calc, 2 * R * 4 + R * 8 * 4 + f32 * 4)
    wa = calc.get_with_offset(R, 0, asc.float32)
    wb = calc.get_with_offset(R, R * 4, asc.float32)
    bc = calc.get_with_offset(R * 8, 2 * R * 4, asc.float32)
    o32 = calc.get_with_offset(f32, (2 * R + R * 8) * 4, asc.float32)
    g_m = asc.GlobalTensor()
    g_m.set_global_buffer(acc_m, rows)
    g_l = asc.GlobalTensor()
    g_l.set_global_buffer(acc_l, rows)
    g_pm = asc.GlobalTensor()
    g_pm.set_global_buffer(part_m, rows)
    g_pl = asc.GlobalTensor()
    g_pl.set_global_buffer(part_l, rows)
    g_o = asc.GlobalTensor()
    g_o.set_global_buffer(acc_o, rows * D)
    g_po = asc.GlobalTensor()
    g_po.set_global_buffer(part_o, rows * D)
    for t in range(asc.get_block_idx(), (rows + R - 1) // R, asc.get_block_num()):
        r0 = t * R
        r = min(R, rows - r0)
        # CopyIn
        st = sin.alloc_tensor(asc.float32)
        p = asc.DataCopyExtParams(block_count=1, block_len=r * 4)
        asc.data_copy_pad(st, g_m[r0:], p)
        asc.data_copy_pad(st[R:], g_l[r0:], p)
        asc.data_copy_pad(st[2 * R:], g_pm[r0:], p)
        asc.data_copy_pad(st[3 * R:], g_pl[r0:], p)
        sin.enque(st)
        ot = oin.alloc_tensor(acc_o.dtype)
        asc.data_copy(ot, g_o[r0 * D:], r * D)
        asc.data_copy(ot[R * D:], g_po[r0 * D:], r * D)
        oin.enque(ot)
        # the weights a / l' and b / l' of O and O_t per row; m' and l' to the output
        st = sin.deque(asc.float32)
        so = sout.alloc_tensor(asc.float32)
        asc.max(so, st, st[2 * R:], r)                  # m'
        asc.sub(wa, st, so, r)
        asc.exp(wa, wa, r)
        asc.mul(wa, wa, st[R:], r)                      # a = l e^(m - m')
        asc.sub(wb, st[2 * R:], so, r)
        asc.exp(wb, wb, r)
        asc.mul(wb, wb, st[3 * R:], r)                  # b = l_t e^(m_t - m')
        asc.add(so[R:], wa, wb, r)                      # l'
        asc.div(wa, wa, so[R:], r)
        asc.div(wb, wb, so[R:], r)
        sin.free_tensor(st)
        sout.enque(so)
        # O' = O wa + O_t wb
        ot = oin.deque(acc_o.dtype)
        oo = oout.alloc_tensor(acc_o.dtype)
        if LOWP:
            asc.cast(o32, ot, asc.RoundMode.CAST_NONE, r * D)       # the r rows copied in
            asc.cast(o32[R * D:], ot[R * D:], asc.RoundMode.CAST_NONE, r * D)
            _scale_rows_into(o32, o32, bc, wa, r, D)
            _scale_rows_into(o32[R * D:], o32[R * D:], bc, wb, r, D)
            asc.add(o32, o32, o32[R * D:], r * D)
            asc.cast(oo, o32, asc.RoundMode.CAST_RINT, r * D)
        else:
            _scale_rows_into(oo, ot, bc, wa, r, D)
            _scale_rows_into(ot[R * D:], ot[R * D:], bc, wb, r, D)
            asc.add(oo, oo, ot[R * D:], r * D)
        oin.free_tensor(ot)
        oout.enque(oo)
        # CopyOut
        so = sout.deque(asc.float32)
        asc.data_copy_pad(g_m[r0:], so, p)
        asc.data_copy_pad(g_l[r0:], so[R:], p)
        sout.free_tensor(so)
        oo = oout.deque(acc_o.dtype)
        asc.data_copy(g_o[r0 * D:], oo, r * D)
        oout.free_tensor(oo)


def merge_rows(d: int, itemsize: int) -> int:
    """Rows per tile of the merge kernel: a multiple of 8 (32 B of fp32 stats), <= 64 (the
    vector repeat count), within MERGE_UB_BUDGET."""
    per_row = 4 * 4 + 2 * 4 + 3 * d * itemsize + 2 * 4 + 8 * 4 + (2 * d * 4 if itemsize < 4 else 0)
    return max(8, min(64, MERGE_UB_BUDGET // per_row // 8 * 8))


def ring_merge(acc, part, *, stream=None, **launch_options) -> None:
    """Merge FA result `part` = (o, softmax_max, softmax_sum) into `acc` (same, DeviceArrays) in
    place with `ring_merge_kernel`, enqueued on `stream`."""
    o, m, _ = acc
    B, N, S, D = o.shape
    rows = B * N * S
    R = merge_rows(D, o.dtype.itemsize)
    block_dim = max(1, min(ceil_div(rows, R), rt.get_soc().ai_core_num))
    launch = ring_merge_kernel[block_dim, stream] if stream is not None \
        else ring_merge_kernel[block_dim]
    launch(*acc, *part, rows, D, R, o.dtype.itemsize < 4, **launch_options)


def ring_merge_reference(acc, part):
    """numpy (float64) merge of two (o, softmax_max, softmax_sum) triples; returns the merged."""
    (o, m, s), (ot, mt, st) = [[np.asarray(x, np.float64) for x in y] for y in (acc, part)]
    mn = np.maximum(m, mt)
    a, b = s * np.exp(m - mn), st * np.exp(mt - mn)
    ln = a + b
    return (o * (a / ln)[..., None] + ot * (b / ln)[..., None]), mn, ln


# ---- the ring ---------------------------------------------------------------------------------

_comm_streams: "weakref.WeakKeyDictionary[rt.Stream, rt.Stream]" = weakref.WeakKeyDictionary()
_comm_streams_lock = threading.Lock()      # ranks may call from their own threads


def comm_stream_for(stream: rt.Stream) -> rt.Stream:
    """The communication stream paired with compute stream `stream` (created on first use, on
    `stream`'s device, kept as long as `stream` lives)."""
    with _comm_streams_lock:
        s = _comm_streams.get(stream)
        if s is None:
            prev = _current_device()
            rt.set_device(stream.device)
            try:
                s = _comm_streams[stream] = rt.Stream()
            finally:
                if prev is not None:
                    rt.set_device(prev)
        return s


def _current_device():
    """This thread's current device, or None if it has none yet."""
    try:
        return rt.current_device()
    except rt.AclError:
        return None


def _check(q, k, v, comm, stream):
    if not isinstance(comm, hccl.Comm):
        raise TypeError(f"{API}: comm must be an rt.hccl.Comm, got comm={comm!r}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, rt.DeviceArray):
            raise TypeError(f"{API}: {name} must be an rt.DeviceArray (device memory of the "
                            f"comm's device), got {name}={type(x).__name__}")
        if x.ndim != 4 or min(x.shape) < 1:
            raise ValueError(f"{API}: {name} must be 4-D [B, N, S_local, D] with sizes >= 1, "
                             f"got {name}.shape={x.shape}")
        if x.device != comm.device:
            raise ValueError(f"{API}: {name} must be on the comm's device {comm.device}, got "
                             f"{name}.device={x.device}")
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"{API}: k and v must have q's shape {q.shape}, got k.shape={k.shape}, "
                         f"v.shape={v.shape}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"{API}: q, k and v must share a dtype, got dtypes={q.dtype}, "
                         f"{k.dtype}, {v.dtype}")
    if stream is not None and (not isinstance(stream, rt.Stream) or
                               stream.device != comm.device):
        raise ValueError(f"{API}: stream must be None or an rt.Stream of the comm's device "
                         f"{comm.device}, got stream={stream!r}")


def ring_attention(q, k, v, *, comm, stream=None, causal=False, scale=None, tiling=None,
                   **launch_options):
    """Sequence-parallel FlashAttention: this rank's output shard [B, N, S_local, D] (a
    DeviceArray, ready once `stream` has run; see the module doc). q, k, v: this rank's S-shard
    (the `comm.rank`-th of `comm.size` equal shards, BNSD DeviceArrays on the comm's device).
    `scale` defaults to 1/sqrt(D); `tiling` and `launch_options` (e.g. interpret=True) go to the
    FA and merge launches. Every rank must call it with the same shapes and arguments."""
    _check(q, k, v, comm, stream)
    prev = _current_device()
    rt.set_device(comm.device)
    try:
        return _ring(q, k, v, comm, stream or rt.current_stream(), causal, scale, tiling,
                     launch_options)
    finally:
        if prev is not None:
            rt.set_device(prev)


def _ring(q, k, v, comm, stream, causal, scale, tiling, launch_options):
    n, r = comm.rank_size(), comm.rank_id()
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)

    def fa(kk, vv, is_causal):
        return flash_attention_with_stats(q, kk, vv, scale=scale, causal=is_causal,
                                          stream=stream, tiling=tiling, **launch_options)

    if n == 1:
        return fa(k, v, causal)[0]
    cs = comm_stream_for(stream)
    ready = rt.Event()                       # q, k, v as the caller's stream produces them
    ready.record(stream)
    cs.wait_event(ready)
    bufs = [(rt.device_empty(k.shape, k.dtype), rt.device_empty(v.shape, v.dtype))
            for _ in range(2)]
    kv = (k, v)
    nxt, prv = (r + 1) % n, (r - 1) % n
    acc, read = None, None
    for t in range(n):
        src = (r - t) % n                    # the rank whose K/V shard this step holds
        if t < n - 1:                        # pass kv on, receive the next shard
            dst = bufs[t % 2]
            if t >= 2:                       # dst was read by the FA of step t - 1
                cs.wait_event(read)
            comm.batch_send_recv([(0, kv[0], kv[0].size, kv[0].dtype, nxt),
                                  (0, kv[1], kv[1].size, kv[1].dtype, nxt),
                                  (1, dst[0], dst[0].size, dst[0].dtype, prv),
                                  (1, dst[1], dst[1].size, dst[1].dtype, prv)], stream=cs)
            got = rt.Event()
            got.record(cs)
        if causal and src > r:
            part = None                      # a later shard: fully masked, nothing to do
        else:
            part = fa(kv[0], kv[1], causal and src == r)
        read = rt.Event()
        read.record(stream)
        if part is not None:
            if acc is None:
                acc = part                   # step 0 (own shard) is always computed
            else:
                ring_merge(acc, part, stream=stream, **launch_options)
        if t < n - 1:
            stream.wait_event(got)           # the next step's shard has arrived
            kv = bufs[t % 2]
    return acc[0]


def ring_attention_reference(q, k, v, *, causal=False, scale=None):
    """numpy (float64) reference of the full attention over the S-concatenated shards (lists of
    host arrays, one per rank, BNSD): the per-rank output shards."""
    qq, kk, vv = (np.concatenate([np.asarray(x) for x in xs], axis=2) for xs in (q, k, v))
    o = flash_attention_reference(qq, kk, vv, causal=causal, scale=scale)[0]
    bounds = np.cumsum([0] + [x.shape[2] for x in q])
    return [o[:, :, a:b] for a, b in zip(bounds[:-1], bounds[1:])]
