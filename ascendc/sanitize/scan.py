"""The compiled side of the per-block analysis (analysis.BlockPass): `block_pass` runs a block's
trace rows in issue order, keeps the per-byte shadow state, the pipes' vector clocks and the
flag queues, and writes what it found as numbers (findings, GM accesses, synchronising points)
that analysis.py turns into reports; the byte scans stop at the first hazard.

It releases the GIL: the other cores of a sanitized launch run their kernels while a finished
block is analysed. analysis.py's docstring says what is kept and why; the numbers here:
- lanes 0..6 are analysis.LANES (0 the scalar unit); `lanes[i]` (analysis._row_lanes) is the
  lane that runs row i: a K_OP row's pipe, a set's source / a wait's destination pipe, a queue
  step's sending / receiving pipe (-1: a position no pipe pair is known for), a barrier's pipe
  (-2: PIPE_ALL, -1: none);
- a lane's clock has a column per lane (the time of that lane's ops it has seen: column 0,
  the scalar unit's issue order, which every later op follows) and one more, SMEM: the time of
  the scalar unit's element writes (set_value) the lane has seen; only a flag from the scalar
  unit (S_V, S_MTE3, S_MTE2, ...), PIPE_ALL or sync_all carries it, as on the NPU an element
  the scalar unit wrote reaches the other pipes only then, though they issue after it. A
  scalar read (get_value) is done when the scalar unit goes on (its value is in a register),
  so no later write of another pipe can land before it: no Write3 has it as the read;
- `state` (int64): [0] the shadow's racecheck arrays were written since their last reset;
- findings: rows of F_* codes and operands (F_COLS), in the order the rows raised them.
"""
from __future__ import annotations

import numpy as np

from ..lang import trace as T
from ..lang.numba_link import cached_njit

NL = 7                      # lanes
SMEM = NL                   # clock column of the scalar unit's local accesses (module docstring)
NC = NL + 1                 # clock columns
REACH = 8                   # w_pipe of a write recorded by its reach: its pipe + 8
PAGE = 9                    # racecheck's filter pages (and the shadow's reset unit): 512 bytes
NEVER = np.iinfo(np.int32).max
DMA_MASK = (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6)    # MTE1, MTE2, MTE3, FIXPIPE: Sync1's
REGION_FREE, REGION_ALLOC = T.REGION_FREE, T.REGION_ALLOC

# findings: (code, row, at, lo, other line, a, b, c)
(F_FREED,       # Read1 / Write1: a = write, b = bytes; other = the free's line
 F_UNINIT,      # Read2: b = bytes; other = the allocation's line
 F_SYNC1,       # a = write, c = pipe; other = the earlier copy's line
 F_SYNC2,       # a = write, b = the writer's pipe, c = pipe; other = the write's line
 F_WRITE3,      # b = the reader's pipe, c = pipe; other = the read's line
 F_SYNC4,       # a = event, b = event id; other = the line of the set still pending
 F_SYNC3,       # a = event, b = event id; row -1, other = the set's line
 ) = range(7)
F_COLS = 8
# points (synchronising calls, for gmrace): (kind, key a, key b, lane, line, clock[7])
# (P2P: a served Matmul's messages (adv/kfc.py): paired by construction, so not synccheck's;
# they order GM as a flag does, key a = the slot they name: gmrace.py)
P_SET, P_WAIT, P_IB_SET, P_IB_WAIT, P_SYNC_ALL, P_P2P_SET, P_P2P_WAIT = range(7)
P_COLS = 5 + NL
# GM accesses: (lo, hi, write, lane, line, block, step, clock[7])
G_COLS = 7 + NL
_P2P = 3            # rt.npu.xcore.P2P: a served Matmul's messages (paired by construction)


def shadow_arrays(size: int) -> tuple:
    """Per-byte state of a core's local memory of `size` bytes (reused across blocks: the pass
    resets the pages it touched at its next start)."""
    pages = (size >> PAGE) + 1
    return (np.zeros(size, np.uint8),            # written since allocation
            np.zeros(size, np.uint8),            # freed (free_tensor) and not allocated again
            np.zeros(size, np.int32),            # line of the allocation (or free)
            np.full(size, -1, np.int8),          # last writer's pipe (+ REACH: a reach)
            np.zeros(size, np.int32),            # ... its time
            np.zeros(size, np.int32),            # ... its line
            np.zeros((NL, size), np.int32),      # per pipe: time of its last read
            np.zeros((NL, size), np.int32),      # ... its line
            np.zeros(pages, np.uint8),           # pages touched by the last pass
            np.zeros(1, np.int64))               # state (module docstring)


