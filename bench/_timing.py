"""The one median timer of the benches."""
from __future__ import annotations

import time

import numpy as np


def interleaved_medians(variants, repeats: int, warmup: int = 1, inner: int = 1,
                        clock=time.perf_counter):
    """Median seconds per call of each variant. The variants run in turn (round-robin, so machine
    noise hits them alike) for `repeats` rounds, each round timing `inner` back-to-back calls of
    each, after `warmup` untimed calls of each (True counts as 1). `variants` is a dict
    {name: fn} (gives {name: median}) or a sequence of fns (gives a list). `clock` is any
    seconds clock (time.thread_time for one thread's CPU time)."""
    named = isinstance(variants, dict)
    fns = list(variants.values()) if named else list(variants)
    for fn in fns:
        for _ in range(int(warmup)):
            fn()
    ts = [[] for _ in fns]
    for _ in range(repeats):
        for fn, t_list in zip(fns, ts):
            t = clock()
            if inner == 1:
                fn()
            else:
                for _ in range(inner):
                    fn()
            t_list.append((clock() - t) / inner)
    meds = [float(np.median(t_list)) for t_list in ts]
    return dict(zip(variants, meds)) if named else meds


def median(fn, repeats: int, warmup: int = 1, inner: int = 1, clock=time.perf_counter) -> float:
    """Median seconds per call of `fn` (see interleaved_medians)."""
    return interleaved_medians([fn], repeats, warmup, inner, clock)[0]
