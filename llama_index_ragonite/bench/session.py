"""What every configuration of one ``ragonite bench`` invocation shares: data, caches, models, options.

Models are loaded once per invocation, by spec: each configuration's LLM (``llm``) and embedding
model (``embedding``) come from the caller's instances for that spec when given, else from
``models.specs``; the reranker (``reranker_from_spec``: ``bge`` or a cross-encoder folder, or any
``BaseNodePostprocessor`` the caller passes) only when a configuration fuses with it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import Document

from llama_index_ragonite.bench.attribution import attribution_hook
from llama_index_ragonite.bench.config import RERANKER_SPECS, BenchConfig
from llama_index_ragonite.bench.confquestions import Question
from llama_index_ragonite.bench.embed_cache import EmbeddingCache
from llama_index_ragonite.bench.index import BenchIndex, index_folder_name
from llama_index_ragonite.bench.runner import AttributionHook, ConfigRun, ScoreHook, finished, run_config
from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec

Reranker = Union[str, BaseNodePostprocessor, None]


def reranker_from_spec(spec: str) -> BaseNodePostprocessor:
    """``bge``: the paper's bge-reranker-v2-m3; anything else: a cross-encoder folder or hub id (``[bge]`` extra)."""
    from llama_index_ragonite.models.hub_models import BGE_RERANKER, BGEReranker

    spec = (spec or "").strip()
    if not spec:
        raise ValueError(f"Empty reranker spec: use {RERANKER_SPECS}")
    return BGEReranker(model=BGE_RERANKER if spec == "bge" else spec)


def reranker_label(reranker: Reranker) -> str:
    """The name a reranker is recorded under in configurations ("" for none)."""
    if reranker is None or isinstance(reranker, str):
        return (reranker or "").strip()
    return str(getattr(reranker, "model", "") or reranker.class_name())


@dataclass
class Scoring:
    """What is measured per answer besides the built-in metrics (judge, attributions, model scores)."""

    judge_llm: Optional[LLM] = None
    attribute: Optional[AttributionHook] = None
    attributions: Sequence[str] = ()
    score: Optional[ScoreHook] = None


@dataclass
class Session:
    """Runs configurations one by one into ``out/runs/<name>``, sharing caches and models."""

    out: Path
    documents: List[Document]
    questions: List[Question]
    cache: Path
    embeddings: EmbeddingCache
    llms: Dict[str, LLM]  # spec -> instance (the caller's; more are loaded by spec on first use)
    embed_models: Dict[str, BaseEmbedding]
    reranker: Reranker = None
    scoring: Scoring = field(default_factory=Scoring)
    show_progress: bool = True
    reranker_name: str = field(init=False)

    def __post_init__(self) -> None:
        self.reranker_name = reranker_label(self.reranker)  # kept when a spec is loaded into a model

    def run(self, config: BenchConfig, name: str) -> Tuple[List[dict], dict]:
        """(records, timing) of one configuration, answering only what its run folder lacks."""
        run = ConfigRun(self.out / "runs" / slug(name), config, name)
        timing_file = run.folder / "timing.json"
        records = finished(run, self.questions)
        if records is None or not timing_file.exists():  # something to answer: build or load the index
            records = self._answer(run, timing_file)
        seconds = [r["seconds"] for r in records]
        return records, {**json.loads(timing_file.read_text()), "answer_s_mean": sum(seconds) / len(seconds)}

    def index(self, config: BenchConfig) -> BenchIndex:
        """The configuration's index, built or loaded from the cache."""
        model = self.embedding(config.embedding)
        folder = self.cache / "indexes" / index_folder_name(config)
        return BenchIndex.build(self.documents, config, model, self.embeddings, folder)

    def _answer(self, run: ConfigRun, timing_file: Path) -> List[dict]:
        config = run.config
        start = time.perf_counter()
        index = self.index(config)
        timing = {"evidences": len(index), "index_s": round(time.perf_counter() - start, 1)}
        timing_file.write_text(json.dumps(timing))
        retriever = index.retriever(self.reranker_for(config))
        llm, scoring = self.llm(config.llm), self.scoring
        hook = scoring.attribute
        if hook is None and scoring.attributions:
            hook = attribution_hook(scoring.attributions, llm, index.embed_model, retriever.stored_embeddings)
        return run_config(
            run, self.questions, retriever, llm, scoring.judge_llm, hook, self.show_progress, score=scoring.score
        )

    def llm(self, spec: str) -> LLM:
        if spec not in self.llms:
            self.llms[spec] = llm_from_spec(spec)
        return self.llms[spec]

    def embedding(self, spec: str) -> BaseEmbedding:
        if spec not in self.embed_models:
            self.embed_models[spec] = embedding_from_spec(spec)
        return self.embed_models[spec]

    def reranker_for(self, config: BenchConfig) -> Optional[BaseNodePostprocessor]:
        """The suite's reranker for a configuration that fuses with one (loaded on first use), else None."""
        if config.fusion == "rrf":
            return None
        if self.reranker is None or self.reranker_name != config.reranker:
            raise ValueError(f"{config.fusion} with reranker {config.reranker!r}: pass that reranker (--reranker)")
        if isinstance(self.reranker, str):
            self.reranker = reranker_from_spec(self.reranker)
        return self.reranker


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.=," else "_" for ch in name)
