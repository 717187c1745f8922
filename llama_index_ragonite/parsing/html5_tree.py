"""Build a BeautifulSoup tree the way a browser reads the page: HTML5 tree construction.

Wiki exports leave tags unclosed (``<td>x<td>y``, ``<li>``, ``<p>``), put ``<tr>``
straight in ``<table>`` and stray end tags anywhere. ``html.parser`` only nests
what it sees, so an unclosed cell swallows the rest of its row. Lexbor (through
``selectolax``) implements the WHATWG tree-construction algorithm in C: implied
end tags, foster parenting, adoption agency, all of it. Its tree is replayed into
BeautifulSoup events here, so the renderers keep working on ``bs4`` tags, and
the whole page builds faster than with ``html.parser`` alone.

The soup holds the page like a fragment: the ``<html>``, ``<head>`` and
``<body>`` wrappers the algorithm adds (or finds) are dropped and their children
kept, so a Confluence body and a full HTML document walk alike.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from bs4 import BeautifulSoup
from bs4.element import Comment
from selectolax.lexbor import LexborHTMLParser

from llama_index_ragonite.compat.bs4 import HTMLParserTreeBuilder

_WRAPPERS = ("head", "body")


class HTML5TreeBuilder(HTMLParserTreeBuilder):
    """A ``bs4`` tree builder backed by lexbor's HTML5 parser (same attribute handling as ``html.parser``)."""

    NAME = "lexbor-html5"
    ALTERNATE_NAMES: List[str] = []
    features = [NAME, "html5"]

    def feed(self, markup: Any) -> None:  # type: ignore[override]  # bs4's stub names another markup type
        assert isinstance(markup, str) and self.soup is not None
        document = LexborHTMLParser(markup)
        root = document.root
        if root is None:
            return
        child = root.child
        while child is not None:
            if child.tag in _WRAPPERS:
                _replay(self.soup, child.child)
            child = child.next


def _attributes(node: Any) -> Dict[str, str]:
    return {name: "" if value is None else value for name, value in node.attributes.items()}


def _replay(soup: BeautifulSoup, node: Any) -> None:
    """Feed ``node`` and its following siblings (with their subtrees) to ``soup``, without recursion."""
    open_elements: List[Tuple[str, Any]] = []
    while True:
        if node is None:
            if not open_elements:
                return
            name, element = open_elements.pop()
            soup.handle_endtag(name)
            node = element.next
            continue
        tag = node.tag
        if tag == "-text":
            soup.handle_data(node.text_content or "")
        elif tag == "-comment":
            soup.endData()
            soup.handle_data(node.comment_content or "")
            soup.endData(Comment)
        elif not tag.startswith("-") and not tag.startswith("!"):
            soup.handle_starttag(tag, None, None, _attributes(node))
            first: Optional[Any] = node.child
            if first is not None:
                open_elements.append((tag, node))
                node = first
                continue
            soup.handle_endtag(tag)
        node = node.next


def parse_html5(markup: str) -> BeautifulSoup:
    """``markup`` as a browser builds it, as a BeautifulSoup tree (no html/head/body wrappers)."""
    return BeautifulSoup(markup, builder=HTML5TreeBuilder())
