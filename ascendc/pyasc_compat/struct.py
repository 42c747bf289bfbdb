"""pyasc's `asc.language.core.struct` (`Struct`, `Field`, `StructField`) and
`asc.language.core.dtype.KnownTypes`: user-defined tiling structs passed to kernels.

pyasc (python/asc/language/core/struct.py) builds a packed ctypes structure on the host and
hands the kernel a C struct it reads with `cfg.tile.tile_length`. Here a Struct instance keeps
its field values on the host (checked against each field's dtype when set) and the kernel gets
a record (a namedtuple per Struct class, fields as numpy scalars of the field's dtype, nested
Structs as nested records): read-only attribute access in both modes, as for
`asc.adv.TCubeTiling`. Writing a struct's fields inside a kernel is not supported.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..lang import dtypes as D

__all__ = ["Field", "StructField", "Struct", "KnownTypes", "BaseField", "missing"]


class _Missing:
    def __repr__(self):
        return "missing"


missing = _Missing()


class KnownTypes:
    """pyasc's `KnownTypes` (python/asc/language/core/dtype.py), as ascend-emu's dtypes."""
    int8, int16, int32, int64 = D.int8, D.int16, D.int32, D.int64
    uint8, uint16, uint32, uint64 = D.uint8, D.uint16, D.uint32, D.uint64
    float16, float32, float64 = D.float16, D.float32, D.float64
    half, float_, double = D.float16, D.float32, D.float64
    bool_, int1, int_ = D.int8, D.int8, D.int32


class BaseField:
    def __init__(self, default=missing, name=None):
        self.default = default
        self.name = name


class Field(BaseField):
    """A scalar field: `Field(dtype=KnownTypes.int32, default=0)`."""

    def __init__(self, dtype, default=missing, name=None):
        if not isinstance(dtype, D.DataType):
            raise TypeError(f"Field: dtype must be a kernel dtype (KnownTypes.int32, asc.float32, "
                            f"...), got dtype={dtype!r}")
        super().__init__(default, name)
        self.dtype = dtype

    def check(self, owner: str, name: str, value):
        """`value` as this field's numpy scalar; ValueError unless it fits the dtype."""
        dt = self.dtype.numpy
        if dt.kind in "iu":
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise ValueError(f"{owner}: {name} must be an integer for a {self.dtype.name} "
                                 f"field, got {name}={value!r}")
            info = np.iinfo(dt)
            if not info.min <= int(value) <= info.max:
                raise ValueError(f"{owner}: {name} must fit {self.dtype.name} "
                                 f"([{info.min}, {info.max}]), got {name}={value!r}")
            return dt.type(int(value))
        return dt.type(float(value))

    def record(self, value):
        return value


class StructField(BaseField):
    """A nested Struct: `StructField(TileConfig)` (default: the struct's own defaults)."""

    def __init__(self, struct_cls, default=None, name=None):
        if not (isinstance(struct_cls, type) and issubclass(struct_cls, Struct)):
            raise TypeError(f"StructField: struct_cls must be a Struct subclass, got "
                            f"struct_cls={struct_cls!r}")
        super().__init__(default, name)
        self.struct_cls = struct_cls

    def check(self, owner: str, name: str, value):
        if value is None:
            return self.struct_cls()
        if not isinstance(value, self.struct_cls):
            raise TypeError(f"{owner}: {name} must be a {self.struct_cls.__name__}, got "
                            f"{name}={value!r}")
        return value

    def record(self, value):
        return value._kernel_record()


class Struct:
    """pyasc's `Struct`: subclass it with Field / StructField class attributes; construct it on
    the host with keyword values (the others take their defaults); pass it to a kernel."""
    struct_fields: dict = {}
    Record = None

    def __init_subclass__(cls, pack: int = 8, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.struct_fields = {n: f for n, f in vars(cls).items() if isinstance(f, BaseField)}
        if not cls.struct_fields:
            raise RuntimeError(f"Struct '{cls.__name__}' must have at least one field")
        # the kernel's record type, findable as <module>.<Struct>.Record (Numba's disk cache
        # pickles argument types by reference)
        rec = namedtuple(f"{cls.__name__}Record", list(cls.struct_fields))
        rec.__module__ = cls.__module__
        rec.__qualname__ = f"{cls.__qualname__}.Record"
        cls.Record = rec

    def __init__(self, **fields):
        for name in fields:
            if name not in self.struct_fields:
                raise RuntimeError(f"{type(self).__name__} does not have a field '{name}'")
        for name, field in self.struct_fields.items():
            if name in fields:
                value = fields[name]
            elif field.default is missing:
                raise RuntimeError(f"{type(self).__name__} does not have a default value for "
                                   f"'{name}'")
            else:
                value = field.default
            setattr(self, name, value)

    def __setattr__(self, name, value):
        field = self.struct_fields.get(name)
        if field is None:
            raise AttributeError(f"{type(self).__name__}: field must be one of "
                                 f"{list(self.struct_fields)}, got {name}={value!r}")
        object.__setattr__(self, name, field.check(type(self).__name__, name, value))

    def _kernel_record(self):
        """What a kernel receives (jit's argument marshalling calls this)."""
        return self.Record(*(f.record(getattr(self, n)) for n, f in self.struct_fields.items()))

    def __repr__(self):
        return f"{type(self).__name__}(" + ", ".join(
            f"{n}={getattr(self, n)!r}" for n in self.struct_fields) + ")"
