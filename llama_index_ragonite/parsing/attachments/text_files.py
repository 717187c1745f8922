"""Markdown (.md, through markdown-it's CommonMark HTML with its table extension) and plain text (.txt) -> parts.

A text file's paragraphs are the blocks between blank lines; lines that start with "-", "*" or "•" are
a list, as the HTML parser reads such lines on a wiki page. Both are decoded as ``parsing.charset`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

from llama_index_ragonite.parsing.attachments.html_out import Part, escape
from llama_index_ragonite.parsing.charset import decode_bytes


def _text(path: Path) -> str:
    return decode_bytes(path.read_bytes(), name=str(path))[0].lstrip("\ufeff").replace("\r\n", "\n")


def read_markdown(path: Path) -> List[Part]:
    from markdown_it import MarkdownIt

    return [Part(MarkdownIt("commonmark", {"html": False}).enable("table").render(_text(path)))]


def read_text_file(path: Path) -> List[Part]:
    blocks = [b.strip() for b in _text(path).split("\n\n") if b.strip()]
    html = []
    for block in blocks:
        lines = [" ".join(line.split()) for line in block.splitlines() if line.strip()]
        if all(line[:1] in "-*•" for line in lines):
            html.append("<ul>" + "".join(f"<li>{escape(line[1:].strip())}</li>" for line in lines) + "</ul>")
        else:
            html.append(f"<p>{escape(' '.join(lines))}</p>")
    return [Part("".join(html))]