@cached_njit(nogil=True)
def _reset(sh_written, sh_freed, sh_rline, w_pipe, w_time, r_time, dirty, state):
    size = sh_written.shape[0]
    for pg in range(dirty.shape[0]):
        if dirty[pg]:
            dirty[pg] = 0
            lo = pg << PAGE
            hi = min(lo + (1 << PAGE), size)
            sh_written[lo:hi] = 0
            sh_freed[lo:hi] = 0
            sh_rline[lo:hi] = 0
            if state[0]:
                w_pipe[lo:hi] = -1
                w_time[lo:hi] = 0
                r_time[:, lo:hi] = 0
    state[0] = 0


@cached_njit(nogil=True)
def _key(keys, nkeys, a, b, c, d, add):
    """Index of key (a, b, c, d) in keys[:nkeys[0]] (add: appended when new), or -1."""
    for i in range(nkeys[0]):
        if keys[i, 0] == a and keys[i, 1] == b and keys[i, 2] == c and keys[i, 3] == d:
            return i
    if not add:
        return -1
    i = nkeys[0]
    keys[i, 0], keys[i, 1], keys[i, 2], keys[i, 3] = a, b, c, d
    nkeys[0] = i + 1
    return i


@cached_njit(nogil=True)
def _emit(found, nf, code, row, at, lo, other, a, b, c):
    """Finding row nf (module docstring: F_*); returns nf + 1."""
    found[nf, 0], found[nf, 1], found[nf, 2], found[nf, 3] = code, row, at, lo
    found[nf, 4], found[nf, 5], found[nf, 6], found[nf, 7] = other, a, b, c
    return nf + 1


@cached_njit(nogil=True)
def _page_max(pages, q, pa, pb):
    m = pages[q, pa]
    for j in range(pa + 1, pb):
        if pages[q, j] > m:
            m = pages[q, j]
    return m


_HT = 8192                  # slots of the pending ranges' hash table (> 1.5 x PEND)
PEND = 4096                 # accesses kept as ranges before the per-byte state is written


@cached_njit(nogil=True)
def _pend_add(pend, npend, ht, write, lo, hi, code, t, line):
    """Keep an access as a range (pend row: write 1 / read 0 / -1 dropped, lo, hi, pipe code,
    time, line, hash slot). An earlier pending access of the same bytes and kind (any write;
    a read of the same pipe) is dropped: every byte it would set, this one sets later."""
    fam = -1 if write else code
    h = ((lo * 0x9E3779B1) ^ (hi * 0x85EBCA77) ^ (fam + 1)) & (_HT - 1)
    k = npend[0]
    while ht[h] != 0:
        j = ht[h] - 1
        if pend[j, 1] == lo and pend[j, 2] == hi and (
                (write and pend[j, 0] == 1) or (not write and pend[j, 0] == 0 and
                                                pend[j, 3] == code)):
            pend[j, 0] = -1
            break
        h = (h + 1) & (_HT - 1)
    ht[h] = k + 1
    pend[k, 0], pend[k, 1], pend[k, 2], pend[k, 3] = (1 if write else 0), lo, hi, code
    pend[k, 4], pend[k, 5], pend[k, 6] = t, line, h
    npend[0] = k + 1


@cached_njit(nogil=True)
def _flush(pend, npend, ht, w_pipe, w_time, w_line, r_time, r_line, state):
    """Bring the per-byte racecheck state up to date with the accesses kept as ranges (in a
    clean kernel the page filters leave nearly every access without a byte scan)."""
    if npend[0]:
        state[0] = 1
    for i in range(npend[0]):
        ht[pend[i, 6]] = 0
        if pend[i, 0] < 0:
            continue
        lo, hi, code, t, line = pend[i, 1], pend[i, 2], pend[i, 3], pend[i, 4], pend[i, 5]
        if pend[i, 0]:
            w_pipe[lo:hi] = code
            w_time[lo:hi] = t
            w_line[lo:hi] = line
        else:
            r_time[code, lo:hi] = t
            r_line[code, lo:hi] = line
    npend[0] = 0


