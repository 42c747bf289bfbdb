"""A core's state, as numpy record dtypes that Numba reads and writes by field name.

`CORE_STATE` is one record per core (`ctx[STATE]`, see core.py); `QUEUE_RECORD` is one TQue or TBuf,
an element of `CORE_STATE.queues`. A kernel's queue handle is a view of its record (compiled and
interpreted alike), so `q.depth`, `q.fifo[i]` read and write the core's state in place.

Python code sees `ctx[STATE][0]` as a `numpy.record` (attribute access: `st.block_idx`); njit
code sees a Numba `Record` passed by reference.
"""
from __future__ import annotations

import numpy as np

from .positions import NLEVELS

__all__ = ["CORE_STATE", "QUEUE_RECORD", "new_state", "MAX_PENDING", "MAX_QUEUES", "MAX_GM",
           "MAX_SLOTS", "N_HARD_EVENTS", "N_EVENT_IDS", "N_COUNTERS", "KIND_QUE", "KIND_BUF",
           "MAX_SHAPES", "SHAPE_COLS", "MAX_AUTO",
           "FLAG_NAN_FILL", "FLAG_DEFER", "FLAG_REPORT_ROUNDING", "FLAG_TRACE", "AIPP_WORDS",
           "FLAG_REPORT_OVERREACH", "FLAG_SANITIZE", "FLAG_GM_ORDER", "FLAG_ATOMIC_ADD", "MEM",
           "STAGE", "STATE",
           "TRACE"]

# the slots of a core context `ctx` (a plain tuple, core.new_ctx): ctx[MEM] the local memories,
# ctx[STAGE] the staging copy of checked mode, ctx[STATE] the one-element CORE_STATE array
# (ctx[STATE][0] is the record), ctx[TRACE] the NPU-view trace rows. Numba folds the names to
# constants: indexing a slot by name costs what a literal index does.
MEM, STAGE, STATE, TRACE = range(4)

MAX_PENDING = 256      # deferred GM->local copies remembered at once (then all are flushed)
MAX_QUEUES = 64        # TQue + TBuf records per kernel
MAX_GM = 64            # GM arguments whose ranges are known (to name them in errors)
MAX_SLOTS = 16         # buffers per queue (and the length of a queue's FIFO ring)
N_HARD_EVENTS = 35     # HardEvent values 0..34
N_EVENT_IDS = 8        # event ids per HardEvent
N_COUNTERS = 16        # profiler counters (core.COUNTER_NAMES names the ones in use)
AIPP_WORDS = 40        # set_aipp_functions' parameters (laid out by prims/aipp.py)
MAX_AUTO = 64          # allocation sites of asc.LocalTensorAuto per kernel (prims/autotensor.py)
MAX_SHAPES = 32        # LocalTensor.set_shape_info records per block (prims/shapeinfo.py)
SHAPE_COLS = 21        # a record: tensor byte offset, bytes, then a ShapeInfo (SHAPE_INFO_LEN)

KIND_QUE, KIND_BUF = 1, 2

# bits of CORE_STATE.options
FLAG_NAN_FILL = 1          # fresh local buffers are NaN
FLAG_DEFER = 2             # GM->local copies become visible at deque / wait_flag
FLAG_REPORT_ROUNDING = 4   # the launcher warns when data_copy rounded bytes down
FLAG_TRACE = 8             # primitives append NPU-view trace rows to ctx[TRACE] (lang/trace.py)
FLAG_REPORT_OVERREACH = 16  # GM accesses past an argument's end are noted (lang/gmreach.py)
FLAG_SANITIZE = 32         # primitives add memory-access rows to the trace (ascendc/sanitize)
FLAG_GM_ORDER = 64         # GM accesses of a MIX launch's cores are checked for order (rt.gmorder)
FLAG_ATOMIC_ADD = 128      # set_atomic_add is on: fixpipe adds into GM (prims/atomic.py)

_I8 = np.int64

QUEUE_RECORD = np.dtype([
    ("kind", _I8),         # KIND_QUE or KIND_BUF
    ("pos", _I8),          # TPosition value
    ("level", _I8),        # memory level of pos (positions.UB ...)
    ("depth", _I8),        # TQue depth
    ("num", _I8),          # buffers (init_buffer's num)
    ("slot_bytes", _I8),   # bytes per buffer (rounded up to 32)
    ("mem_off", _I8),      # byte offset of buffer 0 in the core's local memory
    ("init", _I8),         # 1 once init_buffer ran
    ("alloc", _I8),        # bit s: buffer s is allocated
    ("fifo_n", _I8),       # tensors enqueued
    ("fifo_head", _I8),    # index in `fifo` of the oldest one
    ("next_slot", _I8),    # next buffer alloc_tensor tries
    ("id", _I8),           # index in CORE_STATE.queues (named in errors as #id)
    ("fifo", _I8, (MAX_SLOTS,)),   # ring of enqueued buffer numbers
    ("fifo_seq", _I8, (MAX_SLOTS,)),   # ... and copy_seq at each enque (lang/visibility.py)
])

