import pathlib
import sys

import pytest

pytest.importorskip("onnx")
sys.path.insert(0, str(pathlib.Path(__file__).parent))
