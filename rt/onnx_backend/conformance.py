"""Which of ONNX's backend tests rt.onnx_backend runs, and the documented exclusions.

The selection: the node tests (`onnx.backend.test.loader.load_model_tests(kind="node")`) whose
model uses only ops the converter claims (`rt.model.AICPU_OPS`, the op catalogue), plus the
light real models. The suite runs as ONNX ships it; a test we do not pass is excluded here by
a regular expression with the reason (tests/rt/models/test_onnx_backend.py applies them,
`python -m bench.models --conformance` reports the counts).
"""
from __future__ import annotations

# ONNX's light models; DenseNet-121's stored output is reproduced here (and by onnxruntime),
# though onnx.reference misses it because its BatchNormalization-9 fills momentum's default 0.9 and
# then mixes in batch statistics
LIGHT_MODELS = ("test_resnet50", "test_vgg19", "test_bvlc_alexnet", "test_inception_v1",
                "test_shufflenet", "test_zfnet512", "test_densenet121")

# ops of the catalogue without a node test of their own in ONNX's suite
NO_NODE_TEST = {"Aipp"}     # AIPP: inserted by ATC's --insert_op_conf, not an ONNX op

# (pattern over the test name without the _cpu suffix, reason)
EXCLUDE: list[tuple[str, str]] = [
    (r"^test_cast(like)?_.*(BFLOAT16|FLOAT8|FLOAT4|INT4|UINT4|INT2|UINT2|e8m0)",
     "element types bfloat16 / float8 / float4 / int4 / int2 / e8m0 are not in the model format "
     "(ATC refuses them)"),
    (r"^test_equal_string", "string tensors are not in the model format"),
    (r"^test_identity_(opt|sequence)", "optional and sequence types: tensors only"),
    (r"^test_flexattention_", "the expanded function uses the ai.onnx.preview domain"),
    (r"^test_(depthtospace|spacetodepth|group_normalization)_.*expanded",
     "the expanded function's Reshape targets are computed at run time: ONNX shape inference "
     "leaves dynamic dims and ATC needs static shapes"),
    (r"^test_reduce_log_sum_.*expanded",
     "ONNX shape inference cannot type the function's ReduceLogSum output (static shapes only)"),
    (r"^test_(max|average)pool_(1d|3d)", "1-D and 3-D pooling: only 2-D pooling is implemented"),
    (r"^test_averagepool_2d_(ceil|dilations)",
     "AveragePool with ceil_mode or dilations is not implemented"),
    (r"^test_maxpool_with_argmax", "MaxPool's Indices output is not implemented"),
    (r"^test_causal_conv_with_state_", "1-D Conv (3-D input): only 2-D Conv is implemented"),
    (r"^test_batchnorm_.*training_mode", "BatchNormalization training mode (running statistics "
     "outputs) is not implemented: inference only"),
    (r"^test_training_dropout(_default|_mask|_default_mask)?_cpu",
     "Dropout training mode draws random masks; inference only (the zero-ratio cases run)"),
    (r"^test_reduce_(max|min)_empty_set", "reductions over an empty axis (identity element "
     "-inf/+inf) are not implemented"),
    (r"^test_reduce_(l1|sum_square)_empty_set_expanded",
     "zero-size tensors on the AI Core vector kernels are not supported"),
    (r"^test_shape_start_greater_than_end", "zero-size graph outputs are not supported"),
]


def _node_cases():
    from onnx.backend.test.loader import load_model_tests
    return load_model_tests(kind="node")


def claimed_node_tests(bt=None) -> list[str]:
    """Names of the node tests whose every op (Constant aside) is in the op catalogue."""
    from ..model import AICPU_OPS
    ops = set(AICPU_OPS) | {"Constant"}
    out = []
    for tc in _node_cases():
        nodes = tc.model.graph.node
        if all(n.domain in ("", "ai.onnx") and n.op_type in ops for n in nodes):
            out.append(tc.name)
    return sorted(out)


def representative_node_tests(per_op: int = 2) -> list[str]:
    """CI's subset: of the claimed, not excluded node tests, the first `per_op` (by name) of
    each op-type set (`python -m bench.models --conformance` runs them all)."""
    groups: dict = {}
    for tc in _node_cases():
        if tc.name in _claimed() and not excluded(tc.name):
            key = frozenset(n.op_type for n in tc.model.graph.node) - {"Constant"}
            groups.setdefault(key, []).append(tc.name)
    return sorted(n for names in groups.values() for n in sorted(names)[:per_op])


def _claimed() -> set:
    global _CLAIMED
    if _CLAIMED is None:
        _CLAIMED = set(claimed_node_tests())
    return _CLAIMED


_CLAIMED = None


def excluded(name: str) -> bool:
    """Whether test `name` (with or without the _cpu suffix) matches an EXCLUDE pattern."""
    import re
    name = name if name.endswith("_cpu") else name + "_cpu"
    return any(re.search(p, name) for p, _ in EXCLUDE)


def ops_of_tests(bt, names) -> set:
    """The op types used by the named node tests."""
    names = set(names)
    return {n.op_type for tc in _node_cases() if tc.name in names
            for n in tc.model.graph.node}
