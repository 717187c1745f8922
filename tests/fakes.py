"""Shared test doubles and helpers: tiny real components (a hashing embedding, a keyword LLM), event capture, sample pages."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import math
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Optional

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import Document, NodeWithScore, QueryBundle

from llama_index_ragonite import HTMLEvidenceParser
from llama_index_ragonite.models.extractive import parse_prompt
from llama_index_ragonite.prompts import OUT_OF_SCOPE

REPO = Path(__file__).resolve().parents[1]
CONFQUESTIONS = Path(os.environ.get("CONFQUESTIONS_DIR", REPO.parent / "shared" / "datasets" / "confquestions"))


def parse(html: str, doc_id: str = "page", **parser_kwargs):
    """Nodes of one page."""
    doc = Document(id_=doc_id, text=html, metadata={"title": "Test page", "url": "https://wiki.example/p/1"})
    return HTMLEvidenceParser(**parser_kwargs).get_nodes_from_documents([doc])


def of_type(nodes, kind: str):
    return [n for n in nodes if n.metadata["evidence_type"] == kind]


class HashingEmbedding(BaseEmbedding):
    """Deterministic bag-of-words embedding for tests (no model)."""

    dim: int = 256
    model_name: str = "hashing-bow"

    @classmethod
    def class_name(cls) -> str:
        return "HashingEmbedding"

    def _vec(self, text: str) -> List[float]:
        v = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._vec(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._vec(text)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._vec(query)


class _Collect(BaseEventHandler):
    events: list = []

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event, **kwargs) -> None:
        self.events.append(event)


@contextmanager
def collected_events() -> Iterator[list]:
    """Every instrumentation event fired inside the block, in order (root dispatcher)."""
    handler = _Collect(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        yield handler.events
    finally:
        root.event_handlers.remove(handler)


class KeywordLLM(CustomLLM):
    """Answers with the first source containing ``keyword`` (cited by its number), else out of scope.

    Prompts without ``### Source i ###`` blocks (stock LlamaIndex prompts): the line holding it,
    without a leading label (a refine prompt's "existing answer: ").

    ``ignore_case``: match the keyword in any case. ``fixed_answer``: answer this (cited by the
    first matching source) instead of the source's text, so the answer survives while any
    matching source remains. ``fail_on``: raise on prompts containing that text.
    ``fail_without``: raise whenever no source contains that text (a flaky cluster).
    ``delay``: async latency, to observe how many calls run at once (``max_in_flight``).
    ``prompts``: every prompt seen.
    """

    keyword: str = "8443"
    ignore_case: bool = False
    fixed_answer: Optional[str] = None
    fail_on: Optional[str] = None
    fail_without: Optional[str] = None
    delay: float = 0.0
    prompts: List[str] = []
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="keyword")

    def _matches(self, text: str) -> bool:
        return self.keyword.lower() in text.lower() if self.ignore_case else self.keyword in text

    def _text(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail_on is not None and self.fail_on in prompt:
            raise RuntimeError(f"cannot answer prompts with {self.fail_on!r}")
        sources = parse_prompt(prompt).sources
        if self.fail_without is not None and not any(self.fail_without in s.evidence for s in sources):
            raise TimeoutError("stub timed out")
        for s in sources:
            if self._matches(s.evidence):
                return f"{self.fixed_answer or s.evidence} [Source {s.number}]"
        if not sources:  # a stock prompt without numbered sources: quote the line (after any "label: ")
            return next(
                (line.split(": ")[-1].strip() for line in prompt.splitlines() if self._matches(line)), OUT_OF_SCOPE
            )
        return OUT_OF_SCOPE

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            return CompletionResponse(text=self._text(prompt))
        finally:
            self.in_flight -= 1

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield CompletionResponse(text=self._text(prompt), delta=self._text(prompt))


class CountingEmbedding(HashingEmbedding):
    """HashingEmbedding that records every text it embedded (set ``texts = []`` before counting)."""

    texts: List[str] = []

    def _get_text_embedding(self, text: str) -> List[float]:
        self.texts.append(text)
        return super()._get_text_embedding(text)


WIKI_PAGES = {
    "team": "<title>Team</title><h1>Members</h1><table><tr><th>Member</th><th>Task</th></tr>"
    "<tr><td>Alice</td><td>Parsing wiki pages</td></tr><tr><td>Bob</td><td>Ranking evidences</td></tr></table>",
    "install": "<title>Install guide</title><h1>Install</h1><ol><li>Boot the installer</li>"
    "<li>Choose Erase and Install</li></ol><p>Installing takes ten minutes.</p>",
    "faq": "<title>FAQ</title><h2>Upgrades</h2><p>Over-the-air upgrades need a reboot afterwards.</p>",
}


def wiki_documents(pages=WIKI_PAGES):
    """Documents of a three-page wiki (a table, a list, a passage)."""
    return [Document(id_=k, text=v, metadata={"url": f"https://wiki.example/{k}"}) for k, v in pages.items()]


class KeywordReranker(BaseNodePostprocessor):
    """Toy cross-encoder: scores a node by how many query words its raw text contains."""

    @classmethod
    def class_name(cls) -> str:
        return "KeywordReranker"

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        words = set(query_bundle.query_str.lower().split())
        for n in nodes:
            n.score = float(sum(w in n.node.text.lower() for w in words))
        return sorted(nodes, key=lambda n: -n.score)


@contextmanager
def parse_trees_left() -> Iterator[List[int]]:
    """``[n]`` after the block: bs4 elements it left alive, counted with the cyclic collector off,
    so a tree that only a later collection would free counts."""
    from bs4.element import PageElement

    def live() -> int:
        return sum(isinstance(o, PageElement) for o in gc.get_objects())

    gc.collect()
    before, left = live(), []
    gc.disable()
    try:
        yield left
        left.append(live() - before)
    finally:
        gc.enable()
