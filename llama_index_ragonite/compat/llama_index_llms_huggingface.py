"""A ``HuggingFaceLLM``'s own Transformers model and tokenizer (llama-index-llms-huggingface; not a
dependency of this package, so checked only where installed: the read dates from its 0.4 releases).

Attention relevance (``explain/attention.py``) reads the attentions of the model that answered. The
LLM keeps the model and tokenizer it loaded in the private ``_model`` / ``_tokenizer`` and exposes
only their names; any LLM that has neither is refused with a message saying what to pass instead.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

__all__ = ["model_and_tokenizer"]


def model_and_tokenizer(llm: Any) -> Tuple[Optional[Any], Optional[Any]]:
    """``llm``'s loaded Transformers model and tokenizer (``_model``, ``_tokenizer``), or None each."""
    return getattr(llm, "_model", None), getattr(llm, "_tokenizer", None)
