"""The offline extractive answerer: quotes the prompt's best-matching evidence units, cited.

``answerer.ExtractiveAnswerer`` is the LlamaIndex ``CustomLLM``; ``prompt`` parses the answer
prompt, ``units`` cuts evidences into answer units, ``scoring`` scores and selects them,
``compose`` quotes and cites them (``models.synthesizers.ExtractiveSynthesizer`` answers from nodes).
"""

from __future__ import annotations

from llama_index_ragonite.models.extractive.answerer import DEFAULT_LABEL, ExtractiveAnswerer
from llama_index_ragonite.models.extractive.compose import cite, compose_answer, trim_words
from llama_index_ragonite.models.extractive.prompt import ParsedPrompt, PromptSource, parse_prompt, split_source
from llama_index_ragonite.models.extractive.scoring import (
    identifiers,
    language,
    rank_bonus,
    score_units,
    select_units,
    similarity,
)
from llama_index_ragonite.models.extractive.units import Unit, split_units

__all__ = [
    "DEFAULT_LABEL",
    "ExtractiveAnswerer",
    "ParsedPrompt",
    "PromptSource",
    "Unit",
    "cite",
    "compose_answer",
    "identifiers",
    "language",
    "parse_prompt",
    "rank_bonus",
    "score_units",
    "select_units",
    "similarity",
    "split_source",
    "split_units",
    "trim_words",
]
