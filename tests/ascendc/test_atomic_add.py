"""set_atomic_add / set_atomic_none (ascendc/lang/prims/atomic.py): fixpipes of several AICs
accumulate into one GM range, with real threads; plain writes of the same range are a race the
checked mode reports; only float32 is emulated."""
import numpy as np
import pytest

import rt

import atomic_kernels as K


def _case(groups, m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    # small integers: every order of the float32 sums is exact
    a = rng.integers(-3, 4, (groups, m, k)).astype(np.float32)
    b = rng.integers(-3, 4, (groups, k, n)).astype(np.float32)
    return a, b, np.einsum("gmk,gkn->mn", a, b)


@pytest.mark.parametrize("groups,m,n,k", [(4, 32, 32, 32), (6, 21, 48, 40)])
def test_atomic_fixpipes_of_every_aic_add_up_in_gm(interpret, groups, m, n, k):
    a, b, want = _case(groups, m, n, k)
    c = np.full((m, n), 5.0, np.float32)            # the adds go on top of what is there
    K.split_k_kernel[groups](a, b, c, np.zeros(512, np.float16), m, n, k, 1,
                             interpret=interpret)
    np.testing.assert_array_equal(c, want + 5.0)


def test_plain_fixpipes_of_one_range_by_two_aics_are_a_reported_race(interpret):
    a, b, _ = _case(2, 32, 32, 32)
    with pytest.raises(rt.AclError, match=r"asc.fixpipe: GM two cores write must be ordered by a "
                                          r"cross-core flag .* or both be atomic adds "
                                          r"\(set_atomic_add; .* got AIC \d .* writing"):
        K.split_k_kernel[2](a, b, np.zeros((32, 32), np.float32), np.zeros(512, np.float16),
                            32, 32, 32, 0, interpret=interpret)


def test_set_atomic_add_of_another_dtype_than_float32_is_an_error(interpret):
    a, b, _ = _case(1, 32, 32, 32)
    with pytest.raises(rt.AclError, match=r"set_atomic_add: dtype must be float32 \(the only "
                                          r"atomic type emulated\), got dtype=float16"):
        K.split_k_kernel[1](a, b, np.zeros((32, 32), np.float32), np.zeros(512, np.float16),
                            32, 32, 32, 2, interpret=interpret)
