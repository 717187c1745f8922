"""Relevance from attention: how much a local open-weight LLM looks at each evidence (RAGE's option).

RAGE orders equal-size combinations by relevance, from retrieval scores or, for an open-weight
model, from the attention the model pays to each source. ``AttentionRelevance`` runs a
Transformers causal LM once over the answer prompt followed by the answer
(``output_attentions=True``), averages the attention over layers and heads, takes the rows
of the answer's tokens (of the last prompt token when there is no answer) and sums, for each
source, the columns of its token span. The sums, normalised to 1, are the relevance.

``transformers`` and ``torch`` are the ``[bge]`` extra: imported only when a model is loaded
or scored. ``attention_mass`` is the pure part (numpy), testable against a hand computation.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_ragonite.compat.llama_index_llms_huggingface import model_and_tokenizer
from llama_index_ragonite.prompts import SOURCE_HEADER, quote_evidence

__all__ = ["AttentionRelevance", "attention_mass", "attention_scorer", "source_spans"]


def source_spans(prompt: str, nodes: Sequence[NodeWithScore]) -> List[Tuple[int, int]]:
    """The character span of each evidence in ``prompt`` (ours: ``### Source i ###`` and its text; a
    stock prompt: the quoted text), found in order; a ``ValueError`` when one is not there."""
    spans, at = [], 0
    for i, n in enumerate(nodes, 1):
        text = quote_evidence(n.node.get_content(MetadataMode.LLM).strip())
        block = f"{SOURCE_HEADER.format(i=i)}\n{text}"
        start = prompt.find(block, at)
        if start < 0:
            block, start = text, prompt.find(text, at)
        if start < 0:
            raise ValueError(f"evidence {i} is not in the prompt: attention relevance needs the prompt the LLM saw")
        spans.append((start, start + len(block)))
        at = start + len(block)
    return spans


def attention_mass(attentions: np.ndarray, queries: Sequence[int], sources: Sequence[Sequence[int]]) -> np.ndarray:
    """Each source's share of the attention the ``queries`` token rows pay to it.

    ``attentions``: (layers, heads, tokens, tokens), each row a softmax over keys; averaged over
    layers and heads, then over the query rows; a source's mass is the sum over its key tokens;
    the masses are normalised to sum to 1 (uniform when all are 0).
    """
    mean = np.asarray(attentions, dtype=float).mean(axis=(0, 1))[list(queries)].mean(axis=0)
    mass = np.array([mean[list(keys)].sum() if len(keys) else 0.0 for keys in sources])
    total = mass.sum()
    return mass / total if total > 0 else np.full(len(sources), 1.0 / max(len(sources), 1))


class AttentionRelevance:
    """Per-evidence relevance from a Transformers causal LM's attention (see the module doc).

    Args:
        model: a ``transformers`` causal LM (loaded with ``attn_implementation="eager"``: the
            fused kernels return no attention weights).
        tokenizer: its fast tokenizer (character offsets map the sources to tokens).
        use_answer: the answer's tokens attend (default); False: the last prompt token does.
    """

    def __init__(self, model: Any, tokenizer: Any, use_answer: bool = True) -> None:
        self.model, self.tokenizer, self.use_answer = model, tokenizer, use_answer

    @classmethod
    def from_pretrained(cls, name_or_path: str, use_answer: bool = True, **kwargs: Any) -> "AttentionRelevance":
        """Load a model name (Hugging Face hub) or a local folder, on the CPU unless ``kwargs`` say otherwise."""
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as err:
            raise ImportError(
                "Attention relevance needs transformers: pip install 'llama-index-ragonite[bge]'"
            ) from err
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        model = AutoModelForCausalLM.from_pretrained(name_or_path, attn_implementation="eager", **kwargs)
        return cls(model.eval(), tokenizer, use_answer)

    def attentions(self, text: str) -> Tuple[np.ndarray, List[Tuple[int, int]]]:
        """(layers, heads, tokens, tokens) attention weights over ``text`` and each token's character offsets."""
        import torch

        encoded = self.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        offsets = [(int(start), int(end)) for start, end in encoded.pop("offset_mapping")[0].tolist()]
        encoded.pop("token_type_ids", None)
        with torch.no_grad():
            output = self.model(**encoded, output_attentions=True)
        stacked = torch.stack([layer[0] for layer in output.attentions]).float().numpy()
        return stacked, offsets

    def relevance(self, prompt: str, nodes: Sequence[NodeWithScore], answer: Optional[str] = None) -> List[float]:
        """Each evidence's share of the attention (sums to 1), in the order of ``nodes``."""
        spans = source_spans(prompt, nodes)
        answered = bool(self.use_answer and answer and answer.strip())
        text = prompt + (" " + (answer or "").strip() if answered else "")  # the answer as generated after the prompt
        attentions, offsets = self.attentions(text)
        sources = [[t for t, (a, b) in enumerate(offsets) if b > a and a < end and b > start] for start, end in spans]
        answer_tokens = [t for t, (a, b) in enumerate(offsets) if b > a and a > len(prompt)] if answered else []
        prompt_tokens = [t for t, (a, b) in enumerate(offsets) if b > a and a < len(prompt)]
        queries = answer_tokens or prompt_tokens[-1:]
        return [float(x) for x in attention_mass(attentions, queries, sources)]


def attention_scorer(attention: Optional[Any], llm: Any) -> Any:
    """The scorer for ``relevance="attention"``: the one given, else one on the LLM's own Transformers
    model (``HuggingFaceLLM`` keeps it as ``_model``/``_tokenizer``), else a clear error."""
    if attention is not None:
        return attention
    model, tokenizer = model_and_tokenizer(llm)  # private on HuggingFaceLLM (compat)
    if model is not None and tokenizer is not None and hasattr(model, "config"):
        return AttentionRelevance(model, tokenizer)
    raise ValueError(
        "relevance='attention' needs a local open-weight Transformers model: pass "
        "attention=AttentionRelevance.from_pretrained(NAME_OR_FOLDER) (or use a HuggingFaceLLM)"
    )
