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


@pytest.mark.parametrize("with_locks", [True, False])
def test_atomic_adds_of_threads_racing_on_one_tile_lose_nothing(with_locks):
    """The fixpipe's atomic loop itself, from real threads at once (it releases the GIL): the
    granule lock words (core.ATOMIC_LOCKS) and the per-element compare-and-swap without them."""
    import threading
    from ascendc.lang.core import ATOMIC_LOCKS
    from ascendc.lang.prims.atomic import fix_loop_atomic
    msz, nsz = 16, 64                       # a 16 x 64 float32 tile, NZ in L0C, ND in GM
    src = np.ones(msz * nsz, np.float32)
    dst = np.full(msz * nsz + 8, 2.0, np.float32)
    out = dst[3:3 + msz * nsz]              # not granule-aligned: rows straddle lock words
    locks = ATOMIC_LOCKS.ctypes.data if with_locks else 0
    rounds, nthreads, nd = 100, 4, 64       # nd: the same tile added 64 times per call
    fix_loop_atomic(out, src, nsz, msz, msz, nsz, nd, 0, 0, 0, False, locks)    # compile

    def run():
        for _ in range(rounds):
            fix_loop_atomic(out, src, nsz, msz, msz, nsz, nd, 0, 0, 0, False, locks)
    threads = [threading.Thread(target=run) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(out, 2.0 + nd * (1 + rounds * nthreads))
    assert (dst[:3] == 2.0).all() and (dst[3 + msz * nsz:] == 2.0).all()
    assert not ATOMIC_LOCKS.any()            # every lock word released
