"""pyACL-compatible facade: existing scripts run after changing only `import acl` to
`import rt.acl as acl`.

`acl.init/finalize`, `acl.rt.*` (devices, contexts, streams, events, memory, callbacks),
`acl.mdl.*` (models), `acl.op.*` (single ops), `acl.util.*` (pointer helpers, callback threads),
the tensor descriptions (`acl.create_tensor_desc` ...), `acl.app_log`, `acl.get_soc_name`,
`acl.get_recent_err_msg` and the `ACL_*` constants. As in pyACL, calls return `ret` or
`(value..., ret)` and never raise for an API error: the message (naming the `acl.*` call) is kept
for `acl.get_recent_err_msg()` and written as a CANN-style ASCENDCL log line (rt/log.py).
"""
import logging as _logging

from .. import device as _dev
from .. import log as _log
from ..errors import (AclError as _AclError, ACL_ERROR_INVALID_PARAM as _INVALID,
                      get_recent_err_msg as _recent)
from . import constants as _constants
from . import rt, util, mdl, hccl, op
from . import media as media                 # DVPP: acl.media over rt.dvpp
from .handles import fail as _fail
from .mdl import (create_data_buffer, destroy_data_buffer, get_data_buffer_addr,
                  get_data_buffer_size, get_data_buffer_size_v2)
from .tensor import (create_tensor_desc, destroy_tensor_desc, get_tensor_desc_type,
                     get_tensor_desc_format, get_tensor_desc_size, get_tensor_desc_element_count,
                     get_tensor_desc_num_dims, get_tensor_desc_dim, get_tensor_desc_dim_v2,
                     set_tensor_desc_name, get_tensor_desc_name, get_data_type_size,
                     data_type_size, set_tensor_const)
from .constants import *  # noqa: F401,F403
from .constants import ACL_SUCCESS as _OK

__all__ = ["rt", "util", "hccl", "mdl", "op", "media", "init", "finalize", "get_soc_name",
           "get_recent_err_msg", "app_log", "create_data_buffer", "destroy_data_buffer",
           "get_data_buffer_addr", "get_data_buffer_size", "get_data_buffer_size_v2",
           "create_tensor_desc", "destroy_tensor_desc", "get_tensor_desc_type",
           "get_tensor_desc_format", "get_tensor_desc_size", "get_tensor_desc_element_count",
           "get_tensor_desc_num_dims", "get_tensor_desc_dim", "get_tensor_desc_dim_v2",
           "set_tensor_desc_name", "get_tensor_desc_name", "get_data_type_size",
           "data_type_size", "set_tensor_const"] + \
    [name for name in vars(_constants) if name.isupper()]

# aclLogLevel -> logging level (ACL_DEBUG=0 ... ACL_ERROR=3, acl_base.h)
_APP_LEVELS = {0: _logging.DEBUG, 1: _logging.INFO, 2: _logging.WARNING, 3: _logging.ERROR}


def init(config_path: str | None = None) -> int:
    """Mirrors `aclInit`."""
    try:
        _dev.init(config_path)
        return _OK
    except _AclError as e:
        return _fail(e, "acl.init")


def finalize() -> int:
    """Mirrors `aclFinalize`."""
    try:
        _dev.finalize()
        return _OK
    except _AclError as e:
        return _fail(e, "acl.finalize")


def get_soc_name() -> str | None:
    """Mirrors `aclrtGetSocName` (None before `acl.init`)."""
    try:
        return _dev.get_soc_name()
    except _AclError:
        return None


def get_recent_err_msg() -> str | None:
    """Mirrors `aclGetRecentErrMsg`: the calling thread's last error message, then clears it."""
    return _recent()


def app_log(log_level: int, message: str) -> None:
    """Mirrors pyACL's `acl.app_log(log_level, message)` (`ACL_APP_LOG`): writes `message` as an
    APP log line at `log_level` (ACL_DEBUG 0, ACL_INFO 1, ACL_WARNING 2, ACL_ERROR 3), located
    at the caller's file, line and function, if ASCEND_GLOBAL_LOG_LEVEL lets that level through.
    Returns nothing, as in pyACL; a bad level is logged as an ASCENDCL error instead."""
    level = _APP_LEVELS.get(log_level) if not isinstance(log_level, bool) else None
    if level is None:
        _fail(_AclError(_INVALID, f"acl.app_log: log_level must be ACL_DEBUG (0), ACL_INFO (1), "
                                  f"ACL_WARNING (2) or ACL_ERROR (3), got log_level={log_level!r}"),
              "acl.app_log")
        return
    func = _log.caller_outside_rt()
    _log.write(level, "APP", f"{func[2]}: {message}", func)
