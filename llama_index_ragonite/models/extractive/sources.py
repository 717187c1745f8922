"""The answerer's sources, built from nodes: topic, evidence, the neighbours' text, a row's cells.

Why from nodes: the parser knows what an evidence is (its page, heading path, neighbours, a row's
headers and cells: ``parsing.structure``), so the answerer reads those fields instead of parsing the
context header text back. A contextualized node (its ``context`` key set) contributes the parts its
header shows (``rendering.shown_header``: a counterfactual's withheld Before line is gone from the
header, so from the source too); a node never contextualized but carrying the fields contributes them
all; any other node (a stock splitter's, with its own metadata lines) is read as its LLM view, whole.
Prompts someone else wrote are read by ``llm_adapter``, the answerer's LLM face.
"""

from __future__ import annotations

import re
from dataclasses import astuple, dataclass, replace
from typing import Optional, Tuple

from llama_index.core.schema import BaseNode, MetadataMode

from llama_index_ragonite.parsing.contextualizer import template_after
from llama_index_ragonite.parsing.rendering import Header, field_row_pairs, section, shown_header
from llama_index_ragonite.parsing.structure import MODIFIED, MODIFIED_SOURCE, PAGE_ID, STRUCTURE_KEYS
from llama_index_ragonite.prompts import quote_evidence, unquote_evidence

CONTEXT_KEY = "context"  # the contextualizer's header key (EvidenceContextualizer.context_key's default)


@dataclass(frozen=True)
class PromptSource:
    """One source: its number, topic (page title, section) and raw evidence (the name says where it came from
    first: a ``### Source i ###`` block; nodes make the same sources, ``node_source``)."""

    number: int
    topic: str
    evidence: str
    earlier_answer: bool = False  # an answer of the answerer fed back as context (tree_summarize's upper levels)
    context: str = ""  # the contextualizer's Before/After text: may state what the evidence's own text lacks
    after: str = ""  # its After text alone: how the page goes on past the evidence
    before: str = ""  # its Before text alone: what the page says just above the evidence (a list's lead-in)
    cells: Optional[Tuple[Tuple[str, str], ...]] = None  # a row node's (header, cell) pairs, from its fields
    page: Optional["PageOf"] = None  # the node's page (id, title, modified time): which of two pages is newer


@dataclass(frozen=True)
class PageOf:
    """A source's page: its id, title and declared modified time (``parsing.structure``: ``modified``,
    ``modified_source``), for the answer to tell a page from an older copy (``conflicts``)."""

    page: str
    title: str
    modified: str = ""
    modified_source: str = ""


# ANSI escape sequences and other control characters a pasted question may hold: read as spaces,
# so "\x1b[31m" is not taken for a name ("31m") that no source holds
_TERMINAL_CODES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


def plain_question(text: str) -> str:
    """A question as the answerer reads it: terminal codes as spaces, whitespace collapsed."""
    return " ".join(_TERMINAL_CODES.sub(" ", text).split())


def page_text(text: str) -> str:
    """Page text as a source holds it: what a prompt quotes, read back (``[Source n]`` of the page kept
    escaped, so a quote never cites with it)."""
    return unquote_evidence(quote_evidence(text), citations=False)


def header_source(number: int, header: Header, evidence: str) -> PromptSource:
    """A source from the parts of a header and its evidence (a header with no evidence is no context)."""
    topic = " ".join(part.strip() for part in (header.title, header.section) if part)
    before, after = (header.before.strip(), header.after.strip()) if evidence else ("", "")
    context = "\n".join(part for part in (before, after) if part)
    return PromptSource(number, topic, evidence, context=context, after=after, before=before)


def node_source(number: int, node: BaseNode) -> PromptSource:
    """Source ``number`` of ``node``, from its structure fields (see the module's docstring)."""
    metadata = node.metadata
    evidence = page_text(node.get_content(MetadataMode.NONE)).strip()
    header: Optional[Header] = None
    if CONTEXT_KEY in metadata:
        shown = node.get_metadata_str(MetadataMode.LLM)
        lines = [line for line in shown.split("\n") if line] if shown else []
        end = template_after(node)
        header = shown_header(metadata, [*lines, end] if end and lines else lines)
    elif any(key in metadata for key in STRUCTURE_KEYS):
        header = Header(
            title=str(metadata.get("title") or ""),
            section=section(metadata),
            before=str(metadata.get("before_text") or ""),
            after=str(metadata.get("after_text") or ""),
        )
    if header is None:  # no header of ours: the view, whole, is the evidence
        return PromptSource(number, "", page_text(node.get_content(MetadataMode.LLM).strip()).strip())
    source = header_source(number, Header(*(page_text(part) for part in astuple(header))), evidence)
    source = replace(source, page=_page_of(node))
    if metadata.get("evidence_type") == "table_row":
        pairs = field_row_pairs(metadata, node.get_content(MetadataMode.NONE))
        if pairs is not None:
            return replace(source, cells=tuple(pairs))
    return source


def _page_of(node: BaseNode) -> Optional[PageOf]:
    """The node's page from its fields; None without a page id (a node of no page of ours)."""
    metadata = node.metadata
    page = str(metadata.get(PAGE_ID) or node.ref_doc_id or "")
    if not page:
        return None
    title = " ".join(page_text(str(metadata.get("title") or "")).split())
    return PageOf(page, title, str(metadata.get(MODIFIED) or ""), str(metadata.get(MODIFIED_SOURCE) or ""))
