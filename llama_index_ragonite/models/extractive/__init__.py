"""The offline extractive answerer: quotes the prompt's best-matching evidence units, cited.

``answerer.ExtractiveAnswerer`` is the LlamaIndex ``CustomLLM``; ``sources`` builds its sources from
nodes and their structure fields, ``llm_adapter`` (its LLM face) parses prompts someone formatted the
nodes into, ``units`` cuts evidences into answer units, ``scoring`` scores and selects them,
``compose`` quotes and cites them (``models.synthesizers.ExtractiveSynthesizer`` answers from nodes);
``calls`` carries a call's template variables and streams.

The algorithm, one module per step, with one small class around them:

1. ``sources.node_source`` (or, for a prompt, ``llm_adapter``): the sources (topic: the page title and
   heading path; the evidence; the neighbours' text; a row's cells) and the question.
2. ``units.split_units``: evidences into rows, list items and sentences; a lead-in ("… including:") is
   quoted with the list it announces (``continued_lead_ins``).
3. ``scoring.score_units`` (IDF-weighted share of the question's words in a unit, identifiers
   matched verbatim, units that restate the question damped), mixed with the cosine of question
   and unit by an embedding model (``embed_model``: the store's in the chat engine, else the
   embedded multilingual default) for the ``embed_candidates`` best units in one batch; German
   questions over English pages alike. Units without what the question asks for (a person, a
   date, an amount) weigh ``type_weight`` (``answer_types.py``).
4. ``scoring.select_units``: ranked with a small prior for earlier sources (retrieval rank),
   the best unit wherever it stands in its passage, plus further items of the same enumeration
   (rows of the same table) that score close (``max_units``, ``close_ratio``). Whether it
   answers at all is one calibrated decision (``scope.py``): how well the best unit answers by
   meaning and words, and retrieval's confidence; below it the answer is out of scope.
5. ``compose.compose_answer``: the chosen units (a row cut to its asked cells, ``cells.py``; a
   sentence without the clauses that only restate the question, ``drop_echo``), trimmed to
   ``max_words``, each cited; a unit that adds nothing new is left out.
"""

from __future__ import annotations

from llama_index_ragonite.models.extractive.answerer import DEFAULT_LABEL, ExtractiveAnswerer
from llama_index_ragonite.models.extractive.compose import cite, compose_answer, trim_words
from llama_index_ragonite.models.extractive.llm_adapter.prompt import ParsedPrompt, parse_prompt, split_source
from llama_index_ragonite.models.extractive.scoring import (
    identifiers,
    language,
    rank_bonus,
    score_units,
    select_units,
    similarity,
)
from llama_index_ragonite.models.extractive.sources import PromptSource, node_source
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
    "node_source",
    "parse_prompt",
    "rank_bonus",
    "score_units",
    "select_units",
    "similarity",
    "split_source",
    "split_units",
    "trim_words",
]