@cached_njit(nogil=True)
def _push(head, tail, nxt, k, idx):
    """Append entry idx to FIFO k (linked through nxt; head/tail -1 when empty)."""
    nxt[idx] = -1
    if tail[k] >= 0:
        nxt[tail[k]] = idx
    else:
        head[k] = idx
    tail[k] = idx


@cached_njit(nogil=True)
def _pop(head, tail, nxt, k):
    """Take the oldest entry of the non-empty FIFO k; returns its index."""
    s = head[k]
    head[k] = nxt[s]
    if head[k] < 0:
        tail[k] = -1
    return s


# a pass's counters, in one array the row handlers update in place
(V_NF, V_NG, V_NPT, V_NSNAP, V_NPL, V_NFR, V_EPOCH) = range(7)


@cached_njit(nogil=True)
def block_pass(rows, lanes, tools, ev_lanes, sh_written, sh_freed, sh_rline, w_pipe, w_time,
               w_line, r_time, r_line, dirty, state, ops, found, gm, pts, counts):
    """One block's rows (module docstring). tools: memcheck, racecheck, initcheck, synccheck
    (0/1 each); ev_lanes[event] = (source lane, destination lane); ops: the op ids of
    cross_core_set_flag, cross_core_wait_flag, ib_set, ib_wait, LocalTensor.get_value and
    LocalTensor.set_value. Writes `found`, `gm`, `pts` and counts = [findings, GM accesses,
    points]."""
    _reset(sh_written, sh_freed, sh_rline, w_pipe, w_time, r_time, dirty, state)
    n = rows.shape[0]
    sh = (sh_written, sh_freed, sh_rline, w_pipe, w_time, w_line, r_time, r_line, dirty, state)
    ck = _clocks((sh_written.shape[0] >> PAGE) + 1)
    clk, done, w_max, r_max, w_page, r_page, table = ck
    # flag queues: keys (0, src, dst, id) events, (1, qid) enque -> deque, (2, qid, slot)
    # free_tensor -> alloc_tensor; each a FIFO of clock snapshots (linked through nxt)
    fq = (np.empty((n + 1, 4), np.int64), np.zeros(1, np.int64), np.full(n + 1, -1, np.int64),
          np.full(n + 1, -1, np.int64), np.empty((n + 1, NC), np.int64),
          np.full(n + 1, -1, np.int64))
    # set_flags not yet waited for, per (event, id) in the order first set: FIFOs of lines
    ps = (np.empty((n + 1, 4), np.int64), np.zeros(1, np.int64), np.full(n + 1, -1, np.int64),
          np.full(n + 1, -1, np.int64), np.empty(n + 1, np.int64),
          np.full(n + 1, -1, np.int64))
    fr_lo, fr_hi = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)   # freed, not since
    fr = (fr_lo, fr_hi)                                                    # allocated again
    pend, npend, ht = (np.empty((PEND + 1, 7), np.int64), np.zeros(1, np.int64),
                       np.zeros(_HT, np.int64))
    v = np.zeros(7, np.int64)
    size = sh_written.shape[0]
    pipe = judge = 0        # the lane of the last K_OP row; racecheck judges its accesses
    for i in range(n):
        kind = rows[i, T.C_KIND]
        if kind == T.K_ACCESS and rows[i, T.C_DST_LV] < 0:
            if tools[1]:
                _gm_access(rows, i, gm, clk, v, pipe)
        elif kind == T.K_ACCESS:        # a local access (the hot path: no helper's arrays)
            write = rows[i, T.C_ID] != 0
            lo = rows[i, T.C_A]
            hi = min(lo + rows[i, T.C_BYTES], size)
            if hi > lo:
                for pg in range(lo >> PAGE, ((hi - 1) >> PAGE) + 1):
                    dirty[pg] = 1
            if tools[0] and v[V_NFR]:
                _freed_check(rows, i, lo, hi, fr_lo, fr_hi, sh_freed, sh_rline, found, v)
            if not write and tools[2] and rows[i, T.C_M] >= 0:
                c = lo + rows[i, T.C_M]
                for x in range(c, min(c + 32, size)):
                    if not sh_written[x]:
                        v[V_NF] = _emit(found, v[V_NF], F_UNINIT, i, c, lo, sh_rline[c], 0,
                                        rows[i, T.C_BYTES], 0)
                        break
            if judge and tools[1] and hi > lo:
                p = pipe
                now = clk[p, p]
                reach = rows[i, T.C_N] != 0
                pa, pb = lo >> PAGE, ((hi - 1) >> PAGE) + 1
                # Sync1: the pipe's own earlier copies, the pipe not known drained since
                if ((DMA_MASK >> p) & 1 and not reach and done[p] < min(now - 1, w_max[p])
                        and _page_max(w_page, p, pa, pb) > done[p]):
                    _sync1_scan(i, write, lo, hi, p, done[p], now, w_pipe, w_time, w_line,
                                r_time, r_line, state, pend, npend, ht, found, v)
                # Sync2 / Write3: another pipe's writes / reads this one has not seen (the
                # page filters; a page they flag gets the exact scan)
                for q in range(NL):
                    seen = clk[p, SMEM] if q == 0 else clk[p, q]
                    if q != p and w_max[q] > seen and _page_max(w_page, q, pa, pb) > seen:
                        _sync2_scan(rows, i, write, lo, hi, p, w_pipe, w_time, w_line, r_time,
                                    r_line, state, clk, table, pend, npend, ht, found, v)
                        break
                line = rows[i, T.C_LINE]
                if write:       # (a scalar read is done before the next op issues)
                    for q in range(1, NL):
                        seen = clk[p, q]
                        if q != p and r_max[q] > seen and _page_max(r_page, q, pa, pb) > seen:
                            _write3_scan(i, lo, hi, p, q, seen, w_pipe, w_time, w_line, r_time,
                                         r_line, state, pend, npend, ht, found, v)
                    w_max[p] = now
                    w_page[p, pa:pb] = now
                    _pend_add(pend, npend, ht, True, lo, hi, p + REACH if reach else p, now,
                              line)
                elif p != 0:
                    _pend_add(pend, npend, ht, False, lo, hi, p, now, line)
                    r_max[p] = now
                    r_page[p, pa:pb] = now
                if npend[0] >= PEND:
                    _flush(pend, npend, ht, w_pipe, w_time, w_line, r_time, r_line, state)
            if write and hi > lo:
                sh_written[lo:hi] = 1
        elif kind == T.K_OP:
            pipe = lanes[i]
            op = rows[i, T.C_OP]
            clk[pipe, pipe] += 1
            # the scalar unit issues in order: an op issued after a scalar op runs after it
            clk[pipe, 0] = clk[0, 0]
            # the scalar unit's element accesses are judged (SMEM), its other ops' are not
            judge = pipe != 0 or op == ops[4] or op == ops[5]
            if pipe == 0 and judge:
                clk[0, SMEM] = clk[0, 0]
            if op == ops[0] or op == ops[1] or op == ops[2] or op == ops[3]:
                _cross_point(rows, i, pipe, op, clk, done, pts, v, ops)
        elif kind == T.K_REGION:
            _region_row(rows, i, sh, fr, v)
        elif kind == T.K_SET or kind == T.K_WAIT or (kind >= T.K_Q_ALLOC and
                                                     kind <= T.K_Q_FREE):
            if lanes[i] >= 0:
                _flag_row(rows, i, kind, lanes[i], tools[3] != 0, ev_lanes, ck, fq, ps, found, v)
        elif kind == T.K_BARRIER:
            lane = lanes[i]
            if lane == -2:
                _join_all(clk, done)
            elif lane >= 0:     # its own pipe only (as checked mode): the pipe has drained
                done[lane] = clk[lane, lane]
        elif kind == T.K_SYNC_ALL:
            _sync_all_row(rows, i, ck, pts, v)
            pipe = judge = 0
    if tools[3]:
        _unwaited(ps, found, v)
    counts[0], counts[1], counts[2] = v[V_NF], v[V_NG], v[V_NPT]


