"""The answer prompt: numbered sources, concise cited answers, one exact out-of-scope sentence.

The shape follows the paper's released prompt (``eval/prompt.txt`` of ConfQuestions) in our
own wording. Every source is one contextualized evidence (its LLM view: context header and
evidence), numbered ``### Source i ###`` in retrieval order; answers cite ``[Source i]``.
Custom prompts must keep the ``{sources}``, ``{history}`` and ``{question}`` variables.
"""

from __future__ import annotations

import re
from typing import List, Sequence

from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import MetadataMode, NodeWithScore

OUT_OF_SCOPE = "The desired information cannot be found in the retrieved pool of evidence."

ANSWER_PROMPT = PromptTemplate(
    "You answer questions about an enterprise wiki from the retrieved evidences below, numbered as sources. "
    "Answer precisely and concisely (fewer than 50 words if possible), with no explanation beyond what was asked. "
    "Use only the information in the sources, never your own knowledge, and mark the sources you used in square "
    "brackets after each statement, like [Source 2] or [Source 5]. You do not have to use every source. "
    "Answer in the language of the question. "
    f'If the sources do not contain the requested information, reply exactly: "{OUT_OF_SCOPE}"\n\n'
    "-----------\n{sources}\n-----------\n\n"
    "{history}"
    "User: {question}\n"
    "Assistant:"
)

# The variables LlamaIndex's stock templates (QA, refine, summarize, chat context) fill with
# the retrieved nodes and with the question; our own prompts use {sources} and {question}.
STOCK_CONTEXT_VARIABLES = ("context_str", "context_msg")
STOCK_QUESTION_VARIABLE = "query_str"

SOURCE_HEADER = "### Source {i} ###"
_CITATION = re.compile(r"\[\s*Sources?\s+(\d+(?:\s*(?:,|and|&)\s*(?:Source\s+)?\d+)*)\s*\]", re.IGNORECASE)


def format_sources(nodes: Sequence[NodeWithScore]) -> str:
    """Number the evidences ``### Source i ###`` (1-based, in the given order) with their LLM view."""
    return "\n\n".join(
        f"{SOURCE_HEADER.format(i=i)}\n{n.node.get_content(MetadataMode.LLM).strip()}" for i, n in enumerate(nodes, 1)
    )


def format_history(history: Sequence[ChatMessage]) -> str:
    """``User: …`` / ``Assistant: …`` lines, one per message, ending with a blank line ("" for none)."""
    lines = []
    for message in history:
        if message.role in (MessageRole.USER, MessageRole.ASSISTANT) and message.content:
            who = "User" if message.role == MessageRole.USER else "Assistant"
            lines.append(f"{who}: {message.content.strip()}")
    return "\n".join(lines) + "\n" if lines else ""


def cited_sources(answer: str, n_sources: int) -> List[int]:
    """The 1-based source numbers an answer cites, in order of first citation, within ``1..n_sources``.

    Accepts ``[Source 2]``, ``[Sources 2, 3]``, ``[Source 2, Source 5]``; numbers out of range
    (an LLM inventing ``[Source 12]`` for ten sources) are dropped.
    """
    seen: List[int] = []
    for match in _CITATION.finditer(answer):
        for number in re.findall(r"\d+", match.group(1)):
            i = int(number)
            if 1 <= i <= n_sources and i not in seen:
                seen.append(i)
    return seen


def strip_citations(answer: str) -> str:
    """The answer without ``[Source i]`` markers (for comparing answers across renumbered sources)."""
    text = re.sub(r"\s+", " ", _CITATION.sub("", answer))
    return re.sub(r"\s+([.,;:!?])", r"\1", text).strip()
