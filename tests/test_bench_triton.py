"""bench.triton_peers without triton: the probe returns a bool and main() skips cleanly.
(No Numba compiles and no triton needed here.)"""
import subprocess
import sys

import bench.triton_peers as tp


def test_triton_available_returns_bool(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the probe sets it; restored after the test
    assert isinstance(tp.triton_available(), bool)


def test_main_without_triton_prints_message_and_returns_0(monkeypatch, capsys):
    monkeypatch.setattr(tp, "triton_available", lambda: False)
    assert tp.main([]) == 0
    assert "triton not installed" in capsys.readouterr().out


def test_import_does_not_import_triton_or_set_interpret():
    code = ("import os, sys, bench.triton_peers; "
            "print('triton' in sys.modules, os.environ.get('TRITON_INTERPRET'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={k: v for k, v in __import__("os").environ.items()
                                          if k != "TRITON_INTERPRET"}).stdout.split()
    assert out == ["False", "None"]