@cached_njit(nogil=True, inline="always")
def _clocks(pages):
    """Per lane: its vector clock (clk[p, q]: the time of q's ops p has seen; column SMEM), the
    time up to which its ops are known complete (`done`), its latest write and read and their
    times per page (racecheck's filters); a scratch table of first_unseen_write's bounds."""
    return (np.zeros((NL, NC), np.int64), np.zeros(NL, np.int64), np.zeros(NL, np.int64),
            np.zeros(NL, np.int64), np.zeros((NL, pages), np.int64),
            np.zeros((NL, pages), np.int64), np.empty(2 * REACH, np.int64))


@cached_njit(nogil=True, inline="always")
def _gm_access(rows, i, gm, clk, v, pipe):
    """A GM access, kept with its pipe's clock for the launch's cross-core check (column 2 is
    the row's write id: 2 for an atomic add, which another core's atomic adds may overlap)."""
    ng, a = v[V_NG], rows[i, T.C_A]
    blk, step = rows[i, T.C_ELEMS], rows[i, T.C_REPEATS]
    if blk <= 0 or step <= blk:
        blk = step = 0          # contiguous
    gm[ng, 0], gm[ng, 1], gm[ng, 2], gm[ng, 3] = a, a + rows[i, T.C_BYTES], rows[i, T.C_ID], pipe
    gm[ng, 4], gm[ng, 5], gm[ng, 6] = rows[i, T.C_LINE], blk, step
    for q in range(NL):
        gm[ng, 7 + q] = clk[pipe, q]
    v[V_NG] = ng + 1


