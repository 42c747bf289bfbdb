"""AclError and CANN's error codes (RT `acl_base_rt.h`, `rt_error_codes.h`).

Every runtime failure raises :class:`AclError` carrying the CANN code a real runtime would return,
and records its message for :func:`get_recent_err_msg` (per host thread, as `aclGetRecentErrMsg`).
"""
from __future__ import annotations

import threading

ACL_SUCCESS = 0

# 1000xx: ACL parameter / model
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_UNINITIALIZE = 100001
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_INVALID_FILE = 100003
ACL_ERROR_INVALID_MODEL_ID = 100011
ACL_ERROR_DESERIALIZE_MODEL = 100012
ACL_ERROR_PARSE_MODEL = 100013
ACL_ERROR_READ_MODEL_FAILURE = 100014
ACL_ERROR_MODEL_SIZE_INVALID = 100015
ACL_ERROR_MODEL_INPUT_NOT_MATCH = 100017
ACL_ERROR_MODEL_OUTPUT_NOT_MATCH = 100018
ACL_ERROR_OP_NOT_FOUND = 100024
ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026
ACL_ERROR_KERNEL_NOT_FOUND = 100029
ACL_ERROR_REPEAT_SUBSCRIBE = 100033
ACL_ERROR_STREAM_NOT_SUBSCRIBE = 100034
ACL_ERROR_WAIT_CALLBACK_TIMEOUT = 100036
ACL_ERROR_REPEAT_FINALIZE = 100037

# 2000xx / 300000: ACL resource
ACL_ERROR_BAD_ALLOC = 200000
ACL_ERROR_API_NOT_SUPPORT = 200001
ACL_ERROR_INVALID_DEVICE = 200002
ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003
ACL_ERROR_RESOURCE_NOT_MATCH = 200004
ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005
ACL_ERROR_FEATURE_UNSUPPORTED = 200006
ACL_ERROR_STORAGE_OVER_LIMIT = 300000

# 5000xx: ACL internal
ACL_ERROR_INTERNAL_ERROR = 500000
ACL_ERROR_FAILURE = 500001
ACL_ERROR_GE_FAILURE = 500002
ACL_ERROR_RT_FAILURE = 500003
ACL_ERROR_DRV_FAILURE = 500004
ACL_ERROR_PROFILING_FAILURE = 500005

# 107xxx: RT parameter
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_CONTEXT_NULL = 107002
ACL_ERROR_RT_STREAM_CONTEXT = 107003
ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID = 107006
ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL = 107007
ACL_ERROR_RT_ADDR_UNALIGNED = 107008
ACL_ERROR_RT_STREAM_SUBSCRIBE = 107011
ACL_ERROR_RT_THREAD_SUBSCRIBE = 107012
ACL_ERROR_RT_STREAM_NO_CB_REG = 107015
ACL_ERROR_RT_INVALID_MEMORY_TYPE = 107016
ACL_ERROR_RT_INVALID_HANDLE = 107017
ACL_ERROR_RT_INVALID_MALLOC_TYPE = 107018
ACL_ERROR_RT_WAIT_TIMEOUT = 107019
ACL_ERROR_RT_TASK_TIMEOUT = 107020

# 207xxx: RT resource
ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
ACL_ERROR_RT_MEMORY_FREE = 207002
ACL_ERROR_RT_AICORE_OVER_FLOW = 207003
ACL_ERROR_RT_NO_DEVICE = 207004
ACL_ERROR_RT_RESOURCE_ALLOC_FAIL = 207005
ACL_ERROR_RT_NO_EVENT_RESOURCE = 207007
ACL_ERROR_RT_NO_STREAM_RESOURCE = 207008
ACL_ERROR_RT_OVER_LIMIT = 207012
ACL_ERROR_RT_DEVICE_OOM = 207018

# 507xxx: RT internal
ACL_ERROR_RT_INTERNAL_ERROR = 507000
ACL_ERROR_RT_TS_ERROR = 507001
ACL_ERROR_RT_STREAM_TASK_FULL = 507002
ACL_ERROR_RT_STREAM_NOT_COMPLETE = 507004
ACL_ERROR_RT_EVENT_NOT_COMPLETE = 507006
ACL_ERROR_RT_MODEL_EXECUTE = 507011
ACL_ERROR_RT_AICORE_TIMEOUT = 507014
ACL_ERROR_RT_AICORE_EXCEPTION = 507015
ACL_ERROR_RT_AICORE_TRAP_EXCEPTION = 507016
ACL_ERROR_RT_AICPU_EXCEPTION = 507018
ACL_ERROR_RT_KERNEL_LOOKUP = 507027
ACL_ERROR_RT_VECTOR_CORE_TIMEOUT = 507034
ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = 507035
ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW = 507042
ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW = 507043
ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW = 507044
ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW = 507045
ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046
ACL_ERROR_RT_EVENT_SYNC_TIMEOUT = 507047

