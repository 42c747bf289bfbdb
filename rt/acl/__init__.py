"""pyACL-compatible facade: existing scripts run after changing only `import acl` to
`import rt.acl as acl`.

`acl.init/finalize`, `acl.rt.*` (devices, contexts, streams, events, memory, callbacks),
`acl.util.*` (pointer helpers, callback threads), `acl.get_soc_name`, `acl.get_recent_err_msg` and
the `ACL_*` constants. As in pyACL, calls return `ret` or `(value..., ret)` and never raise for an
API error (the message is kept for `acl.get_recent_err_msg()`).
"""
from .. import device as _dev
from ..errors import AclError as _AclError, get_recent_err_msg as _recent
from . import constants as _constants
from . import rt, util, mdl, hccl
from . import media as media                 # DVPP: acl.media over rt.dvpp
from .mdl import (create_data_buffer, destroy_data_buffer, get_data_buffer_addr,
                  get_data_buffer_size, get_data_buffer_size_v2)
from .constants import *  # noqa: F401,F403
from .constants import ACL_SUCCESS as _OK

__all__ = ["rt", "util", "hccl", "mdl", "init", "finalize", "get_soc_name", "get_recent_err_msg",
           "create_data_buffer", "destroy_data_buffer", "get_data_buffer_addr",
           "get_data_buffer_size", "get_data_buffer_size_v2"] + \
    [name for name in vars(_constants) if name.isupper()]


def init(config_path: str | None = None) -> int:
    """Mirrors `aclInit`."""
    try:
        _dev.init(config_path)
        return _OK
    except _AclError as e:
        return e.code


def finalize() -> int:
    """Mirrors `aclFinalize`."""
    try:
        _dev.finalize()
        return _OK
    except _AclError as e:
        return e.code


def get_soc_name() -> str | None:
    """Mirrors `aclrtGetSocName` (None before `acl.init`)."""
    try:
        return _dev.get_soc_name()
    except _AclError:
        return None


def get_recent_err_msg() -> str | None:
    """Mirrors `aclGetRecentErrMsg`: the calling thread's last error message, then clears it."""
    return _recent()
