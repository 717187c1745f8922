"""``--llm`` and ``--embedding``: the model options of ``ragonite ask``, ``chat`` and ``explain``."""

from __future__ import annotations

import argparse

from llama_index_ragonite.models.specs import DEFAULT_EMBEDDING_SPEC, DEFAULT_LLM_SPEC, EMBEDDING_SPECS, LLM_SPECS

__all__ = ["add_model_arguments"]


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--llm`` and ``--embedding``, with the specs above (parse them with ``*_from_spec``)."""
    parser.add_argument(
        "--llm",
        default=DEFAULT_LLM_SPEC,
        metavar="SPEC",
        help=f"the answering LLM: {LLM_SPECS} (default: %(default)s; OPENAI_API_KEY for openai:)",
    )
    parser.add_argument(
        "--embedding",
        default=DEFAULT_EMBEDDING_SPEC,
        metavar="SPEC",
        help=f"query embeddings: {EMBEDDING_SPECS}; must be the model the store was built with (default: %(default)s)",
    )
