"""asc.adv.softmax / asc.adv.SoftmaxTiling in compiled kernels: what the `asc.adv` lowering
(ascendc/adv/lowering.py -> adv/softmax.py lower_softmax*) refuses while compiling."""
import numpy as np
import pytest

import ascendc as asc


@asc.jit
def positional_tiling_kernel(x: asc.GlobalAddress, n: int):
    t = asc.adv.SoftmaxTiling(8, 64)
    asc.adv.softmax(x, x, x, x, t)


@asc.jit
def unknown_field_kernel(x: asc.GlobalAddress, n: int):
    t = asc.adv.SoftmaxTiling(srcM=8)
    asc.adv.softmax(x, x, x, x, t)


@asc.jit
def unknown_keyword_kernel(x: asc.GlobalAddress, n: int):
    t = asc.adv.SoftmaxTiling()
    asc.adv.softmax(x, x, x, x, t, tmp=x)


@asc.jit
def missing_tiling_kernel(x: asc.GlobalAddress, n: int):
    asc.adv.softmax(x, x, x, x)


@pytest.mark.parametrize("kernel,message", [
    (positional_tiling_kernel, r"asc.adv.SoftmaxTiling: fields must be given by keyword \(f=v\), "
                               r"got 2 positional arguments"),
    (unknown_field_kernel, r"asc.adv.SoftmaxTiling: field must be one of SoftmaxTiling's fields "
                           r"\(src_m, .*\), got 'srcM'"),
    (unknown_keyword_kernel, r"asc.adv.softmax: arguments must be \(dst, sum, max, src, tiling, "
                             r"temp_buffer, .*\), got keyword 'tmp'"),
    (missing_tiling_kernel, r"asc.adv.softmax: arguments must include tiling, got none"),
])
def test_compiled_softmax_refusals(kernel, message):
    with pytest.raises(asc.CompileError, match=message):
        kernel[1](np.zeros(8, np.float32), 8, interpret=False)
