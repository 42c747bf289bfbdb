"""Every value-free fault raise (`raise KernelError(FAULT)`, GMReadError, GMWriteError) follows a
`fault(...)` call in the same block: the exception's message is the thread's last recorded
fault, so an unpaired raise would show an earlier, unrelated fault's text."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAULTS = {"KernelError", "GMReadError", "GMWriteError"}
# raises after a call into the launch's C bridge, which records the fault's message itself
# (crosscore: a cross-core wait that can never be released, unordered GM workspace); each says
# so in a comment on its line
BRIDGE_RECORDED = "# the bridge recorded the message"


def _is_fault_raise(node) -> bool:
    return (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
            and isinstance(node.exc.func, ast.Name) and node.exc.func.id in FAULTS
            and len(node.exc.args) == 1 and isinstance(node.exc.args[0], ast.Name)
            and node.exc.args[0].id == "FAULT")


def _is_fault_call(node) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "fault")


def test_every_value_free_fault_raise_follows_a_fault_call():
    unpaired, paired = [], 0
    for path in sorted((ROOT / "ascendc").rglob("*.py")):
        text = path.read_text()
        tree, lines = ast.parse(text, str(path)), text.splitlines()
        for node in ast.walk(tree):
            for field in ("body", "orelse", "finalbody"):
                stmts = getattr(node, field, None)
                if not isinstance(stmts, list):
                    continue
                for i, st in enumerate(stmts):
                    if _is_fault_raise(st):
                        if i > 0 and _is_fault_call(stmts[i - 1]) or \
                                BRIDGE_RECORDED in lines[st.lineno - 1]:
                            paired += 1
                        else:
                            unpaired.append(f"{path.relative_to(ROOT)}:{st.lineno}")
    assert not unpaired, f"raise X(FAULT) without a fault(...) just before it: {unpaired}"
    assert paired > 50          # the check found the primitives' raises
