"""The operation table shared by the interpreter (ascendc/lang/api.py) and the compiler.

Each public op (pyasc name) has one or more *forms*, chosen like pyasc's dispatcher: by the
keywords given and the number of positional arguments. A form names its parameters (pyasc's
spelling and order, `dst` first), their defaults, and the primitive in `ascendc.lang.prims`
that implements it. A primitive is called as ``prim(ctx, *values)`` with the values in the
form's order: tensors as storage arrays, params structs as namedtuples, masks as an int or a
2-tuple of uint64 words, scalars as numbers. Primitives work from Python and from njit code.
"""
from __future__ import annotations

from dataclasses import dataclass, field

_REQ = object()  # marker: required parameter


@dataclass(frozen=True)
class Form:
    params: tuple
    prim: str
    defaults: dict = field(default_factory=dict)

    def accepts(self, npos: int, keys) -> bool:
        if npos > len(self.params) or any(k not in self.params for k in keys):
            return False
        given = set(self.params[:npos]) | set(keys)
        if given & set(self.params[:npos]) & set(keys):
            return False
        return all(p in given or p in self.defaults for p in self.params)


OPS: dict[str, tuple[Form, ...]] = {}


def op(name, *forms):
    OPS[name] = tuple(forms)


REP = ("mask", "repeat_times", "repeat_params")
for _n in ("add", "sub", "mul", "div", "max", "min", "add_relu", "sub_relu", "bitwise_and",
           "bitwise_or"):
    op(_n, Form(("dst", "src0", "src1", "count"), f"{_n}_count"),
       Form(("dst", "src0", "src1") + REP + ("is_set_mask",), f"{_n}_rep", {"is_set_mask": True}))
for _n in ("exp", "ln", "sqrt", "rsqrt", "reciprocal", "abs", "relu", "bitwise_not"):
    op(_n, Form(("dst", "src", "count"), f"{_n}_count"),
       Form(("dst", "src") + REP + ("is_set_mask",), f"{_n}_rep", {"is_set_mask": True}))
for _n in ("adds", "muls", "maxs", "mins", "leaky_relu", "axpy"):
    op(_n, Form(("dst", "src", "scalar", "count"), f"{_n}_count"),
       Form(("dst", "src", "scalar") + REP + ("is_set_mask",), f"{_n}_rep", {"is_set_mask": True}))
op("duplicate", Form(("dst", "scalar", "count"), "duplicate_count"),
   Form(("dst", "scalar", "mask", "repeat_times", "dst_block_stride", "dst_repeat_stride",
         "is_set_mask"), "duplicate_rep",
        {"dst_block_stride": 1, "dst_repeat_stride": 8, "is_set_mask": True}))
op("cast", Form(("dst", "src", "round_mode", "count"), "cast_count"),
   Form(("dst", "src", "round_mode") + REP + ("is_set_mask",), "cast_rep", {"is_set_mask": True}))
op("compare", Form(("dst", "src0", "src1", "cmp_mode", "count"), "compare_count"),
   Form(("dst", "src0", "src1", "cmp_mode") + REP + ("is_set_mask",), "compare_rep",
        {"is_set_mask": True}))
op("compare_scalar", Form(("dst", "src0", "src1", "cmp_mode", "count"), "compare_scalar_count"),
   Form(("dst", "src0", "src1", "cmp_mode") + REP + ("is_set_mask",), "compare_scalar_rep",
        {"is_set_mask": True}))
op("select", Form(("dst", "sel_mask", "src0", "src1", "sel_mode", "count"), "select_count"),
   Form(("dst", "sel_mask", "src0", "src1", "sel_mode") + REP + ("is_set_mask",), "select_rep",
        {"is_set_mask": True}))
op("reduce_sum", Form(("dst", "src", "shared_tmp_buffer", "count"), "reduce_sum_count"),
   Form(("dst", "src", "shared_tmp_buffer", "mask", "repeat_time", "src_rep_stride"),
        "reduce_sum_rep"))
for _n in ("reduce_max", "reduce_min"):
    op(_n, Form(("dst", "src", "shared_tmp_buffer", "count", "cal_index"), f"{_n}_count",
                {"cal_index": False}),
       Form(("dst", "src", "shared_tmp_buffer", "mask", "repeat_time", "src_rep_stride",
             "cal_index"), f"{_n}_rep", {"cal_index": False}))
_WR = ("dst", "src", "mask", "repeat_time", "dst_rep_stride", "src_blk_stride", "src_rep_stride")
op("whole_reduce_sum", Form(_WR + ("is_set_mask",), "whole_reduce_sum", {"is_set_mask": True}))
for _n in ("whole_reduce_max", "whole_reduce_min"):
    op(_n, Form(_WR + ("order", "is_set_mask"), _n, {"order": 0, "is_set_mask": True}))
op("brcb", Form(("dst", "src0", "repeat_times", "repeat_params"), "brcb"))

# data movement (the third argument's type picks the variant inside the primitive)
op("data_copy",
   Form(("dst", "src", "count"), "data_copy"),
   Form(("dst", "src", "repeat_params"), "data_copy"),
   Form(("dst", "src", "intri_params"), "data_copy"))
op("data_copy_pad",
   Form(("dst", "src", "copy_params", "pad_params"), "data_copy_pad", {"pad_params": None}))

# cube path
op("load_data", Form(("dst", "src", "load_data_params"), "load_data"))
op("mmad", Form(("dst", "fm", "filter", "mmad_params"), "mmad"),
   Form(("dst", "fm", "filter", "bias", "mmad_params"), "mmad_bias"))
op("fixpipe", Form(("dst", "src", "intri_params", "config"), "fixpipe", {"config": 0}))

# sync, system, debug
op("pipe_barrier", Form(("pipe",), "pipe_barrier"))
op("set_flag", Form(("event", "event_id"), "set_flag", {"event_id": 0}))
op("wait_flag", Form(("event", "event_id"), "wait_flag", {"event_id": 0}))
op("sync_all", Form((), "sync_all"))
op("get_block_idx", Form((), "get_block_idx"))
op("get_block_num", Form((), "get_block_num"))
op("get_sub_block_idx", Form((), "get_sub_block_idx"))
op("get_sub_block_num", Form((), "get_sub_block_num"))
op("get_data_block_size_in_bytes", Form((), "get_data_block_size_in_bytes"))


def bind(name: str, nargs: int, keys) -> Form:
    """The form of op `name` that a call with `nargs` positional args and keywords `keys` selects."""
    keys = tuple(keys)
    for f in OPS[name]:
        if f.accepts(nargs, keys):
            return f
    sigs = " | ".join(f"{name}({', '.join(f.params)})" for f in OPS[name])
    raise TypeError(f"asc.{name}: arguments must match one of {sigs}, "
                    f"got {nargs} positional and keywords {list(keys)}")


def order(form: Form, args, kwargs) -> list:
    """Values (or AST nodes) in the form's parameter order, defaults filled in."""
    vals = list(args)
    for p in form.params[len(args):]:
        vals.append(kwargs[p] if p in kwargs else form.defaults[p])
    return vals
