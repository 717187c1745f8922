"""Reading prompts the answerer did not write: LlamaIndex's stock templates and any template
that fills ``{context_str}`` (or ``{context_msg}``) and ``{query_str}``.

Why: ``index.as_query_engine(llm=ExtractiveAnswerer())`` and ``CondensePlusContextChatEngine``
never send our ``### Source i ###`` prompt. Two ways to recover what they asked:

* ``predict``/``stream`` (what response synthesizers call) hand the LLM the template and its
  variables; the answerer keeps them for the call (``answerer.py``) and reads them directly.
* a plain string (``complete``), e.g. the condense step of ``CondensePlusContextChatEngine``:
  matched against the stock templates of llama-index-core (and any the user registers),
  each rendered with placeholder values and turned into a regular expression.

* chat messages (``chat``): the system message is the context (a stock context system prompt,
  or the context itself), the last user message the question.

What the variables mean: ``context_str``/``context_msg`` — the retrieved nodes' LLM views
joined by blank lines, unnumbered, so answers cite nothing (paragraphs that start with the
answerer's label are its own earlier answers: tree_summarize's upper levels); ``query_str``
(or ``question``) — the question; ``existing_answer`` — the refine step's answer so far;
``chat_history`` + ``question`` with no context — a condense (rewrite the follow-up) request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.prompts import BasePromptTemplate

from llama_index_ragonite.models.extractive.llm_adapter.prompt import PromptSource, numbered_sources, parse_prompt
from llama_index_ragonite.prompts import (
    OUT_OF_SCOPE,
    STOCK_CONTEXT_VARIABLES,
    STOCK_QUESTION_VARIABLE,
    unquote_evidence,
)

_SENTINEL = "RAGONITEVAR{}XEND"
_META_LINE = re.compile(r"^([A-Za-z_][\w\-]{0,30}):\s")
_TOPIC_KEYS = {"page", "section", "title"}
_NEIGHBOUR_KEYS = {"before", "after"}
_HISTORY_TURN = re.compile(r"^(user|human)\s*:\s*(.*)$", re.IGNORECASE)
_CONDENSE_QUESTION = "question"  # the follow-up of condense templates; with a context, a user template's question


@dataclass(frozen=True)
class TemplateRequest:
    """What a stock-style prompt asks: answer ``question`` from ``sources`` (refining
    ``existing_answer``), or rewrite ``question`` given ``history`` (``condense``)."""

    question: str
    sources: List[PromptSource]
    numbered: bool  # the context numbers its sources: cite them as [Source i]
    existing_answer: str = ""
    condense: bool = False
    history: Tuple[str, ...] = ()  # earlier user turns, oldest first (condense requests)


def template_pattern(template: BasePromptTemplate, llm: Any = None) -> Optional[re.Pattern]:
    """A regex whose named groups recover ``template``'s variables from its rendering (``None``: cannot render)."""
    names = list(template.template_vars)
    if not names:
        return None
    values: Dict[str, Any] = {name: _SENTINEL.format(i) for i, name in enumerate(names)}
    try:
        if llm is None:
            text = template.format(**values)
        else:
            text = template.format(
                llm=llm,
                messages_to_prompt=llm.messages_to_prompt,
                completion_to_prompt=llm.completion_to_prompt,
                **values,
            )
    except Exception:  # templates with function mappings or required extra variables
        return None
    pattern = re.escape(text.strip())
    for i, name in enumerate(names):
        token = _SENTINEL.format(i)
        first = pattern.find(token)
        if first < 0:
            continue
        rest = pattern[first + len(token) :].replace(token, f"(?P={name})")
        pattern = pattern[:first] + f"(?P<{name}>.*?)" + rest
    return re.compile(r"(?:.*?)" + pattern + r"\s*\Z", re.DOTALL)


@lru_cache(maxsize=1)
def stock_templates() -> Tuple[BasePromptTemplate, ...]:
    """The answer, refine and condense templates of llama-index-core 0.14 the answerer understands."""
    from llama_index.core.chat_engine.condense_plus_context import DEFAULT_CONDENSE_PROMPT_TEMPLATE
    from llama_index.core.chat_engine.condense_question import DEFAULT_PROMPT as CONDENSE_QUESTION_PROMPT
    from llama_index.core.prompts import PromptTemplate
    from llama_index.core.prompts.chat_prompts import (
        CHAT_REFINE_PROMPT,
        CHAT_TEXT_QA_PROMPT,
        CHAT_TREE_SUMMARIZE_PROMPT,
    )
    from llama_index.core.prompts.default_prompts import (
        DEFAULT_REFINE_PROMPT,
        DEFAULT_TEXT_QA_PROMPT,
        DEFAULT_TREE_SUMMARIZE_PROMPT,
    )

    return (
        DEFAULT_TEXT_QA_PROMPT,
        DEFAULT_REFINE_PROMPT,
        DEFAULT_TREE_SUMMARIZE_PROMPT,
        CHAT_TEXT_QA_PROMPT,
        CHAT_REFINE_PROMPT,
        CHAT_TREE_SUMMARIZE_PROMPT,
        PromptTemplate(DEFAULT_CONDENSE_PROMPT_TEMPLATE),
        CONDENSE_QUESTION_PROMPT,
    )


