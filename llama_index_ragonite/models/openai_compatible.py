"""``openai_compatible_llm``: any OpenAI-compatible chat server (vLLM, Ollama, LM Studio…) by model name.

Why not plain ``OpenAI(model="llama3", api_base=...)``: llama-index's ``OpenAI`` looks the model
name up in its table of OpenAI models for the context window, and the first call with a name it
does not know (``llama3``, ``Qwen/Qwen2.5-7B-Instruct``) raises ``ValueError: Unknown model``.
``OpenAICompatibleLLM`` is that class with the model's metadata given instead of looked up
(what ``llama-index-llms-openai-like``'s ``OpenAILike`` does, without a further dependency), and
``openai_compatible_llm`` gives it ``openai_llm``'s retrying SDK clients. Import this module
lazily: it needs the ``[openai]`` extra.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from llama_index.core.base.llms.types import LLMMetadata
from llama_index.core.bridge.pydantic import Field

from llama_index_ragonite.models.llms import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, OPENAI_EXTRA, retrying_arguments

try:
    from llama_index.llms.openai import OpenAI
except ImportError as err:  # pragma: no cover - imported lazily, when an openai-compatible LLM is asked for
    raise ImportError(f"openai_compatible_llm needs llama-index-llms-openai: {OPENAI_EXTRA}") from err

__all__ = ["API_KEY_VARIABLE", "DEFAULT_CONTEXT_WINDOW", "OpenAICompatibleLLM", "openai_compatible_llm"]

API_KEY_VARIABLE = "OPENAI_COMPATIBLE_API_KEY"  # not OPENAI_API_KEY: never send an OpenAI key to another server
NO_KEY = "unused"  # servers started without --api-key accept any bearer token
DEFAULT_CONTEXT_WINDOW = 8192


class OpenAICompatibleLLM(OpenAI):
    """``OpenAI`` for a server that is not OpenAI: the model's metadata comes from fields, not a lookup."""

    context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, gt=0, description="The served model's tokens.")
    is_chat_model: bool = Field(default=True, description="Use /chat/completions (False: /completions).")

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatibleLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=self.model,
            is_chat_model=self.is_chat_model,
            context_window=self.context_window,
            num_output=self.max_tokens or -1,
        )

    @property
    def _tokenizer(self) -> None:  # tiktoken knows OpenAI's models only
        return None


def openai_compatible_llm(
    model: str,
    api_base: str,
    *,
    api_key: Optional[str] = None,
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    **kwargs: Any,
) -> OpenAICompatibleLLM:
    """An ``OpenAICompatibleLLM`` for ``model`` served at ``api_base`` (e.g. ``http://localhost:8000/v1``).

    ``api_key`` defaults to ``$OPENAI_COMPATIBLE_API_KEY``, else a placeholder (local servers
    usually need none). ``kwargs`` go to ``openai_llm`` (``max_retries``, ``timeout``, ``temperature``…).
    """
    api_key = api_key or os.environ.get(API_KEY_VARIABLE) or NO_KEY
    max_retries, timeout = kwargs.pop("max_retries", DEFAULT_MAX_RETRIES), kwargs.pop("timeout", DEFAULT_TIMEOUT)
    arguments = retrying_arguments(model, max_retries, timeout, api_key, api_base, kwargs)  # checks, builds clients
    return OpenAICompatibleLLM(context_window=context_window, **arguments)
