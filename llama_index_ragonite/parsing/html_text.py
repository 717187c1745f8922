"""HTML and Confluence storage markup -> readable text.

One renderer serves every evidence type: it walks a subtree without recursion
(pages nest thousands of levels deep in the wild) and emits text pieces and
*separators* of three strengths. The caller decides how separators print: as
newlines for passages and lists (block mode) or as ``, `` / ``; `` inside a
table cell (inline mode).
"""

from __future__ import annotations

import html
import logging
import re
from typing import List, Optional, Tuple, Union

from bs4 import BeautifulSoup, Tag
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

from llama_index_ragonite.parsing.html5_tree import parse_html5

logger = logging.getLogger(__name__)

SPACE, CELL, LINE = 1, 2, 3
Token = Union[str, int]
Opened = Optional[Tuple[list, int, bool, Optional[int]]]  # (children, list depth, pre, closing separator)

_BLOCK_SEP = {SPACE: " ", CELL: " | ", LINE: "\n"}
_INLINE_SEP = {SPACE: " ", CELL: ", ", LINE: "; "}

HTML_TAGS = frozenset(
    """a abbr acronym address area article aside audio b base bdi bdo big blink blockquote body br
    button canvas caption center cite code col colgroup data datalist dd del details dfn dialog dir div
    dl dt em embed fieldset figcaption figure font footer form frame frameset h1 h2 h3 h4 h5 h6 head
    header hgroup hr html i iframe img input ins kbd label legend li link main map mark menu meta meter
    nav nobr noframes noscript object ol optgroup option output p param picture pre progress q rp rt
    ruby s samp script search section select slot small source span strike strong style sub summary
    sup svg table tbody td template textarea tfoot th thead time title tr track tt u ul var video wbr
    math""".split()
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
LISTS = frozenset({"ul", "ol", "ac:task-list"})
BLOCKS = frozenset(
    """address article aside blockquote body caption center details dialog dir div dl dd dt fieldset
    figcaption figure footer form header hgroup hr html li main menu nav ol p pre section summary table
    tbody thead tfoot tr ul h1 h2 h3 h4 h5 h6 ac:structured-macro ac:rich-text-body ac:plain-text-body
    ac:layout ac:layout-section ac:layout-cell ac:task-list ac:task ac:adf-extension ac:adf-node
    ac:adf-content ac:adf-fallback ac:image""".split()
)
PREFORMATTED = frozenset({"pre", "ac:plain-text-body", "textarea", "xmp", "listing"})
# Elements whose text is configuration or bookkeeping, never shown to a reader.
SKIPPED = frozenset(
    """script style head title template noscript colgroup col ac:task-id ac:task-status ac:emoticon
    ac:hipchat-emoticon ac:adf-attribute ac:placeholder ac:inline-comment-marker-ref""".split()
)
# Macros that only render navigation or widgets built from other pages.
NAVIGATION_MACROS = frozenset(
    """toc toc-zone children pagetree pagetreesearch recently-updated contentbylabel
    content-report-table create-from-template profile-picture contributors anchor livesearch
    blog-posts popular-labels listlabels space-details attachments viewfile view-file widget
    include excerpt-include gallery""".split()
)
INLINE_MACROS = frozenset({"jira", "status"})  # rendered inside the line, like a link
_VISIBLE_PARAMETERS = {"title"}  # e.g. code block titles, panel titles, expand captions, status labels
_VISIBLE_PARAMETERS_BY_MACRO = {"jira": {"key"}}  # the issue key (OXT-1654) is what the page shows

# Elements that never have content: ``<br/>`` needs no end tag.
VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr".split())
# Elements a sibling closes (``<li>a<li>b``): left open, they add no depth.
_IMPLIED_END = frozenset("p li dt dd td th tr thead tbody tfoot option optgroup rb rp rt rtc".split())
MAX_HTML5_DEPTH = 10_000
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_TAG = re.compile(r"<(/?)([A-Za-z][\w.:-]*)([^<>]*)>")
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")


def preclean(markup: str) -> str:
    """Make Confluence storage markup (XHTML) read as its authors meant under an HTML5 parser.

    CDATA sections (Confluence code bodies and link labels) become escaped text:
    an HTML5 parser reads them as bogus comments and would swallow a code block.
    A self-closed element (``<ri:page .../>``, ``<time .../>``, ``<p/>``) gets its
    end tag: storage format is XHTML, and HTML5 ignores ``/>`` on elements that
    are not void, which would pull the following text into a link target.
    Tags that are neither HTML nor namespaced and carry no attributes
    (``<your-user>``, ``<PACKAGE>``, ``<machine type>``) are placeholders written
    in prose or code; they are kept as literal text.
    """
    return _preclean(markup)[0]


def _preclean(markup: str) -> Tuple[str, int]:
    """``preclean``'s markup and the deepest nesting its tags spell (open minus closed, implied ends aside)."""
    markup = markup.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> "?"
    markup = _CDATA.sub(lambda m: html.escape(m.group(1), quote=False), markup)
    depth = deepest = 0

    def repair(m: re.Match) -> str:
        nonlocal depth, deepest
        closing, name, attrs = m.groups()
        lowered = name.lower()
        if ":" not in name and lowered not in HTML_TAGS and "=" not in attrs:
            return html.escape(m.group(0), quote=False)
        if lowered in VOID_TAGS:
            return m.group(0)
        if attrs.endswith("/") and not closing:
            return f"<{name}{attrs[:-1]}></{name}>"
        if lowered in _IMPLIED_END:
            return m.group(0)
        if closing:
            depth = max(depth - 1, 0)
        else:
            depth += 1
            deepest = max(deepest, depth)
        return m.group(0)

    return _TAG.sub(repair, markup), deepest


def parse_html(markup: str) -> BeautifulSoup:
    """Parse page markup as a browser does (HTML5 tree construction; keeps ``ac:``/``ri:`` names).

    HTML5 tree construction checks element scopes along the open elements, so its
    time grows with the square of the depth; beyond ``MAX_HTML5_DEPTH`` levels
    (browsers stop nesting far earlier) ``html.parser`` builds the tree instead.
    """
    cleaned, depth = _preclean(markup)
    if depth > MAX_HTML5_DEPTH:
        logger.warning("markup nests %d levels deep; parsed with html.parser instead of HTML5 rules", depth)
        return BeautifulSoup(cleaned, "html.parser")
    return parse_html5(cleaned)


def discard_tree(soup: BeautifulSoup) -> None:
    """Free a parsed page's tree now. Why: a bs4 tree is one big reference cycle (parents, siblings,
    ``next_element``), so dropping it leaves it to the cyclic garbage collector, which may not run
    for minutes; a 20,000-row table's tree (~200 MB) then stays through the embedding of its rows."""
    for child in list(soup.contents):
        child.decompose()
    soup.decompose()


def attribute(tag: Tag, name: str) -> str:
    """An attribute's value as text ("" when absent; a multi-valued one, such as ``class``, joined)."""
    value = tag.get(name)
    return " ".join(value) if isinstance(value, list) else (value or "")


def macro_name(tag: Tag) -> str:
    return attribute(tag, "ac:name").lower()


def is_navigation_macro(tag: Tag) -> bool:
    return tag.name == "ac:structured-macro" and macro_name(tag) in NAVIGATION_MACROS


def adf_children(tag: Tag) -> list:
    """An ``ac:adf-extension`` shows its HTML fallback when it has one (its nodes repeat it)."""
    fallback = tag.find("ac:adf-fallback", recursive=False)
    return list(fallback.children) if fallback is not None else list(tag.children)


def _parameter_visible(tag: Tag) -> bool:
    name = attribute(tag, "ac:name").lower()
    parent = tag.parent
    macro = macro_name(parent) if isinstance(parent, Tag) else ""
    return name in _VISIBLE_PARAMETERS or name in _VISIBLE_PARAMETERS_BY_MACRO.get(macro, ())


def link_label(tag: Tag) -> str:
    """The label an ``ac:link`` carries in the page ("" when it has none)."""
    for body in tag.find_all(("ac:link-body", "ac:plain-text-link-body")):
        text = _WS.sub(" ", body.get_text()).strip()
        if text:
            return text
    return ""


def target_label(tag: Tag) -> str:
    """Name of what an unlabelled ``ac:link`` points at: page title, file, space, URL or user."""
    for target in tag.find_all(True):
        if target.name == "ri:page":
            return attribute(target, "ri:content-title")
        if target.name == "ri:blog-post":
            return attribute(target, "ri:content-title")
        if target.name == "ri:attachment":
            return attribute(target, "ri:filename")
        if target.name == "ri:space":
            return attribute(target, "ri:space-key")
        if target.name == "ri:url":
            return attribute(target, "ri:value")
        if target.name == "ri:user":
            return user_label(target)
    return ""


def user_label(tag: Tag) -> str:
    """Confluence stores users as opaque keys; show ``@name`` or a short, stable handle."""
    name = attribute(tag, "ri:username")
    if name:
        return "@" + name
    key = attribute(tag, "ri:account-id") or attribute(tag, "ri:userkey")
    return "@user-" + key[-6:] if key else "@user"


class TextRenderer:
    """Renders a subtree into tokens: text pieces and separator strengths."""

    def __init__(self, list_markers: bool = True):
        self.list_markers = list_markers
        self._ordinal: dict[int, int] = {}  # id(li) -> number, for ordered lists

    def tokens(self, node, out: List[Token] | None = None) -> List[Token]:
        out = [] if out is None else out
        # Each stack entry is either a node to open or a closing action.
        stack: list = [("open", node, 0, False)]
        while stack:
            action, item, depth, pre = stack.pop()
            if action == "emit":
                out.append(item)
                continue
            if isinstance(item, NavigableString):
                self._string(item, out, pre)
                continue
            if not isinstance(item, Tag):
                continue
            opened = self._open(item, out, depth, pre)
            if opened is None:
                continue
            children, depth, pre, closing = opened
            if closing:
                stack.append(("emit", closing, depth, pre))
            for child in reversed(children):
                stack.append(("open", child, depth, pre))
        return out

    def _string(self, s: NavigableString, out: List[Token], pre: bool) -> None:
        if isinstance(s, (Comment, Declaration, Doctype, ProcessingInstruction)):
            return
        text = str(s)
        if pre:
            lines = text.replace("\u00a0", " ").split("\n")
            for i, line in enumerate(lines):
                if i:
                    out.append(LINE)
                if line:
                    out.append(line)
            return
        text = _WS.sub(" ", text)
        if text:
            out.append(text)

    def _open(self, tag: Tag, out: List[Token], depth: int, pre: bool) -> Opened:
        """Emit what opens ``tag``; return (children, list depth, pre, closing separator) or None."""
        if tag.name in SKIPPED or is_navigation_macro(tag):
            return None
        if tag.name == "ac:parameter":
            return _open_parameter(tag, depth, pre)
        if _emit_leaf(tag, out):
            return None
        if tag.name in ("ul", "ol", "ac:task-list"):
            return self._open_list(tag, out, depth, pre)
        if tag.name in ("li", "ac:task"):
            out.append(LINE)
            if self.list_markers:
                out.append("  " * max(depth - 1, 0) + self._marker(tag))
            return list(tag.children), depth, pre, LINE
        return _open_container(tag, out, depth, pre)

    def _open_list(self, tag: Tag, out: List[Token], depth: int, pre: bool) -> Opened:
        """A list one level deeper; an ``<ol>``'s items get their numbers (from ``start``) up front."""
        out.append(LINE)
        children = list(tag.children)
        if tag.name == "ol" and self.list_markers:
            start = str(tag.get("start", "1"))
            number = int(start) if start.isdigit() else 1
            for child in children:
                if isinstance(child, Tag) and child.name == "li":
                    self._ordinal[id(child)] = number
                    number += 1
        return children, depth + 1, pre, LINE

    def _marker(self, tag: Tag) -> str:
        if tag.name == "ac:task":
            status = tag.find("ac:task-status", recursive=False)
            done = status is not None and status.get_text(strip=True).lower() == "complete"
            return "[x] " if done else "[ ] "
        number = self._ordinal.get(id(tag))
        return f"{number}. " if number is not None else "- "


def _open_parameter(tag: Tag, depth: int, pre: bool) -> Opened:
    """A macro parameter shows only when the page shows it (titles, a Jira key), inline in inline macros."""
    if not _parameter_visible(tag):
        return None
    inline_macro = isinstance(tag.parent, Tag) and macro_name(tag.parent) in INLINE_MACROS
    return list(tag.children), depth, pre, SPACE if inline_macro else LINE


def _emit_leaf(tag: Tag, out: List[Token]) -> bool:
    """Emit a tag whose children are not rendered (line breaks, links, users, times, images); whether it was one."""
    name = tag.name
    if name == "br":
        out.append(LINE)
    elif name == "ac:link":
        label = link_label(tag)
        if label:
            out.append(label)
        elif tag.find(("ri:page", "ri:blog-post", "ri:attachment", "ri:space", "ri:url", "ri:user")):
            # no label in the page: Confluence shows the target's name, set off from the text
            out += [SPACE, target_label(tag), SPACE]
    elif name == "ri:user":
        out += [SPACE, user_label(tag), SPACE]
    elif name == "time" and not tag.get_text(strip=True):
        out.append(attribute(tag, "datetime"))
    elif name != "ac:image":
        return False
    return True


def _open_container(tag: Tag, out: List[Token], depth: int, pre: bool) -> Opened:
    """Any other tag: its children, set off as a cell, an inline macro, a block, or not at all."""
    name = tag.name
    if name == "ac:adf-extension":
        out.append(LINE)
        return adf_children(tag), depth, pre, LINE
    if name in ("td", "th"):
        out.append(CELL)
        return list(tag.children), depth, pre, CELL
    if name == "ac:structured-macro" and macro_name(tag) in INLINE_MACROS:
        out.append(SPACE)
        return list(tag.children), depth, pre, SPACE
    if name in BLOCKS or name in HEADINGS:
        out.append(LINE)
        return list(tag.children), depth, pre or name in PREFORMATTED, LINE
    return list(tag.children), depth, pre or name in PREFORMATTED, None


def join_tokens(tokens: List[Token], inline: bool = False) -> str:
    """Join rendered tokens: adjacent separators collapse to the strongest one."""
    seps = _INLINE_SEP if inline else _BLOCK_SEP
    parts: list[str] = []
    pending = 0
    for tok in tokens:
        if isinstance(tok, int):
            pending = max(pending, tok)
            continue
        if pending and parts:
            sep = seps[pending]
            if sep == " " and (parts[-1].endswith(" ") or tok.startswith(" ")):
                sep = ""
            elif sep != " ":
                parts[-1] = parts[-1].rstrip(" ")
                if inline:
                    tok = tok.lstrip(" ")
            parts.append(sep)
        elif parts and parts[-1].endswith(" ") and tok.startswith(" "):
            tok = tok[1:]
        pending = 0
        if tok:
            parts.append(tok)
    text = "".join(parts)
    if inline:
        return _WS.sub(" ", text).strip()
    lines = (_strip_line(line) for line in text.split("\n"))
    return "\n".join(line for line in lines if line.strip())


def _strip_line(line: str) -> str:
    """Trim a line, keeping deliberate indentation (nested list markers, code)."""
    line = line.rstrip()
    return line[1:] if line.startswith(" ") and not line.startswith("  ") else line


def render(node, inline: bool = False) -> str:
    """Text of ``node`` and everything below it: lines with list markers, or one line (cells)."""
    return join_tokens(TextRenderer(list_markers=not inline).tokens(node), inline=inline)