#: code -> symbolic name, for messages ("207001 ACL_ERROR_RT_MEMORY_ALLOCATION").
CODE_NAMES = {v: k for k, v in dict(globals()).items()
              if k.startswith("ACL_") and isinstance(v, int)}
CODE_NAMES[0] = "ACL_SUCCESS"

_recent = threading.local()


class AclError(RuntimeError):
    """A runtime failure with CANN's error code (`AclError.code`) and a message.

    Creating one records the message as this thread's most recent error (`aclGetRecentErrMsg`).
    """

    def __init__(self, code: int, message: str):
        self.code = int(code)
        self.message = message
        set_recent_err_msg(f"[{self.code} {CODE_NAMES.get(self.code, 'UNKNOWN')}] {message}")
        super().__init__(f"{message} (error code {self.code}, "
                         f"{CODE_NAMES.get(self.code, 'UNKNOWN')})")

    def __reduce__(self):
        return (type(self), (self.code, self.message))


class KernelStop(BaseException):
    """Raised asynchronously in a thread running a range of a cancelled kernel (op execute
    timeout, device reset). A BaseException, so kernel code catching Exception does not eat it;
    the kernel language's C callbacks clear it (ascendc/lang/ccallback.py) instead of letting
    it escape into compiled code."""


class KernelFault(AclError):
    """A fault in one block of a kernel launch: the exception contract of kernel binaries and rt.

    A binary's `run_blocks` raises `KernelFault(code, message, block_idx)` for a fault it can pin
    on a block (`code`: 507015 `ACL_ERROR_RT_AICORE_EXCEPTION`, or the AI Core trap codes such as
    507042/507043 for GM overruns). Any other exception is an AI Core exception (507015) of the
    first block of the range that raised it. rt records the fault of the lowest block as the
    launch's error, itself a `KernelFault` naming the kernel and `block_idx=<i>/<block_dim>`; the
    binary's `message` is kept as `detail`.
    """

    def __init__(self, code: int, message: str, block_idx: int, detail: str | None = None):
        super().__init__(code, message)
        self.block_idx = int(block_idx)
        self.detail = message if detail is None else detail

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.block_idx, self.detail))


class NpuTraceLimitError(KernelFault):
    """A block of a launch recorded by the NPU view (`rt.profile(npu=True)`) issued more
    instructions than the view's per-core trace buffer holds (`rows`, env
    ASCEND_EMU_NPU_TRACE_ROWS, default 262144): the launch cannot be simulated whole (it is not
    a fault of the kernel, which runs the same unrecorded). Code 507015 as any AI Core
    exception; `issued` the instructions the block issued. rt reports it as it reports any
    block fault (the launch's `KernelFault`, then the synchronize's `AclError`, each chained to
    the one before): `NpuTraceLimitError.in_chain(err)` finds it in the chain."""

    def __init__(self, code: int, message: str, block_idx: int, detail: str | None = None,
                 rows: int = 0, issued: int = 0):
        super().__init__(code, message, block_idx, detail)
        self.rows = int(rows)
        self.issued = int(issued)

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.block_idx, self.detail, self.rows,
                             self.issued))

    @classmethod
    def in_chain(cls, err: BaseException):
        """The NpuTraceLimitError `err` is or was caused by (`caused_by`), or None."""
        return caused_by(err, cls)


def caused_by(err: BaseException, cls: type):
    """The first exception of type `cls` in `err`'s chain (`err` itself, then its `__cause__`,
    ...), or None: an error rt wrapped (a synchronize's AclError around a launch's KernelFault
    around a block's) keeps the block's own error as its cause."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, cls):
            return err
        seen.add(id(err))
        err = err.__cause__
    return None


def set_recent_err_msg(msg: str | None) -> None:
    _recent.msg = msg


def get_recent_err_msg() -> str | None:
    """Mirrors `aclGetRecentErrMsg`: the last error message of the calling thread, then clears
    it."""
    msg = getattr(_recent, "msg", None)
    _recent.msg = None
    return msg
