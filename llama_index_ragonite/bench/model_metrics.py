"""Unitxt's model-based RAG metrics: context relevance (a seq2seq model) and answer reward (a reward model).

Both follow Unitxt (``unitxt.metrics.Perplexity`` as ``metrics.perplexity_q.flan_t5_small``, and
``unitxt.metrics.Reward`` as ``metrics.reward.deberta_v3_large_v2``) and load real Hugging Face
models by hub id or local folder (transformers and torch: the ``[bge]`` extra; imported lazily):

- **Context relevance**: for each retrieved context c, the geometric mean of the probabilities of
  the question's tokens (the tokenizer's end-of-sequence token included) given the source
  ``"Generate a question based on the given content: " + c``, i.e. ``exp(-mean token
  cross-entropy)``, in (0, 1]; a question's score is the maximum over its contexts ("is there at
  least one context the question could come from"). Default model: google/flan-t5-small.
- **Answer reward**: a sequence-classification reward model's score of the pair (question,
  answer): the sigmoid of its single logit, as Unitxt's ``text-classification`` pipeline gives
  it. Default model: OpenAssistant/reward-model-deberta-v3-large-v2.

``ragonite bench --context-relevance-model M --reward-model M`` scores every answer of new runs.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

CONTEXT_RELEVANCE_MODEL = "google/flan-t5-small"
REWARD_MODEL = "OpenAssistant/reward-model-deberta-v3-large-v2"
QUESTION_PROMPT = "Generate a question based on the given content: {context}"
EXTRA_HINT = 'pip install "llama-index-ragonite[bge]" (transformers and torch)'


def _torch_device(device: Optional[str]) -> str:
    import torch

    return device or ("cuda:0" if torch.cuda.is_available() else "cpu")


def _load(model: str, kind: str, device: Optional[str]) -> Tuple[Any, Any, str]:
    """(tokenizer, model in eval mode on its device, device) for a hub id or a local folder."""
    try:
        import transformers
    except ImportError as err:
        raise ImportError(f"model-based metrics need transformers: {EXTRA_HINT}") from err
    device = _torch_device(device)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    network = getattr(transformers, kind).from_pretrained(model).to(device).eval()
    return tokenizer, network, device


def _batches(items: Sequence, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


class ContextRelevance:
    """Unitxt's context relevance: P(question | context) under a seq2seq model (see the module docstring)."""

    def __init__(
        self,
        model: str = CONTEXT_RELEVANCE_MODEL,
        device: Optional[str] = None,
        batch_size: int = 32,
        prompt: str = QUESTION_PROMPT,
    ) -> None:
        self.model, self.batch_size, self.prompt = model, batch_size, prompt
        self._tokenizer, self._network, self.device = _load(model, "AutoModelForSeq2SeqLM", device)
        if self._tokenizer.pad_token_id is None:
            self._tokenizer.pad_token_id = self._tokenizer.eos_token_id

    def context_scores(self, question: str, contexts: Sequence[str]) -> List[float]:
        """Per context: the geometric mean probability of the question's tokens given the prompt."""
        import torch

        sources = [self.prompt.replace("{context}", c) for c in contexts]
        out: List[float] = []
        with torch.no_grad():
            for batch in _batches(sources, self.batch_size):
                encoded = self._tokenizer(list(batch), padding=True, truncation=True, return_tensors="pt")
                target = self._tokenizer([question] * len(batch), padding=True, return_tensors="pt")
                labels = target["input_ids"].to(self.device)
                logits = self._network(
                    input_ids=encoded["input_ids"].to(self.device),
                    attention_mask=encoded["attention_mask"].to(self.device),
                    labels=labels,
                ).logits
                labels = labels.masked_fill(labels == self._tokenizer.pad_token_id, -100)
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100, reduction="none"
                ).view(len(batch), -1)
                mean_loss = loss.sum(dim=1) / (labels != -100).sum(dim=1).clamp(min=1)
                out.extend(torch.exp(-mean_loss).tolist())
        return out

    def __call__(self, question: str, contexts: Sequence[str]) -> Optional[float]:
        """The best context's score (None without contexts)."""
        scores = self.context_scores(question, contexts)
        return max(scores) if scores else None


class AnswerReward:
    """Unitxt's answer reward: sigmoid of a reward model's logit for (question, answer)."""

    def __init__(self, model: str = REWARD_MODEL, device: Optional[str] = None, max_length: int = 512) -> None:
        self.model, self.max_length = model, max_length
        self._tokenizer, self._network, self.device = _load(model, "AutoModelForSequenceClassification", device)

    def logits(self, pairs: Sequence[Tuple[str, str]]) -> List[float]:
        import torch

        questions, answers = [q for q, _ in pairs], [a for _, a in pairs]
        encoded = self._tokenizer(
            questions, answers, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        with torch.no_grad():
            logits = self._network(**{k: v.to(self.device) for k, v in encoded.items()}).logits
        return logits[:, 0].tolist()

    def __call__(self, question: str, answer: str) -> float:
        return 1.0 / (1.0 + math.exp(-self.logits([(question, answer)])[0]))


class ModelMetrics:
    """The benchmark's score hook: ``context_relevance`` and/or ``answer_reward`` of one answer."""

    def __init__(
        self, context_relevance: Optional[ContextRelevance] = None, answer_reward: Optional[AnswerReward] = None
    ) -> None:
        self.context_relevance, self.answer_reward = context_relevance, answer_reward

    @classmethod
    def from_models(
        cls, context_relevance_model: Optional[str] = None, reward_model: Optional[str] = None, device=None
    ) -> Optional["ModelMetrics"]:
        """Load the named models (hub ids or folders); None when neither is named."""
        if not context_relevance_model and not reward_model:
            return None
        return cls(
            ContextRelevance(context_relevance_model, device=device) if context_relevance_model else None,
            AnswerReward(reward_model, device=device) if reward_model else None,
        )

    def __call__(self, question: str, answer: str, contexts: List[str]) -> Dict[str, float]:
        out: Dict[str, float] = {}
        if self.context_relevance is not None:
            relevance = self.context_relevance(question, contexts)
            if relevance is not None:
                out["context_relevance"] = relevance
        if self.answer_reward is not None:
            out["answer_reward"] = self.answer_reward(question, answer)
        return out
