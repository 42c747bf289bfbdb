"""ascendc/adv/tilingops.py writes the TCubeTiling record field by field (Numba builds a record only
from all of its fields), so the indices in its bodies are a second copy of FIELDS and
AT_LEAST_ONE: check every field against them, so an added or reordered field cannot drift."""
import numpy as np

from ascendc.adv.tiling import FIELDS, TCubeTilingRecord
from ascendc.adv.tilingops import AT_LEAST_ONE, INDEX, tiling_new, tiling_norm, tiling_set


def _record(values):
    return TCubeTilingRecord(*(np.int64(v) for v in values))


def test_tiling_new_keeps_every_field_in_order():
    values = tuple(np.int64(10 + i) for i in range(len(FIELDS)))
    assert tuple(tiling_new(values)) == values


def test_tiling_set_writes_exactly_the_field_named():
    base = _record(range(len(FIELDS)))
    for name in FIELDS:
        got = tiling_set(base, INDEX[name], -5)
        want = [-5 if f == name else INDEX[f] for f in FIELDS]
        assert list(got) == want, name


def test_tiling_norm_raises_exactly_the_at_least_one_fields():
    got = tiling_norm(_record([0] * len(FIELDS)))
    assert [f for f, v in zip(FIELDS, got) if v == 1] == [f for f in FIELDS if f in AT_LEAST_ONE]
    assert all(v == 0 for f, v in zip(FIELDS, got) if f not in AT_LEAST_ONE)
    kept = tiling_norm(_record([7] * len(FIELDS)))
    assert all(v == 7 for v in kept)
