"""`python -m rt.atc`: ONNX -> offline model for `rt.Model` / `acl.mdl` (mirrors CANN's `atc`).
See docs/models.md for the file format and what the conversion does."""
from .convert import AtcError, convert, convert_to_bytes, parse_input_shape

__all__ = ["AtcError", "convert", "convert_to_bytes", "parse_input_shape"]
