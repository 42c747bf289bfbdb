"""One small kernel with one bug per sanitizer tool, chosen by the first argument:

    python -m ascendc.sanitize --tool memcheck  examples/sanitize_demo.py oob
    python -m ascendc.sanitize --tool racecheck examples/sanitize_demo.py race
    python -m ascendc.sanitize --tool initcheck examples/sanitize_demo.py uninit
    python -m ascendc.sanitize --tool synccheck examples/sanitize_demo.py unpaired
    python -m ascendc.sanitize --leak-check yes examples/sanitize_demo.py leak
    python -m ascendc.sanitize --check-all      examples/sanitize_demo.py        (no bug: clean)

Each block copies its tile of x to UB, adds 1 and copies it to z (a copy through one buffer whose
pipes are ordered by set_flag / wait_flag). docs/sanitizer.md shows the report of each.
"""
import sys

import numpy as np

import ascendc as asc
import rt

TILE = 256


@asc.jit
def add_one(x: asc.GlobalAddress, z: asc.GlobalAddress, bug: int):
    b = asc.get_block_idx()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x[b * TILE:], TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z[b * TILE:], TILE)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, 2 * TILE * 4)
    a = buf.get_with_offset(TILE, 0, asc.float32)
    o = buf.get_with_offset(TILE, TILE * 4, asc.float32)
    n = TILE
    if bug == 3:
        n = TILE // 2                            # initcheck: half of a is never written
    asc.data_copy(a, xg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.adds(o, a, 1.0, TILE)
    if bug != 2:                                 # racecheck: MTE3 reads o before V wrote it
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    if bug == 1 and b == 3:
        asc.data_copy(zg[TILE:], o, TILE)        # memcheck: past the end of z
    else:
        asc.data_copy(zg, o, TILE)
    if bug == 4:
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 1)  # synccheck: never waited for


KEPT = []
BUGS = {"": 0, "oob": 1, "race": 2, "uninit": 3, "unpaired": 4, "leak": 0}


def main(argv):
    what = argv[0] if argv else ""
    x = np.arange(4 * TILE, dtype=np.float32)
    z = np.zeros_like(x)
    add_one[4](x, z, BUGS[what])
    if what == "leak":
        KEPT.append(rt.malloc(x.nbytes))          # device memory the script never frees
    elif what == "":
        np.testing.assert_array_equal(z, x + 1)
    print(f"sanitize_demo {what or 'clean'}: z[:4] = {z[:4]}")


if __name__ == "__main__":
    main(sys.argv[1:])
