"""What the pyACL facade modules share: a table of int handles for their objects, the
decorators that turn `AclError`s into pyACL's return codes (`ret`, `(value..., ret)`), and
`fail`, which every failing facade call goes through: its message names the `acl.*` call the
script made and a CANN-style ASCENDCL log line is written (rt/log.py)."""
from __future__ import annotations

import functools
import itertools
import logging
import threading

from .. import log as _log
from ..errors import AclError, CODE_NAMES, set_recent_err_msg
from . import constants as C


def api_name(fn) -> str:
    """`acl.<module>.<name>` of a facade function (`acl.<name>` for the top-level ones)."""
    name = getattr(fn, "_acl_name", None)
    if name:
        return name
    module = getattr(fn, "__module__", "") or ""
    ns = module.rsplit(".", 1)[-1] if module.startswith("rt.acl.") else ""
    return f"acl.{ns + '.' if ns else ''}{getattr(fn, '__name__', 'call')}"


def name_calls(namespace: dict, prefix: str) -> None:
    """Give the facade wrappers of a module (lambdas included) their public `acl.*` names; an
    alias keeps the first name it was defined under."""
    for name, obj in list(namespace.items()):
        if not name.startswith("_") and getattr(obj, "_acl_facade", False) and \
                not getattr(obj, "_acl_name", None):
            obj._acl_name = f"{prefix}.{name}"


def fail(e: AclError, api: str) -> int:
    """Account for a failed facade call `api` ("acl.rt.malloc"): the message (kept for
    acl.get_recent_err_msg) names `api`, an ASCENDCL error line is logged; returns the code."""
    msg = e.message if e.message.startswith(f"{api}:") else f"{api}: {e.message}"
    name = CODE_NAMES.get(e.code, "UNKNOWN")
    set_recent_err_msg(f"[{e.code} {name}] {msg}")
    _log.write(logging.ERROR, "ASCENDCL", f"{msg} (error code {e.code}, {name})")
    return e.code


class HandleTable:
    """Objects behind pyACL's int handles (streams, descriptors, datasets ...). Handles count up
    from `base` in steps of 0x40 (a distinct range per module, so a handle of one module is never
    taken for another's); `get` refuses a stale or foreign handle with `code`."""

    def __init__(self, namespace: str, base: int, code: int):
        self.namespace, self.code = namespace, code
        self._objects: dict = {}
        self._ids = itertools.count(base, 0x40)
        self._lock = threading.Lock()

    def new(self, obj) -> int:
        with self._lock:
            h = next(self._ids)
            self._objects[h] = obj
        return h

    def get(self, handle, kind, api: str, what: str | None = None):
        """The object of `handle` if it is a live `kind`, else AclError(code) naming `api`."""
        obj = self._objects.get(handle) if isinstance(handle, int) and \
            not isinstance(handle, bool) else None
        if not isinstance(obj, kind):
            what = what or getattr(kind, "kind", None) or kind.__name__.strip("_").lower()
            raise AclError(self.code, f"acl.{self.namespace}{api}: handle must be a live "
                                      f"{what} handle, got {handle!r}")
        return obj

    def drop(self, handle) -> None:
        with self._lock:
            self._objects.pop(handle, None)

    def peek(self, handle):
        """The object of `handle` or None (no check)."""
        return self._objects.get(handle)

    def find(self, obj) -> int | None:
        """The handle of `obj` (identity), or None."""
        with self._lock:
            return next((h for h, o in self._objects.items() if o is obj), None)

    def drop_where(self, pred) -> None:
        with self._lock:
            for h in [h for h, o in self._objects.items() if pred(o)]:
                del self._objects[h]


def returns_ret(fn):
    """pyACL's `ret` form: ACL_SUCCESS, or the code of the AclError the call raised."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            fn(*args, **kwargs)
            return C.ACL_SUCCESS
        except AclError as e:
            return fail(e, api_name(wrapper))
    wrapper._acl_facade = True
    return wrapper


def returns_value(*defaults):
    """pyACL's `(value..., ret)` form; `defaults` stand in for the values when the call fails."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                value = fn(*args, **kwargs)
            except AclError as e:
                return (*defaults, fail(e, api_name(wrapper)))
            return (*value, C.ACL_SUCCESS) if isinstance(value, tuple) else (value, C.ACL_SUCCESS)
        wrapper._acl_facade = True
        return wrapper
    return deco