CORE_STATE = np.dtype([
    ("block_idx", _I8),
    ("block_num", _I8),
    ("src_line", _I8),     # kernel source line executing (written by generated code)
    ("options", _I8),      # FLAG_* bits (checked-mode options)
    ("rounded", _I8),      # data_copy calls whose bytes were rounded down to 32 B
    ("pipes", _I8),        # TPipe objects created (must stay <= 1)
    ("nbuf", _I8),         # buffers initialised (<= 64)
    ("nque", _I8),         # queue records in use
    ("ngm", _I8),          # GM arguments registered
    ("npending", _I8),     # deferred copies in pending_off/pending_bytes
    ("barrier", _I8),      # key of the launch's all-blocks barrier (0: none; lang/barrier.py)
    ("barrier_fn", _I8),   # address of the C callback that waits on it
    ("sync_calls", _I8),   # sync_all calls made by the current block
    ("core_role", _I8),    # in a MIX launch: 1 AIV, 2 AIC (lang/crosscore.py); 0 otherwise
    ("sub_idx", _I8),      # ... the AIV's index in its group
    ("xcore", _I8),        # ... key of the instance's port (rt.crossflags.Instance)
    ("xcore_fn", _I8),     # ... address of the C callback that reaches it
    ("atomic_locks", _I8),  # address of the process's lock words for atomic adds (prims/atomic.py)
    ("kfc", _I8),          # ... its Matmul role (adv/kfc.py): 1 client (AIV), 2 server (AIC)
    ("trace_n", _I8),      # NPU-view trace rows written to ctx[TRACE] (lang/trace.py)
    ("trace_lost", _I8),   # rows that did not fit in ctx[TRACE]
    ("nshape", _I8),       # shape-info records in use (reset per block)
    ("level_base", _I8, (NLEVELS,)),   # byte offset of each level in the core's memory
    ("level_size", _I8, (NLEVELS,)),   # capacity of each level
    ("level_used", _I8, (NLEVELS,)),   # bytes of each level handed out by init_buffer
    ("counters", _I8, (N_COUNTERS,)),  # profiler counters (core.COUNTER_NAMES)
    ("pending_off", _I8, (MAX_PENDING,)),    # deferred copies: byte offset in mem ...
    ("pending_bytes", _I8, (MAX_PENDING,)),  # ... and length
    ("pending_seq", _I8, (MAX_PENDING,)),    # ... and issue number (copy_seq when issued)
    ("copy_seq", _I8),     # GM->local copies issued by the block (checked mode)
    # copies that landed for some pipes only (lang/visibility.py): byte offset, length, and
    # bit p: PipeID p is ordered after the copy
    ("nvis", _I8),
    ("vis_off", _I8, (MAX_PENDING,)),
    ("vis_bytes", _I8, (MAX_PENDING,)),
    ("vis_mask", _I8, (MAX_PENDING,)),
    ("vis_src", _I8, (MAX_PENDING,)),      # PipeID that wrote the bytes (MTE2 or V)
    ("gm_addr", _I8, (MAX_GM,)),       # GM arguments: address ...
    ("gm_bytes", _I8, (MAX_GM,)),      # ... and bytes reached: to its allocation's end
    ("gm_size", _I8, (MAX_GM,)),       # ... bytes of the argument itself (lang/gmreach.py)
    ("gm_over", _I8, (MAX_GM,)),       # ... farthest bytes accessed past gm_size (checked)
    ("gm_over_off", _I8, (MAX_GM,)),   # ... byte offset of that access
    ("gm_preset", _I8),    # gm_size entries the launcher set (register_gm sets the others)
    ("events", _I8, (N_HARD_EVENTS, N_EVENT_IDS)),   # set_flag counts per (HardEvent, id)
    # copy_seq at the oldest and the newest pending set_flag of each (HardEvent, id): a wait
    # lands only the copies issued before its set (lang/visibility.py)
    ("set_first", _I8, (N_HARD_EVENTS, N_EVENT_IDS)),
    ("set_last", _I8, (N_HARD_EVENTS, N_EVENT_IDS)),
    ("queues", QUEUE_RECORD, (MAX_QUEUES,)),
    # AIPP (set_aipp_functions -> load_image_to_local, prims/aipp.py): format + 1 (0: not set),
    # src0 address and bytes, src1 address and bytes; then the parameters
    ("aipp_src", _I8, (5,)),
    ("aipp_cfg", np.float64, (AIPP_WORDS,)),
    ("shapes", _I8, (MAX_SHAPES, SHAPE_COLS)),   # LocalTensor shape infos by tensor address
    # asc.LocalTensorAuto regions (prims/autotensor.py): one per allocation site, and the pipes
    # that last wrote / have read each one since (for the syncs insert_sync adds)
    ("nauto", _I8),                    # regions in use (reset per block)
    ("auto_site", _I8, (MAX_AUTO,)),   # allocation site id (hash of file:line:col)
    ("auto_off", _I8, (MAX_AUTO,)),    # byte offset of the region in the core's memory
    ("auto_bytes", _I8, (MAX_AUTO,)),  # its size (32-byte multiple)
    ("auto_wpipe", _I8, (MAX_AUTO,)),  # PipeID of the last write (-1: none yet)
    ("auto_rmask", _I8, (MAX_AUTO,)),  # bit p: pipe p read the region since that write
    ("auto_smask", _I8, (MAX_AUTO,)),  # bit p: pipe p is ordered after that write
])


def new_state():
    """A zeroed CORE_STATE record (a view into its own one-element array)."""
    return np.zeros(1, CORE_STATE).view(np.recarray)[0]
