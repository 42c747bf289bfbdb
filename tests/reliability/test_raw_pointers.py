"""acl.util's raw-pointer helpers validate before touching memory: a bogus, freed or too-long
host range ends in 107000 (ACL_ERROR_RT_PARAM_INVALID) with a message, never a SIGSEGV."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rt
import rt.acl as acl


def test_bogus_pointers_are_refused_not_a_segfault():
    code = textwrap.dedent("""
        import mmap, numpy as np, rt, rt.acl as acl
        acl.init(); acl.rt.set_device(0)
        mm = mmap.mmap(-1, 4096)
        addr = np.frombuffer(mm, np.uint8).ctypes.data
        host, _ = acl.rt.malloc_host(64)
        acl.rt.free_host(host)
        cases = [("bogus", lambda: acl.util.ptr_to_bytes(0x10, 8)),
                 ("bogus-numpy", lambda: acl.util.ptr_to_numpy(0xdead0000, (4,), 11)),
                 ("freed-pinned", lambda: acl.util.ptr_to_bytes(host, 64)),
                 ("past-the-end", lambda: acl.util.ptr_to_bytes(addr + 4000, 1 << 20)),
                 ("negative-shape", lambda: acl.util.ptr_to_numpy(addr, (-1,), 11)),
                 ("negative-size", lambda: acl.util.ptr_to_bytes(addr, -5))]
        for name, call in cases:
            try:
                call()
                print(name, "RETURNED")
            except rt.AclError as e:
                print(name, e.code, e.message)
        print("ALIVE")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.splitlines()[-1] == "ALIVE"
    lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines()[:-1])
    for name in ("bogus", "bogus-numpy", "freed-pinned", "past-the-end"):
        assert lines[name].startswith("107000 ptr_to_"), lines[name]
        assert "must point to" in lines[name] and "bytes of live host memory" in lines[name]
    assert lines["negative-shape"].startswith("107000 ptr_to_numpy: shape must be an int or a "
                                              "sequence of ints >= 0, got shape=(-1,)")
    assert lines["negative-size"].startswith("107000 ptr_to_bytes: size must be an int >= 0, "
                                             "got size=-5")


def test_valid_pointers_still_work(dev0):
    a = np.arange(8, dtype=np.float32)
    p = acl.util.numpy_to_ptr(a)
    assert acl.util.ptr_to_bytes(p, 32) == a.tobytes()
    v = acl.util.ptr_to_numpy(p, (2, 4), np.float32)
    v[0, 0] = 42                                            # a view, as in pyACL
    assert a[0] == 42
    host, ret = acl.rt.malloc_host(64)
    assert ret == 0
    pinned = acl.util.ptr_to_numpy(host, (16,), 11)        # NPY_FLOAT32
    pinned[:] = 3
    assert acl.util.ptr_to_bytes(host + 4, 4) == np.float32(3).tobytes()
    with pytest.raises(rt.AclError, match=r"ptr_to_bytes: ptr must point to 128 bytes of live "
                                          r"host memory .* past the end of the pinned buffer"):
        acl.util.ptr_to_bytes(host, 128)                    # past the pinned buffer's end
    acl.rt.free_host(host)
