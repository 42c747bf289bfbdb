"""Entries of the sealed Numba cache (lang/numba_link.py, CheckedCacheFile) never answer for one
another: processes that save different entries of one function at once (another signature, or
the other link mode) each write their own data file, and an index naming a file that holds
another entry is a miss, not that entry's object code (whose entry point, called with this
signature's arguments, would crash the process)."""
import threading

import pytest

from numba import types

from ascendc.lang import numba_link
from ascendc.lang import sealed

STAMP = (1.0, 10)


def _key(ty, mode="calls"):
    return ((ty,), ("x86_64-unknown-linux-gnu", "generic", "", mode), ("code", "cells"))


def _view(path):
    """One process's view of the cache files of function `f`."""
    return numba_link.CheckedCacheFile(str(path), "f-1", STAMP)


def test_two_entries_get_two_data_files():
    a, b, c = _key(types.int64), _key(types.float64), _key(types.int64, "inlined")
    names = {sealed.data_number(k) for k in (a, b, c)}
    assert len(names) == 3
    assert sealed.data_number(a) == numba_link.data_number(_key(types.int64))


def test_saves_from_stale_indexes_do_not_overwrite_each_other(tmp_path, monkeypatch):
    """Both processes read the index before either saved (Numba chose data file 1 for both)."""
    pa, pb = _view(tmp_path), _view(tmp_path)
    ka, kb = _key(types.int64), _key(types.float64)
    monkeypatch.setattr(pb, "_load_index", lambda: {})     # B's index was read before A saved
    pa.save(ka, "object code for int64")
    pb.save(kb, "object code for float64")
    monkeypatch.undo()
    fresh = _view(tmp_path)
    assert fresh.load(kb) == "object code for float64"
    assert fresh.load(ka) is None           # A's index entry was lost: compiled again, no harm
    assert len(list(tmp_path.glob("f-1.*.nbc"))) == 2
    fresh.save(ka, "object code for int64")
    assert (fresh.load(ka), fresh.load(kb)) == ("object code for int64", "object code for float64")


def test_an_index_naming_another_entrys_data_is_a_miss(tmp_path):
    p = _view(tmp_path)
    ka, kb = _key(types.int64), _key(types.int64, "inlined")
    p.save(ka, "called primitives")
    name = p._load_index()[ka]
    p._save_index({ka: name, kb: name})      # what Numba's numbering could leave behind
    with pytest.warns(RuntimeWarning, match="another entry's data under its index"):
        assert p.load(kb) is None
    assert p.load(ka) == "called primitives"


def test_concurrent_savers_of_different_entries_only_ever_load_their_own(tmp_path):
    tys = (types.int8, types.int16, types.int32, types.int64, types.float32, types.float64)
    wrong, errors = [], []
    start = threading.Barrier(len(tys))

    def worker(ty):
        view, key = _view(tmp_path), _key(ty)
        try:
            start.wait()
            for i in range(30):
                view.save(key, ("code", str(ty), i))
                got = view.load(key)
                if got is not None and got[1] != str(ty):
                    wrong.append((ty, got))
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(ty,)) for ty in tys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong
    fresh = _view(tmp_path)
    for ty in tys:
        got = fresh.load(_key(ty))
        assert got is None or got[1] == str(ty)
