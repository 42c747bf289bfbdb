"""The sanitizer sweep: the suite's kernel launches run under `asc.sanitize(check_all=True)`.

    ASCEND_EMU_SANITIZE_SWEEP=sweep.json python -m pytest -q tests/kernels ...

With the variable set (tests/conftest.py loads this module), every test runs inside its own
sanitizer session (all four tools) whose faults still raise as in checked mode, so a test that
expects a kernel error still gets it. Each launch is then one of:
  - clean: it ended and nothing was found;
  - expected: a block faulted and the fault went to the test (a test that provokes the error on
    purpose passes; its launch's findings are listed, not counted);
  - finding: it ended without a fault and the sanitizer found something (a false positive of the
    sanitizer, or a true bug of the kernel: both need fixing).
Tests that open a session of their own (tests/sanitize) are not wrapped. A test that passes
normally but fails under the sweep is listed too (the sanitizer changed what the kernel did, or
the test expects a raise the sanitizer turns into a report: the GM-order check); a test that
failed with pytest.raises' "DID NOT RAISE" while its launches had findings is taken to be such
a test (it provokes the error on purpose) and listed apart, its findings as expected. A block
whose trace outgrew the trace buffer ("block too long to analyse whole": the sanitizer analysed
its first rows only) is a note, listed apart and not counted as a finding. At the
end the counts and every finding go to the terminal and, as JSON, to the file the variable
names (and test by test, as JSON lines, to that name + "l"). ASCEND_EMU_SANITIZE_SWEEP_ONE=1
keeps one case per test function.
"""
from __future__ import annotations

import json
import os

import pytest

ENV = "ASCEND_EMU_SANITIZE_SWEEP"
PARTLY = "block too long to analyse whole"      # session.py's note for a trace cut short
_RESULTS: list = []          # one dict per test


def _own_session(item) -> bool:
    """Does the test open a sanitizer session itself (its module calls asc.sanitize)?"""
    path = str(getattr(item, "path", item.fspath))
    if os.sep + "sanitize" + os.sep in path or path.endswith("sanitize_sweep.py"):
        return True
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return False
    return "asc.sanitize(" in text or "ascendc.sanitize" in text


def _finding(f) -> dict:
    return {"class": f.cls, "kind": f.kind, "kernel": f.kernel, "block": f.block,
            "where": f"{f.where[0]}:{f.where[1]}" if f.where else "",
            "other": f"{f.other[0]} {f.other[1][0]}:{f.other[1][1]}"
            if f.other and f.other[1] else "", "address": f.address, "detail": f.detail[:300]}


@pytest.fixture(autouse=True)
def _sanitize_sweep(request):
    from ascendc.sanitize.session import Session
    item = request.node
    if _own_session(item):
        item._sweep = "own"
        yield
        return
    session = Session(check_all=True, raise_faults=True)
    session.start()
    try:
        yield
    finally:
        session.stop()
        item._sweep = session


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item._sweep_outcome = rep.outcome
        item._sweep_no_raise = rep.failed and "DID NOT RAISE" in str(rep.longrepr)
    if rep.when == "teardown":
        session = getattr(item, "_sweep", None)
        entry = {"test": item.nodeid, "outcome": getattr(item, "_sweep_outcome", "skipped"),
                 "own_session": session == "own", "launches": 0, "kernels": [],
                 "expected": [], "findings": [], "notes": []}
        if session is not None and session != "own":
            entry["launches"] = len(session.launches)
            entry["kernels"] = sorted({name for name, _, _ in session.launches})
            for name, faulted, found in session.launches:
                for f in found:
                    target = ("expected" if faulted else
                              "notes" if f.kind == PARTLY else "findings")
                    entry[target].append(_finding(f))
            if getattr(item, "_sweep_no_raise", False) and entry["findings"]:
                # the test expects checked mode's error (a race it provokes on purpose) and the
                # sanitizer reported it instead of raising: expected, not a false positive
                entry["reported_instead"] = True
                entry["expected"] += entry["findings"]
                entry["findings"] = []
        _RESULTS.append(entry)
        path = os.environ.get(ENV)
        if path and path not in ("1", "yes"):       # as it goes: a cut-short sweep keeps them
            with open(path + "l", "a") as f:
                f.write(json.dumps(entry) + "\n")


def pytest_collection_modifyitems(config, items):
    """With ASCEND_EMU_SANITIZE_SWEEP_ONE=1: one case per test function (its first parameter
    set), a cheaper sweep over every test."""
    if os.environ.get(ENV + "_ONE") != "1":
        return
    seen, keep, drop = set(), [], []
    for item in items:
        key = (str(getattr(item, "path", item.fspath)), getattr(item, "originalname", item.name))
        (drop if key in seen else keep).append(item)
        seen.add(key)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


def summary(results: list) -> dict:
    wrapped = [r for r in results if not r["own_session"]]
    kernels = sorted({k for r in wrapped for k in r["kernels"]})
    return {
        "tests": len(results), "wrapped": len(wrapped),
        "tests_with_launches": sum(1 for r in wrapped if r["launches"]),
        "launches": sum(r["launches"] for r in wrapped), "kernels": len(kernels),
        "kernel_names": kernels,
        "tests_expecting_errors": sum(1 for r in wrapped if r["expected"]),
        "tests_with_findings": [r["test"] for r in wrapped if r["findings"]],
        "findings": sum(len(r["findings"]) for r in wrapped),
        "partly_analysed": [r["test"] for r in wrapped if r.get("notes")],
        "failed_under_sweep": [r["test"] for r in wrapped if r["outcome"] == "failed"
                               and not r.get("reported_instead")],
        "reported_instead_of_raised": [r["test"] for r in wrapped if r.get("reported_instead")],
    }


def pytest_terminal_summary(terminalreporter):
    s = summary(_RESULTS)
    tr = terminalreporter
    tr.section("sanitizer sweep (asc.sanitize(check_all=True))")
    tr.write_line(f"{s['wrapped']} tests wrapped ({s['tests'] - s['wrapped']} open their own "
                  f"session), {s['tests_with_launches']} launched kernels: {s['launches']} "
                  f"launches of {s['kernels']} kernels; {s['tests_expecting_errors']} tests "
                  f"provoked a kernel fault on purpose")
    tr.write_line(f"findings in launches that ran to their end: {s['findings']}")
    for r in _RESULTS:
        for f in r["findings"]:
            tr.write_line(f"  {r['test']}: {f['class']} {f['kind']} in {f['kernel']} "
                          f"{f['block']} at {f['where']} ({f['other']})")
    for t in s["partly_analysed"]:
        tr.write_line(f"  note: a block too long to analyse whole (its first rows analysed): {t}")
    for t in s["failed_under_sweep"]:
        tr.write_line(f"  failed under the sweep: {t}")
    for t in s["reported_instead_of_raised"]:
        tr.write_line(f"  expected: checked mode's error reported, not raised: {t}")
    path = os.environ.get(ENV)
    if path and path not in ("1", "yes"):
        with open(path, "w") as f:
            json.dump({"summary": s, "tests": _RESULTS}, f, indent=1)
