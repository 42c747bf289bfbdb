"""Sealed cache files: each pickle of the kernel language's disk caches behind a magic line and
its SHA-256, so a changed or cut-short byte is detected and the entry dropped and rebuilt
(numba_link's CheckedCacheFile, ascendc.compiler.cache)."""
from __future__ import annotations

import hashlib
import os
import pickle
import warnings

import numba

SEAL_MAGIC = b"ascendc-sealed-sha256\n"
_SEAL_LEN = len(SEAL_MAGIC) + 32


def seal(payload: bytes) -> bytes:
    """`payload` (a pickle) behind a magic line and its SHA-256."""
    return SEAL_MAGIC + hashlib.sha256(payload).digest() + payload


def unseal(blob: bytes) -> tuple:
    """(payload, None) if `blob` is a sealed payload whose SHA-256 matches, else (None, why)."""
    if not blob.startswith(SEAL_MAGIC):
        return None, f"no ascendc seal in its first {len(SEAL_MAGIC)} bytes"
    payload = blob[_SEAL_LEN:]
    digest = blob[len(SEAL_MAGIC):_SEAL_LEN]
    if len(blob) < _SEAL_LEN or hashlib.sha256(payload).digest() != digest:
        return None, (f"a SHA-256 that does not match its {len(payload)} bytes (changed or cut "
                      f"short)")
    return payload, None


def read_sealed_index(path) -> tuple:
    """(numba version, (stamp, overloads)) of a CheckedCacheFile index; raises ValueError naming
    the damage (or the unpickling error of a damaged version header)."""
    with open(path, "rb") as f:
        version = pickle.load(f)
        blob = f.read()
    if version != numba.__version__:
        return version, None             # another Numba's index: not ours to judge
    payload, why = unseal(blob)
    if why is not None:
        raise ValueError(why)
    return version, pickle.loads(payload)


def heal_warning(path, why: str) -> None:
    warnings.warn(f"ascendc kernel cache: Numba's cache of {os.path.basename(path)} must be "
                  f"whole, got {why}; dropping it (it is rebuilt once)", RuntimeWarning,
                  stacklevel=4)


def data_number(key) -> int:
    """The number in the data file name of cache entry `key`: from a hash of the key, so two
    processes saving different entries at once never write the same file."""
    return int(hashlib.sha256(repr(key).encode()).hexdigest()[:12], 16)
