"""What `acl.media`'s modules share: the int handles of the DVPP objects and the decorators
that give pyACL's return forms (creators: the handle or 0; getters: the value or a default)."""
from __future__ import annotations

import functools

from ..errors import AclError, ACL_ERROR_INVALID_PARAM
from . import rt as _acl_rt
from .handles import HandleTable, api_name, fail

HANDLES = HandleTable("media.", 0x5D0000001000, ACL_ERROR_INVALID_PARAM)

new_handle = HANDLES.new


def get_obj(handle, cls, api: str):
    return HANDLES.get(handle, cls, api)


def drop_obj(handle, cls, api: str):
    obj = HANDLES.get(handle, cls, api)
    HANDLES.drop(handle)
    return obj


def stream_of(handle, api: str):
    """The rt.Stream of an acl.rt stream handle (acl.rt keeps its table private and exports no
    resolver yet; read through its resolver as acl.mdl does)."""
    return _acl_rt.stream_of(handle, api)


def returns_handle(fn):
    """Creators: the handle, or 0 when the call fails (pyACL's null)."""
    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except AclError as e:
            fail(e, api_name(fn))
            return 0
    return wrapper


def returns_plain(default=0):
    """Getters: the value, or `default` for a bad handle."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            try:
                return fn(*args)
            except AclError as e:
                fail(e, api_name(fn))
                return default
        return wrapper
    return deco
