"""The README is a newcomer's first run: its Python snippets must work as written on the embedded
default, it must stay short, and every relative link in it and in the docs must lead somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import REPO

README = REPO / "README.md"
MAX_README_LINES = 250
DOC_FILES = [README, REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]
LINKED_FILES = [
    *DOC_FILES,
    REPO / "CHANGELOG.md",
    *sorted(p for p in (REPO / "benchmarks").rglob("*.md") if ".cache" not in p.parts),
]
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def python_blocks(text: str) -> list[str]:
    return FENCE.findall(text)


def test_readme_snippets_run_in_order(tmp_path: Path) -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 4, "README.md should show ingest, retrieval, chat and explanation snippets"
    script = tmp_path / "readme_snippets.py"
    script.write_text("\n\n".join(blocks))
    # The snippets read examples/sample_wiki relative to where they run and write their stores there.
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "sample_wiki").symlink_to(REPO / "examples" / "sample_wiki")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    assert "4 pages -> 38 evidences" in out  # 1. ingestion pipeline
    assert "Extractive answer: Bob owns the service" in out  # 1. a stock query engine, offline answerer
    assert 'of the answer came from "OTA update server"' in out  # 1. attribution through the stock engine
    assert "4 added" in out and "38 evidences written" in out  # 2. store
    lines = out.splitlines()
    first_hit = lines[next(i for i, line in enumerate(lines) if "evidences written" in line) + 1]
    assert first_hit.endswith("Release testing: Aurora 2.0")  # 2. the German question finds the English page
    assert "Extractive answer:" in out and "[Source" in out  # 3. a cited answer
    assert "OTA update server" in out  # 3. cited page of the follow-up
    assert "Attributed" in out and "% to cluster 1" in out  # 4. explanation
    assert (tmp_path / "wiki-index").is_dir() and (tmp_path / "chats.sqlite").is_file()


def test_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move reference text to docs/"


def test_ci_commands_are_the_first_two_bash_blocks() -> None:
    """.ci/run takes the line after the first and second ```bash fences as its commands."""
    lines = README.read_text().splitlines()
    commands = [lines[i + 1] for i, line in enumerate(lines) if line.startswith("```bash")][:2]
    assert commands == [
        "pip install . && python examples/quickstart.py",
        'pip install -e ".[test]" && python -m pytest',
    ]


@pytest.mark.parametrize("doc", LINKED_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_to_files(doc: Path) -> None:
    assert doc.exists(), f"{doc} is missing"
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # absolute URL or an anchor in the same page
        path = target.split("#", 1)[0]
        if not (doc.parent / path).exists():
            broken.append(target)
    assert not broken, f"{doc.relative_to(REPO)} links to missing files: {broken}"


def _package_names() -> dict:
    """Every name some module of the package lists in ``__all__`` -> that module."""
    import importlib
    import pkgutil

    import llama_index_ragonite

    names: dict = {}
    for info in pkgutil.walk_packages(llama_index_ragonite.__path__, "llama_index_ragonite."):
        for name in getattr(importlib.import_module(info.name), "__all__", []):
            names.setdefault(name, info.name)
    return names


def _names_the_docs_use(text: str) -> set:
    """Names imported from the package in the Python blocks, and names of code spans (`Name`, `name(…)`)."""
    import ast

    used = set()
    for block in python_blocks(text):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llama_index_ragonite"):
                used.update(alias.name for alias in node.names)
    # a code span starting with a name: a class, constant or function the reader may type
    used.update(n for n in re.findall(r"`([A-Za-z_]\w*)", text) if "_" in n or not n.islower())
    return used


def test_every_name_the_docs_use_imports_from_the_top_level() -> None:
    import llama_index_ragonite

    package = _package_names()
    exported = set(llama_index_ragonite.__all__)
    missing = {
        f"{doc.name}: {name} ({package[name]})"
        for doc in DOC_FILES
        if doc.name != "ARCHITECTURE.md"  # for contributors: it names internals where they live
        for name in _names_the_docs_use(doc.read_text())
        if name in package and name not in exported
    }
    assert not missing, "import these from llama_index_ragonite (add them to __all__): " + ", ".join(sorted(missing))
    assert "aexplain_response" in exported  # the check reads the docs: docs/explain.md documents it
