"""Timing shared by the benches."""
from __future__ import annotations

import time

import numpy as np


def interleaved_medians(variants: dict, repeats: int, warmup: bool = True) -> dict:
    """{name: median seconds}: the variants run in turn (round-robin, so machine noise hits
    them alike), `repeats` rounds, after one untimed run of each if `warmup`."""
    if warmup:
        for fn in variants.values():
            fn()
    ts = {k: [] for k in variants}
    for _ in range(repeats):
        for k, fn in variants.items():
            t = time.perf_counter()
            fn()
            ts[k].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in ts.items()}
