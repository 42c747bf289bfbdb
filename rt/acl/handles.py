"""What the pyACL facade modules share: a table of int handles for their objects, and the
decorators that turn `AclError`s into pyACL's return codes (`ret`, `(value..., ret)`)."""
from __future__ import annotations

import functools
import itertools
import threading

from ..errors import AclError
from . import constants as C


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
            return e.code
    return wrapper


def returns_value(*defaults):
    """pyACL's `(value..., ret)` form; `defaults` stand in for the values when the call fails."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                value = fn(*args, **kwargs)
            except AclError as e:
                return (*defaults, e.code)
            return (*value, C.ACL_SUCCESS) if isinstance(value, tuple) else (value, C.ACL_SUCCESS)
        return wrapper
    return deco
