"""The documentation: the README is short and starts with the two commands, docs/index.md lists
every page, every relative link resolves, no file cites a document or tracker the repository
does not have, and the README's and docs/usage.md's examples run as written."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COMMANDS = ("pip install -e '.[bench]' && python -m bench.flash_attention\n"
            "pip install -e '.[test]' && python -m pytest -q -n 2 --dist loadfile tests\n")
SKIP_DIRS = {"__pycache__", "build", "dist", "fa_profile", "node_modules"}


def repo_files(*suffixes):
    for p in sorted(ROOT.rglob("*")):
        rel = p.relative_to(ROOT)
        if (p.suffix in suffixes and p.is_file()
                and not any(part.startswith(".") or part in SKIP_DIRS
                            or part.endswith(".egg-info") for part in rel.parts[:-1])):
            yield p


def markdown_pages():
    return [README] + sorted(DOCS.glob("*.md"))


def outside_code(text: str) -> str:
    """`text` without its fenced code blocks and inline code spans."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return s.replace(" ", "-")


# Patterns are split so this file does not match itself.
CITES = [(re.compile("DES" + r"IGN(\.md)?\b"), "a design file the repository does not have"),
         (re.compile(r"\biss" + r"ues?\s+#?\d", re.I), "a tracker's issue number"),
         (re.compile("/wo" + r"rk/|shared/refer" + "ence"), "a path of the machine it ran on")]


def test_no_file_cites_a_document_or_tracker_the_repository_does_not_have():
    bad = []
    for p in repo_files(".py", ".md"):
        text = p.read_text(encoding="utf-8", errors="replace")
        for pat, what in CITES:
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{p.relative_to(ROOT)}:{line}: {m.group(0)!r} ({what})")
    assert not bad, "say the rule itself or point at a docs/ page:\n" + "\n".join(bad)


def test_every_relative_link_points_at_an_existing_file_and_heading():
    bad = []
    for page in markdown_pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", outside_code(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue                                            # http(s), mailto
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md":
                heads = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", dest.read_text(),
                                                         flags=re.S), re.M)
                if anchor not in {slug(h) for h in heads}:
                    bad.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not bad, "\n".join(bad)


def test_the_index_lists_every_page_of_docs_once():
    index = (DOCS / "index.md").read_text()
    listed = re.findall(r"^- \[[^\]]+\]\(([^)#]+)\)", index, re.M)
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md")
    assert sorted(listed) == pages


def test_the_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text()
    assert len(text.encode()) <= 10 * 1024
    first_block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first_block.group(1) == COMMANDS
    assert text.index("```bash") < text.index("\n## ")            # before any section
    for name in ("`asc`", "`rt`", "`rt.acl`", "`kernels`", "`rt.npu`", "`rt.hccl`", "`rt.atc`",
                 "`acl.media`"):
        assert f"| {name}" in text, name                             # the map of the concepts
    assert "docs/index.md" in text


def test_performance_numbers_have_dates_and_commands():
    """Every row of docs/performance.md's tables names a date and a command."""
    text = (DOCS / "performance.md").read_text()
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert len(rows) > 20
    for r in rows:
        assert re.search(r"\| \d{4}-\d\d-\d\d \|", r), r
        assert re.search(r"`(python|mpiexec|PYASC_SRC)[^`]*`|none in `bench/`", r), r


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def run_script(tmp_path, name, source):
    script = tmp_path / name
    script.write_text(source)
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.slow
def test_the_readme_kernel_and_the_asynchronous_launch_run_as_written(tmp_path):
    kernel, = python_blocks(README)
    asynchronous = [b for b in python_blocks(DOCS / "usage.md") if "rt.Stream()" in b]
    assert len(asynchronous) == 1
    run_script(tmp_path, "readme_kernel.py", kernel + asynchronous[0])


@pytest.mark.slow
def test_the_usage_cube_kernel_runs_as_written(tmp_path):
    cube = [b for b in python_blocks(DOCS / "usage.md") if "asc.adv.Matmul" in b]
    assert len(cube) == 1
    run_script(tmp_path, "usage_cube_kernel.py", cube[0])
