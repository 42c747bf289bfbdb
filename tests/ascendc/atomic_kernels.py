"""Kernels of tests/ascendc/test_atomic_add.py (module-level, so both modes share compiled code)."""
import ascendc as asc
from mix_kernels import _cube_queues, _cube_tile


@asc.jit(kernel_type="MIX_AIC_1_2")
def split_k_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                   zeros: asc.GlobalAddress, m: int, n: int, k: int, mode: int):
    """C (+)= sum over blocks g of A_g @ B_g (A_g: m x k at a + g m k, B_g: k x n at
    b + g k n): every AIC fixpipes its product to the whole of C. mode 1: under
    set_atomic_add(float32) (the products add up); 0: plain writes (a race); 2:
    set_atomic_add(float16) (an error)."""
    g = asc.get_block_idx()
    pipe = asc.TPipe()
    if asc.ascend_is_aic():
        ag = asc.GlobalTensor()
        ag.set_global_buffer(a + g * m * k)
        bg = asc.GlobalTensor()
        bg.set_global_buffer(b + g * k * n)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(zeros)
        cg = asc.GlobalTensor()
        cg.set_global_buffer(c)
        qa1, qb1, qa2, qb2, qc = _cube_queues(pipe, a.dtype.sizeof(), n, k)
        if mode == 1:
            asc.set_atomic_add(asc.float32)
        if mode == 2:
            asc.set_atomic_add(asc.float16)
        _cube_tile(ag, bg, zg, cg, qa1, qb1, qa2, qb2, qc, 0, m, n, k)
        asc.set_atomic_none()
