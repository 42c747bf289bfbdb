"""First launches of compiled kernels from many threads at once (a fresh process, a cold kernel
cache): building a kernel (ast.parse, codegen) and Numba's first compile of its dispatcher run
under one lock, so none fails (they used to: `SystemError: AST constructor recursion depth
mismatch`, Numba's `duplicate registration`) and every result is right."""
import os
import subprocess
import sys
import textwrap

import pytest

KERNELS = 6

# distinct kernels need distinct functions (one per source): write them out
KERNEL_SRC = "\n".join(textwrap.dedent(f"""
    @asc.jit
    def k{i}(x: asc.GlobalAddress, n: asc.ConstExpr[int]):
        g = asc.GlobalTensor()
        g.set_global_buffer(x, n)
        for j in range(n):
            g.set_value(j, g.get_value(j) * 2.0 + {i}.0)
""") for i in range(KERNELS))

MAIN = textwrap.dedent(f"""
    import threading, numpy as np, ascendc as asc, rt
    {{kernels}}
    rt.init(); rt.set_device(0)
    kernels = [{", ".join(f"k{i}" for i in range(KERNELS))}]
    start = threading.Barrier(len(kernels))
    errors, wrong = [], []

    def launch(i, k):
        rt.set_device(0)
        x = np.arange(8, dtype=np.float32)
        start.wait()
        try:
            k[1](x, 8)
        except Exception as e:
            errors.append(f"{{type(e).__name__}}: {{e}}")
            return
        if not np.array_equal(x, np.arange(8, dtype=np.float32) * 2 + i):
            wrong.append(i)
    ts = [threading.Thread(target=launch, args=(i, k)) for i, k in enumerate(kernels)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("ERRORS", len(errors), errors[:3])
    print("WRONG", wrong)
""")


@pytest.mark.slow
def test_concurrent_first_launches_of_compiled_kernels(tmp_path):
    script = tmp_path / "first_launch.py"
    script.write_text(MAIN.replace("{kernels}", KERNEL_SRC))
    env = dict(os.environ, ASCENDC_CACHE_DIR=str(tmp_path / "kc"))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ERRORS 0 []" in p.stdout and "WRONG []" in p.stdout, p.stdout + p.stderr[-3000:]
