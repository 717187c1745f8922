from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.schema import Document

from llama_index_ragonite import HTMLEvidenceParser
from llama_index_ragonite.extractive import parse_prompt
from llama_index_ragonite.prompts import OUT_OF_SCOPE

REPO = Path(__file__).resolve().parents[1]
CONFQUESTIONS = Path(os.environ.get("CONFQUESTIONS_DIR", REPO.parent / "shared" / "datasets" / "confquestions"))


def parse(html: str, doc_id: str = "page", **parser_kwargs):
    """Nodes of one page."""
    doc = Document(id_=doc_id, text=html, metadata={"title": "Test page", "url": "https://wiki.example/p/1"})
    return HTMLEvidenceParser(**parser_kwargs).get_nodes_from_documents([doc])


def of_type(nodes, kind: str):
    return [n for n in nodes if n.metadata["evidence_type"] == kind]


@pytest.fixture(scope="session")
def confquestions_documents() -> Path:
    folder = CONFQUESTIONS / "documents"
    if not folder.is_dir():
        pytest.skip(f"ConfQuestions not found at {CONFQUESTIONS} (set CONFQUESTIONS_DIR)")
    return folder


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

    Prompts without ``### Source i ###`` blocks (stock LlamaIndex prompts): the line holding it.

    ``fail_without``: raise whenever no source contains that text (a flaky cluster).
    ``delay``: async latency, to observe how many calls run at once.
    """

    keyword: str = "8443"
    fail_without: Any = None
    delay: float = 0.0
    prompts: List[str] = []
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="keyword")

    def _text(self, prompt: str) -> str:
        self.prompts.append(prompt)
        sources = parse_prompt(prompt).sources
        if self.fail_without is not None and not any(self.fail_without in s.evidence for s in sources):
            raise TimeoutError("stub timed out")
        for s in sources:
            if self.keyword in s.evidence:
                return f"{s.evidence} [Source {s.number}]"
        if not sources:  # a stock prompt without numbered sources: quote the line
            return next((line.strip() for line in prompt.splitlines() if self.keyword in line), OUT_OF_SCOPE)
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