@cached_njit(nogil=True)
def _freed_check(rows, i, lo, hi, fr_lo, fr_hi, sh_freed, sh_rline, found, v):
    """memcheck: a local access [lo, hi) to a buffer freed and not allocated again (Read1 /
    Write1 at its first such byte)."""
    for j in range(v[V_NFR]):
        if fr_lo[j] < hi and lo < fr_hi[j]:
            for x in range(lo, hi):
                if sh_freed[x]:
                    v[V_NF] = _emit(found, v[V_NF], F_FREED, i, x, lo, sh_rline[x],
                                    rows[i, T.C_ID] != 0, rows[i, T.C_BYTES], 0)
                    return
            return


@cached_njit(nogil=True)
def _sync1_scan(i, write, lo, hi, p, done, now, w_pipe, w_time, w_line, r_time, r_line, state,
                pend, npend, ht, found, v):
    """Sync1's exact scan, once the page filter flagged a copy of DMA pipe p in flight."""
    _flush(pend, npend, ht, w_pipe, w_time, w_line, r_time, r_line, state)
    at = first_in_flight(w_pipe, w_time, lo, hi, p, done, now)
    if at >= 0:
        v[V_NF] = _emit(found, v[V_NF], F_SYNC1, i, at, lo, w_line[at], write, 0, p)


@cached_njit(nogil=True)
def _write3_scan(i, lo, hi, p, q, seen, w_pipe, w_time, w_line, r_time, r_line, state, pend,
                 npend, ht, found, v):
    """Write3's exact scan, once the page filter flagged a read of pipe q that p has not
    seen."""
    _flush(pend, npend, ht, w_pipe, w_time, w_line, r_time, r_line, state)
    at = first_above(r_time[q], lo, hi, seen)
    if at >= 0:
        v[V_NF] = _emit(found, v[V_NF], F_WRITE3, i, at, lo, r_line[q, at], 0, q, p)


@cached_njit(nogil=True)
def _sync2_scan(rows, i, write, lo, hi, p, w_pipe, w_time, w_line, r_time, r_line, state, clk,
                table, pend, npend, ht, found, v):
    """Sync2's exact scan, once the page filter flagged a write pipe p has not seen."""
    table[:] = NEVER
    for q in range(NL):
        if q != p:
            table[q] = table[REACH + q] = clk[p, SMEM] if q == 0 else clk[p, q]
    _flush(pend, npend, ht, w_pipe, w_time, w_line, r_time, r_line, state)
    at = first_unseen_write(w_pipe, w_time, lo, hi, table)
    if at >= 0:
        v[V_NF] = _emit(found, v[V_NF], F_SYNC2, i, at, lo, w_line[at], write,
                        w_pipe[at] % REACH, p)


