"""One wiki page -> evidences (passages, lists, tables, table rows) in page order.

Headings split passages and build the heading path; tables and top-level lists
(``<ul>``, ``<ol>``, ``ac:task-list``, and ``<p>`` blocks written as ``*``/``-``
lines) become their own evidences; all remaining text between them is a passage.
Containers (``div``, layouts, panel macros) are walked through, so a table inside
an info panel is still a table. The walk is iterative: nesting depth is unbounded.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from bs4 import BeautifulSoup, Tag
from bs4.builder import ParserRejectedMarkup

from llama_index_ragonite.parsing.html_text import (
    BLOCKS,
    HEADINGS,
    LINE,
    LISTS,
    SKIPPED,
    TextRenderer,
    Token,
    adf_children,
    discard_tree,
    is_navigation_macro,
    join_tokens,
    parse_html,
    render,
)
from llama_index_ragonite.parsing.linearize import get_linearizer
from llama_index_ragonite.parsing.tables import parse_table

logger = logging.getLogger(__name__)

EVIDENCE_TYPES = ("passage", "list", "table", "table_row")
TABLE_GRANULARITIES = ("rows", "table", "both")

_BULLET = re.compile(r"^\s*(?:[*\-•·–]|\d{1,3}[.)])\s+\S")
_TAG = re.compile(r"<[^>]*>")
_BREAK: Any = object()  # end of a container: the next text starts a new line


@dataclass
class Evidence:
    """A unit of retrieval: its raw text and where it sits on the page."""

    type: str
    text: str
    heading_path: Tuple[str, ...] = ()
    heading_ids: Tuple[int, ...] = ()  # which heading on the page (ordinal), for each path entry
    table_index: Optional[int] = None
    row_index: Optional[int] = None
    column_headers: Tuple[str, ...] = ()
    cells: Tuple[str, ...] = ()  # a row's cells, one per column header ("" where empty or covered by a span)
    rows: List["Evidence"] = field(default_factory=list)  # a table's row evidences


@dataclass
class _Heading:
    level: int
    text: str
    ordinal: int
    used: bool = False


class _PageWalker:
    def __init__(self, linearizer: str):
        self.row_linearizer, self.table_linearizer = get_linearizer(linearizer)
        self.evidences: List[Evidence] = []
        self.headings: List[_Heading] = []
        self.passage: List[Token] = []
        self.bullets: List[str] = []  # consecutive "* item" blocks, not yet known to be a list
        self.renderer = TextRenderer()
        self.tables = 0
        self.n_headings = 0
        self.first_heading = ""

    # -- output -----------------------------------------------------------
    def _path(self) -> Tuple[str, ...]:
        return tuple(h.text for h in self.headings)

    def _emit(self, evidence: Evidence) -> None:
        evidence.heading_ids = tuple(h.ordinal for h in self.headings[: len(evidence.heading_path)])
        for heading in self.headings:
            heading.used = True
        for row in evidence.rows:
            row.heading_ids = evidence.heading_ids
        self.evidences.append(evidence)

    def _settle_bullets(self) -> None:
        """A run of two or more bullet-line blocks is a list; a single one is passage text."""
        bullets, self.bullets = self.bullets, []
        if len(bullets) == 1:
            self.passage += [LINE, bullets[0], LINE]
        elif bullets:
            self._emit_passage()
            self._emit(Evidence("list", "\n".join(bullets), self._path()))

    def _emit_passage(self) -> None:
        text = join_tokens(self.passage)
        self.passage = []
        if text:
            self._emit(Evidence("passage", text, self._path()))

    def _flush(self) -> None:
        """Close the running passage (and a pending run of bullet lines)."""
        self._settle_bullets()
        self._emit_passage()

    # -- structure --------------------------------------------------------
    def heading(self, tag: Tag, children: Optional[list] = None) -> None:
        """Start a section; ``children`` limits the heading text (for a heading left unclosed)."""
        if children is None:
            text = render(tag, inline=True)
        else:
            tokens: List[Token] = []
            for child in children:
                self.renderer.tokens(child, tokens)
            text = join_tokens(tokens, inline=True)
        if not text:
            return
        self._flush()
        level = int(tag.name[1])
        while self.headings and self.headings[-1].level >= level:
            self._close_heading()
        self.n_headings += 1
        if self.n_headings == 1:
            self.first_heading = text
        self.headings.append(_Heading(level, text, self.n_headings))

    def _close_heading(self) -> None:
        heading = self.headings[-1]
        if not heading.used:  # an empty section: keep its title rather than lose it
            self._emit(Evidence("passage", heading.text, self._path()[:-1]))
        self.headings.pop()

    def finish(self) -> List[Evidence]:
        self._flush()
        while self.headings:
            self._close_heading()
        return self.evidences

    def table(self, tag: Tag) -> None:
        self._flush()
        table = parse_table(tag, self.tables + 1)
        if table is None:
            return
        self.tables += 1
        path = self._path()
        headers = tuple(table.headers)
        evidence = Evidence(
            "table", self.table_linearizer(table), path, table_index=table.index, column_headers=headers
        )
        evidence.rows = [
            Evidence(
                "table_row",
                self.row_linearizer(table, row),
                path,
                table_index=table.index,
                row_index=row.index,
                column_headers=headers,
                cells=tuple(row.values),
            )
            for row in table.rows
        ]
        self._emit(evidence)

    def listing(self, tag: Tag) -> None:
        self._flush()
        text = render(tag)
        if text:
            self._emit(Evidence("list", text, self._path()))

    def leaf(self, node) -> None:
        """Text outside tables, lists and headings: part of the running passage."""
        tokens = self.renderer.tokens(node)
        if not (isinstance(node, Tag) and node.name in BLOCKS):
            if self.bullets and any(isinstance(t, str) and t.strip() for t in tokens):
                self._settle_bullets()
            self.passage += tokens
            return
        text = join_tokens(tokens)
        if not text:
            return
        lines = text.split("\n")
        n_bullets = sum(1 for line in lines if _BULLET.match(line))
        if n_bullets == len(lines):
            self.bullets.extend(lines)
            return
        self._settle_bullets()
        if n_bullets >= 2 and n_bullets == len(lines) - 1 and not _BULLET.match(lines[0]):
            self._flush()  # "Intro:<br/>- a<br/>- b": a list typed as lines
            self._emit(Evidence("list", text, self._path()))
            return
        self.passage += tokens


def _structural_ancestors(soup: BeautifulSoup) -> set:
    """ids of elements that contain a heading, table or list: the walk descends into these."""
    marked: set = set()
    for tag in soup.find_all(lambda t: t.name in HEADINGS or t.name in LISTS or t.name == "table"):
        parent = tag.parent
        while parent is not None and id(parent) not in marked:
            marked.add(id(parent))
            parent = parent.parent
    return marked


@dataclass
class Page:
    title: str  # ``<title>``, else the first heading, else ""
    evidences: List[Evidence]
    modified: str = ""  # the time an HTML ``<meta>`` declares the page last modified, else ""


def extract_evidences(markup: str, linearizer: str = "verbalized") -> List[Evidence]:
    """Evidences of one page in page order (tables carry their rows in ``Evidence.rows``)."""
    return extract_page(markup, linearizer).evidences


def extract_page(markup: str, linearizer: str = "verbalized") -> Page:
    """Title and evidences of one page.

    Never raises on bad markup: a page the HTML parser rejects falls back to its
    tag-stripped text as one passage (logged as a warning).
    """
    get_linearizer(linearizer)  # fail fast on a bad name
    if not markup or not markup.strip():
        return Page("", [])
    try:
        soup = parse_html(markup)
    except ParserRejectedMarkup as err:
        logger.warning("HTML parser rejected the page (%s); indexing its tag-stripped text", err)
        text = " ".join(_TAG.sub(" ", markup).split())
        return Page("", [Evidence("passage", text)] if text else [])
    try:
        return _walk(soup, linearizer)
    finally:
        discard_tree(soup)  # now, not at the next cyclic collection


def _walk(soup: BeautifulSoup, linearizer: str) -> Page:
    """The page's title and evidences, from its parsed tree."""
    containers = _structural_ancestors(soup)
    walker = _PageWalker(linearizer)
    stack = [iter(list(soup.children))]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        if node is _BREAK:
            walker.passage.append(LINE)
            continue
        if not isinstance(node, Tag):
            walker.leaf(node)
            continue
        name = node.name
        if name in SKIPPED or is_navigation_macro(node):
            continue
        if name in HEADINGS:
            children = list(node.children)
            split = next((i for i, c in enumerate(children) if isinstance(c, Tag) and c.name in BLOCKS), None)
            if split is None:
                walker.heading(node)
            else:  # an unclosed heading swallowed the page: its inline start is the heading
                walker.heading(node, children[:split])
                stack.append(iter(children[split:] + [_BREAK]))
        elif name == "table":
            walker.table(node)
        elif name in LISTS:
            walker.listing(node)
        elif id(node) in containers:
            walker.passage.append(LINE)
            children = adf_children(node) if name == "ac:adf-extension" else list(node.children)
            stack.append(iter(children + [_BREAK]))
        else:
            walker.leaf(node)
    evidences = walker.finish()
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
    return Page(title or walker.first_heading, evidences, _declared_modified(soup))


MODIFIED_META = ("last-modified", "dcterms.modified", "article:modified_time", "og:updated_time", "date")


def _declared_modified(soup: BeautifulSoup) -> str:
    """The page's last-modified time as a ``<meta name|property|http-equiv=… content=…>`` declares it, else ""."""
    declared: Dict[str, str] = {}
    for meta in soup.find_all("meta"):
        name = str(meta.get("name") or meta.get("property") or meta.get("http-equiv") or "").strip().lower()
        content = " ".join(str(meta.get("content") or "").split())
        if name in MODIFIED_META and content:
            declared.setdefault(name, content)
    return next((declared[name] for name in MODIFIED_META if name in declared), "")
