"""How LlamaIndex's LLM interface reaches the extractive answerer: the template variables of the call in
progress (a context variable: concurrent calls never mix) and answers handed back as streams."""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, AsyncGenerator, Dict, Generator, Iterator, Optional

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen
from llama_index.core.prompts import BasePromptTemplate

__all__ = ["VARIABLES", "as_async", "call_variables", "stream_pieces", "streamed", "template_variables"]

# The template variables of the predict/stream call in progress (per task/thread: concurrent calls never mix).
VARIABLES: ContextVar[Optional[Dict[str, Any]]] = ContextVar("ragonite_template_variables", default=None)


def stream_pieces(text: str) -> Generator[str, None, None]:
    """Word-by-word deltas (each word with its following whitespace), concatenating to ``text``."""
    yield from re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


@contextmanager
def call_variables(variables: Optional[Dict[str, Any]]) -> Iterator[None]:
    """``variables`` are the template variables of the completion made inside the block."""
    token = VARIABLES.set(variables)
    try:
        yield
    finally:
        VARIABLES.reset(token)


def template_variables(prompt: BasePromptTemplate, prompt_args: Dict[str, Any]) -> Dict[str, Any]:
    """The template's partial variables and the call's, as the template is filled with them."""
    return {**(getattr(prompt, "kwargs", None) or {}), **prompt_args}


async def as_async(responses: Iterator[Any]) -> AsyncGenerator[Any, None]:
    """Responses computed already, as the async generator LlamaIndex expects."""
    for response in responses:
        yield response


def streamed(text: str) -> CompletionResponseGen:
    so_far = ""
    for piece in stream_pieces(text):
        so_far += piece
        yield CompletionResponse(text=so_far, delta=piece)