@cached_njit(nogil=True)
def _cross_point(rows, i, pipe, op, clk, done, pts, v, ops):
    """A cross-core call (cross_core_set/wait_flag, ib_set/wait), kept as a point."""
    xset, xwait, ib_set = ops[0], ops[1], ops[2]
    npt = v[V_NPT]
    if (op == xset or op == xwait) and rows[i, T.C_B] == _P2P:
        pts[npt, 0] = P_P2P_SET if op == xset else P_P2P_WAIT
    elif op == xset:
        done[pipe] = clk[pipe, pipe]        # fires once its pipe has drained
        pts[npt, 0] = P_SET
    elif op == xwait:
        pts[npt, 0] = P_WAIT
    else:
        pts[npt, 0] = P_IB_SET if op == ib_set else P_IB_WAIT
    pts[npt, 1], pts[npt, 2] = rows[i, T.C_A], rows[i, T.C_B]
    pts[npt, 3], pts[npt, 4] = pipe, rows[i, T.C_LINE]
    for q in range(NL):
        pts[npt, 5 + q] = clk[pipe, q]
    v[V_NPT] = npt + 1


@cached_njit(nogil=True, inline="always")
def _region_row(rows, i, sh, fr, v):
    """A buffer handed out (alloc_tensor), taken back (free_tensor) or viewed (TBuf.get)."""
    sh_written, sh_freed, sh_rline, dirty = sh[0], sh[1], sh[2], sh[8]
    fr_lo, fr_hi = fr
    lo = rows[i, T.C_A]
    hi = min(lo + rows[i, T.C_BYTES], sh_written.shape[0])
    what, line = rows[i, T.C_ID], rows[i, T.C_LINE]
    if hi > lo:
        for pg in range(lo >> PAGE, ((hi - 1) >> PAGE) + 1):
            dirty[pg] = 1
    if what == REGION_ALLOC:
        nfr = v[V_NFR]
        j = 0
        while j < nfr:          # (the freed buffers inside it are allocated again)
            if lo <= fr_lo[j] and fr_hi[j] <= hi:
                nfr -= 1
                fr_lo[j], fr_hi[j] = fr_lo[nfr], fr_hi[nfr]
            else:
                j += 1
        v[V_NFR] = nfr
        if hi > lo:
            sh_written[lo:hi] = 0
            sh_freed[lo:hi] = 0
            sh_rline[lo:hi] = line
    elif what == REGION_FREE:
        fr_lo[v[V_NFR]], fr_hi[v[V_NFR]] = lo, hi
        v[V_NFR] += 1
        if hi > lo:
            sh_freed[lo:hi] = 1
            sh_rline[lo:hi] = line
    elif hi > lo and sh_rline[lo] == 0:     # a TBuf's first get: its "allocation"
        sh_rline[lo:hi] = line


@cached_njit(nogil=True, inline="always")
def _flag_row(rows, i, kind, lane, sync, ev_lanes, ck, fq, ps, found, v):
    """A set_flag / wait_flag or queue step of lane `lane`: a send pushes the lane's clock on
    its key's FIFO, the matching receive joins the oldest into the receiving lane's clock;
    synccheck follows the set_flags not yet waited for (Sync4: an id set twice)."""
    clk, done = ck[0], ck[1]
    keys, nkeys, head, tail, snaps, nxt = fq
    ev = ident = k0 = k1 = k2 = k3 = 0
    if kind == T.K_SET or kind == T.K_WAIT:
        ev, ident = rows[i, T.C_A], rows[i, T.C_ID]
        k0, k1, k2, k3 = 0, ev_lanes[ev, 0], ev_lanes[ev, 1], ident
        send = kind == T.K_SET
    else:
        k1 = rows[i, T.C_B]                         # the queue's id
        if kind == T.K_Q_ENQUE or kind == T.K_Q_DEQUE:
            k0 = 1
        else:
            k0, k2 = 2, rows[i, T.C_ID]             # ... and the buffer's slot
        send = kind == T.K_Q_ENQUE or kind == T.K_Q_FREE
    if send:
        k = _key(keys, nkeys, k0, k1, k2, k3, True)
        nsnap = v[V_NSNAP]
        snaps[nsnap] = clk[lane]
        _push(head, tail, nxt, k, nsnap)
        v[V_NSNAP] = nsnap + 1
        done[lane] = clk[lane, lane]        # a set fires once its pipe has drained
    else:
        k = _key(keys, nkeys, k0, k1, k2, k3, False)
        if k >= 0 and head[k] >= 0:
            s = _pop(head, tail, nxt, k)
            for q in range(NC):
                if snaps[s, q] > clk[lane, q]:
                    clk[lane, q] = snaps[s, q]
            # another pipe waited for this pipe's ops up to snap[lane]: complete
            if snaps[s, lane] > done[lane]:
                done[lane] = snaps[s, lane]
    pkeys, npkeys, phead, ptail, plines, pnxt = ps
    if kind == T.K_SET:
        k = _key(pkeys, npkeys, ev, ident, 0, 0, True)
        if phead[k] >= 0 and sync:
            v[V_NF] = _emit(found, v[V_NF], F_SYNC4, i, 0, 0, plines[phead[k]], ev, ident, 0)
        npl = v[V_NPL]
        plines[npl] = rows[i, T.C_LINE]
        _push(phead, ptail, pnxt, k, npl)
        v[V_NPL] = npl + 1
    elif kind == T.K_WAIT:
        k = _key(pkeys, npkeys, ev, ident, 0, 0, False)
        if k >= 0 and phead[k] >= 0:
            _pop(phead, ptail, pnxt, k)


