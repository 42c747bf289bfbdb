"""`rt.onnx_backend`: an `onnx.backend.base.Backend` on top of `rt.atc` and `rt.Model`.

    import rt.onnx_backend as backend
    rep = backend.prepare(onnx_model)          # ATC conversion (in memory) + rt.Model.load
    (y,) = rep.run([x])                        # execute on the emulated NPU

`prepare` converts the model the way `python -m rt.atc` does (static shapes: the ONNX model's
own input shapes, or `input_shape={"x": [1, 3, 224, 224]}`), loads the result onto the current
device (ACL device `device_id` of "CPU[:id]" / "NPU[:id]") and returns a `BackendRep` whose `run`
executes it synchronously. ONNX's device names know only CPU and CUDA: "CPU" is accepted because
the emulated NPU runs on the host CPU; "CUDA" is not. So ONNX's own suite runs against us with
`onnx.backend.test.BackendTest(rt.onnx_backend, __name__)` (tests/rt/models/test_onnx_backend.py).
A model the converter refuses raises `rt.atc.AtcError` from `prepare`. Needs `onnx`.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from .. import device as _dev
from ..atc import convert_to_bytes
from ..model import Model

SOC_VERSION = "Ascend910B2"


def _device_id(device: str) -> int:
    kind, _, idx = str(device).partition(":")
    if kind.upper() not in ("CPU", "NPU"):
        raise ValueError(f"rt.onnx_backend: device must be 'CPU[:id]' or 'NPU[:id]' (the "
                         f"emulated NPU), got device={device!r}")
    try:
        return int(idx) if idx else 0
    except ValueError:
        raise ValueError(f"rt.onnx_backend: device id must be an integer, got "
                         f"device={device!r}") from None


class OmBackendRep(BackendRep):
    """A converted, loaded model: `run(inputs)` -> namedtuple of numpy outputs (by output name)."""

    def __init__(self, model: Model, summary: dict):
        self.model = model
        self.summary = summary
        self._names = [d.name for d in model.outputs]

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = inputs
        elif isinstance(inputs, (list, tuple)):
            feeds = list(inputs)
        else:
            feeds = [inputs]
        if not isinstance(feeds, dict):
            feeds = [np.asarray(x) for x in feeds]
            for d, x in zip(self.model.inputs, feeds):
                if x.dtype != np.dtype(d.dtype):
                    raise TypeError(f"rt.onnx_backend: input {d.index} ({d.name!r}) must have "
                                    f"dtype {d.dtype}, got dtype={x.dtype}")
        outs = self.model.execute(feeds)
        return namedtupledict("Outputs", self._names)(*outs)


class OmBackend(Backend):
    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            _device_id(device)
        except ValueError:
            return False
        return True

    @classmethod
    def prepare(cls, model, device: str = "CPU", input_shape=None,
                soc_version: str | None = None, **kwargs) -> OmBackendRep:
        """Convert `model` (ModelProto, bytes or path) for `soc_version` (default: the emulated
        SoC, which the model must match to load) and load it on device `device`."""
        if isinstance(model, (bytes, bytearray)):
            model = onnx.load_model_from_string(bytes(model))
        elif not isinstance(model, onnx.ModelProto):
            model = onnx.load(model)
        dev = _device_id(device)
        _dev.ensure_device()
        data, summary = convert_to_bytes(model, soc_version or _dev.get_soc_name(), input_shape)
        if _dev.current_device() != dev:
            _dev.set_device(dev)
        return OmBackendRep(Model.load(data), summary)

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        """Run one NodeProto on numpy `inputs` (a one-node model with their shapes)."""
        inputs = [np.asarray(x) for x in inputs]
        names = [n for n in node.input]
        vis = [onnx.helper.make_tensor_value_info(
            n, onnx.helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
            for n, x in zip(names, inputs) if n]
        outs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = onnx.helper.make_graph([node], f"run_node_{node.op_type}", vis, outs)
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        return cls.prepare(model, device, **kwargs).run([x for n, x in zip(names, inputs) if n])


prepare = OmBackend.prepare
run_model = OmBackend.run_model
run_node = OmBackend.run_node
supports_device = OmBackend.supports_device
is_compatible = OmBackend.is_compatible
