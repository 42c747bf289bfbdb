"""What a converted graph is made of, shared by the converter (`rt.atc`) and the executor
(`rt.model`): the offline-model file format (`format`: pack, parse, the header schema), the ONNX
element-type table (`onnx_types`) and the AI CPU op set (`aicpu`: numpy implementations of every
op the file may contain, which is also the op catalogue ATC checks against; its windowed ops,
Conv and the pools of any rank, in `windowed`). See docs/models.md.
"""