@cached_njit(nogil=True, inline="always")
def _sync_all_row(rows, i, ck, pts, v):
    """sync_all: a scalar step every later op comes after, all lanes joined; a point."""
    clk = ck[0]
    clk[0, 0] += 1
    _join_all(clk, ck[1])
    v[V_EPOCH] += 1
    npt = v[V_NPT]
    pts[npt, 0], pts[npt, 1], pts[npt, 2] = P_SYNC_ALL, v[V_EPOCH], 0
    pts[npt, 3], pts[npt, 4] = 0, rows[i, T.C_LINE]
    for q in range(NL):
        pts[npt, 5 + q] = clk[0, q]
    v[V_NPT] = npt + 1


@cached_njit(nogil=True, inline="always")
def _unwaited(ps, found, v):
    """synccheck at the block's end: every set_flag still pending (Sync3)."""
    pkeys, npkeys, phead, plines, pnxt = ps[0], ps[1], ps[2], ps[4], ps[5]
    for k in range(npkeys[0]):
        s = phead[k]
        while s >= 0:
            v[V_NF] = _emit(found, v[V_NF], F_SYNC3, -1, 0, 0, plines[s], pkeys[k, 0],
                            pkeys[k, 1], 0)
            s = pnxt[s]


@cached_njit(nogil=True)
def _join_all(clk, done):
    for q in range(NC):
        m = clk[0, q]
        for r in range(1, NL):
            if clk[r, q] > m:
                m = clk[r, q]
        for r in range(NL):
            clk[r, q] = m
    for q in range(NL):
        done[q] = clk[q, q]


@cached_njit(nogil=True)
def first_unseen_write(w_pipe, w_time, lo, hi, seen):
    """First byte in [lo, hi) whose last write is later than `seen[its writer's code]` (codes
    are w_pipe & 15: -1, none, is 15), or -1."""
    for i in range(lo, hi):
        if w_time[i] > seen[w_pipe[i] & 15]:
            return i
    return -1


@cached_njit(nogil=True)
def first_above(row, lo, hi, bar):
    """First byte in [lo, hi) with row[i] > bar, or -1 (by chunks: a max the compiler
    vectorises, then a search only in a chunk that has one)."""
    i = lo
    while i < hi:
        e = min(i + 2048, hi)
        m = row[i]
        for j in range(i, e):
            m = max(m, row[j])
        if m > bar:
            for j in range(i, e):
                if row[j] > bar:
                    return j
        i = e
    return -1


@cached_njit(nogil=True)
def first_in_flight(w_pipe, w_time, lo, hi, pipe, done, now):
    """First byte in [lo, hi) last written by `pipe` (not by a reach) at a time in (done, now),
    or -1."""
    for i in range(lo, hi):
        if w_pipe[i] == pipe:
            t = w_time[i]
            if t > done and t < now:
                return i
    return -1