@lru_cache(maxsize=1)
def context_system_patterns() -> Tuple[re.Pattern, ...]:
    """The stock chat engines' context system prompts (``{context_str}`` only; the question is a user message)."""
    from llama_index.core.chat_engine.condense_plus_context import DEFAULT_CONTEXT_PROMPT_TEMPLATE
    from llama_index.core.chat_engine.context import DEFAULT_CONTEXT_TEMPLATE
    from llama_index.core.prompts import PromptTemplate

    patterns = (
        template_pattern(PromptTemplate(t)) for t in (DEFAULT_CONTEXT_PROMPT_TEMPLATE, DEFAULT_CONTEXT_TEMPLATE)
    )
    return tuple(p for p in patterns if p is not None)


def chat_variables(messages: Sequence[ChatMessage]) -> Optional[Dict[str, str]]:
    """``{context_str, query_str}`` of a chat whose system messages hold the context and whose last message
    is the user's question; ``None`` for other chats (e.g. one user message holding a whole answer prompt)."""
    if not messages or messages[-1].role != MessageRole.USER:
        return None
    question = (messages[-1].content or "").strip()
    system = "\n\n".join((m.content or "").strip() for m in messages if m.role == MessageRole.SYSTEM).strip()
    if not (question and system) or parse_prompt(question).sources:
        return None
    found = match_templates(system, context_system_patterns())
    return {"context_str": found["context_str"] if found else system, STOCK_QUESTION_VARIABLE: question}


def match_templates(prompt: str, patterns: Sequence[re.Pattern]) -> Optional[Dict[str, str]]:
    """The variables of the first pattern that matches the whole ``prompt``, else ``None``."""
    for pattern in patterns:
        found = pattern.match(prompt.strip())
        if found:
            return found.groupdict()
    return None


def request_from_variables(variables: Dict[str, Any], label: str = "") -> Optional[TemplateRequest]:
    """What a template's filled variables ask for; ``None`` when they are not a QA/refine/condense request.

    With a context the question is ``query_str``, else ``question`` (a user template's name for it);
    only without a context do ``chat_history`` + ``question`` ask to rewrite the follow-up (condense).
    ``label``: the answerer's, marking its own earlier answers in the context."""
    context = next((_text(variables[v]) for v in STOCK_CONTEXT_VARIABLES if _text(variables.get(v)) is not None), None)
    question = variables.get(STOCK_QUESTION_VARIABLE, variables.get(_CONDENSE_QUESTION))
    if context is not None and isinstance(question, str):
        sources, numbered = context_sources(context, label)
        existing = variables.get("existing_answer")
        return TemplateRequest(
            question.strip(), sources, numbered, existing.strip() if isinstance(existing, str) else ""
        )
    if context is None and isinstance(question, str) and isinstance(variables.get("chat_history"), str):
        turns = [
            m.group(2).strip()
            for line in variables["chat_history"].splitlines()
            if (m := _HISTORY_TURN.match(line.strip()))
        ]
        return TemplateRequest(question.strip(), [], False, condense=True, history=tuple(t for t in turns if t))
    return None


def _text(value: Any) -> Optional[str]:
    """A context variable as text; llama-index-core 0.14's ``simple_summarize`` passes a list of chunks."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "\n\n".join(value)
    return None


def context_sources(context: str, label: str = "") -> Tuple[List[PromptSource], bool]:
    """``(sources, numbered)`` of a context: its ``### Source i ###`` blocks when it has them,
    else one source per node text as LlamaIndex joins them (blank-line separated; a run of
    ``key: value`` lines is a node's metadata header for the text after it).

    Paragraphs that start with ``label`` are the answerer's earlier answers (label dropped, so
    answers never double it); out-of-scope answers and a final header with no text (a node cut
    by the prompt helper) are no evidence. Escaped imitations of the prompt's structure (a
    context ``prompts.format_stock_context`` quoted) read back as the page wrote them."""
    numbered = numbered_sources(context)
    if numbered:
        return numbered, True
    context = unquote_evidence(context, citations=False)
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", context) if p.strip() and p.strip() != OUT_OF_SCOPE]
    sources: List[PromptSource] = []
    header: List[str] = []
    for k, paragraph in enumerate(paragraphs):
        if label and paragraph.startswith(label):
            sources.append(PromptSource(len(sources) + 1, "", paragraph[len(label) :].strip(), earlier_answer=True))
            header = []
            continue
        lines = paragraph.splitlines()
        body_end = len(lines)
        if k + 1 < len(paragraphs) or all(_is_context_line(line) for line in lines):
            # trailing key: value lines head the next text (texts joined by one newline)
            while body_end > 0 and _META_LINE.match(lines[body_end - 1]):
                body_end -= 1
        if body_end:
            sources.append(_source(len(sources) + 1, header, "\n".join(lines[:body_end])))
            header = []
        header += lines[body_end:]
    return sources, False


def _is_context_line(line: str) -> bool:
    """A contextualizer header line (page, section, neighbours): says where a text sits, answers nothing."""
    found = _META_LINE.match(line)
    return found is not None and found.group(1).lower() in _TOPIC_KEYS | _NEIGHBOUR_KEYS


def _source(number: int, header: List[str], body: str) -> PromptSource:
    """Page/section/title lines say what the text is about; neighbours' quotes are dropped; other metadata stays evidence."""
    topic, kept = [], []
    for line in header:
        key, value = line.split(":", 1)
        if key.lower() in _TOPIC_KEYS:
            topic.append(value.strip())
        elif key.lower() not in _NEIGHBOUR_KEYS:
            kept.append(line)
    return PromptSource(number=number, topic=" ".join(topic), evidence="\n".join([*kept, body]).strip())
