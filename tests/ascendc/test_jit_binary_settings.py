"""The binary a launch runs is shared by every thread launching that kernel with the same
settings: its MIX spec (`mix`, `kfc`) is fixed when it is built, never written by a launch."""
import threading

import numpy as np

import rt
from ascendc import record_launches

import mix_kernels as K


def test_each_binary_keeps_the_mix_spec_of_its_own_settings_under_concurrent_launches(interpret):
    """A MIX kernel launched checked and unchecked from two threads at once: two binaries, each
    with the MIX spec of its settings (flag limits checked or not) from the moment it is built,
    and replays of each see that spec whatever the other thread launches."""
    rt.ensure_device()
    bd = 2
    start, errors, recs = threading.Barrier(2), [], {}

    def run(checked):
        try:
            rt.set_device(0)
            out = rt.device_empty((3 * bd * 8,), np.int32)
            s = rt.Stream()
            start.wait()
            with record_launches() as rec:
                K.numbering_kernel[bd, s](out, interpret=interpret, checked=checked)
            (p,) = rec.launches
            for _ in range(10):
                assert p.binary.mix is not None and p.binary.mix.check_limit == checked
                out.copy_from_host(np.full(3 * bd * 8, -1, np.int32))
                p(s)
                s.synchronize()
                rows = [tuple(int(v) for v in r) for r in out.copy_to_host().reshape(3 * bd, 8)]
                assert rows == [(g, bd, 0, 1, 1, 1, 0, 7) for g in range(bd)] + \
                    [(v, bd, v % 2, 2, 2, 0, 1, 7) for v in range(2 * bd)]
            recs[checked] = p
        except BaseException as exc:    # noqa: BLE001 - reported by the main thread
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(c,)) for c in (True, False)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert recs[True].binary is not recs[False].binary
