"""Word (.docx, through mammoth's HTML) and PowerPoint (.pptx, python-pptx) files -> parts.

Why mammoth: it maps Word's heading styles to ``<h1>``–``<h6>``, its lists to ``<ul>``/``<ol>`` and its
tables (merged cells as colspan/rowspan) to ``<table>``, so our own HTML parser builds the passages,
lists, tables and rows; images are dropped (no OCR). A slide is a part of its own (location: its number):
its title an ``<h1>``, each text frame's paragraphs a list or a paragraph by their bullet levels, each
table a table (its first row the header; merged cells with their spans), in the order the shapes are
drawn, top to bottom.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

from llama_index_ragonite.parsing.attachments.html_out import Part, Span, escape, table_html


def read_docx(path: Path) -> List[Part]:
    import mammoth

    with path.open("rb") as handle:
        result = mammoth.convert_to_html(handle, convert_image=mammoth.images.img_element(lambda image: {}))
    return [Part(result.value.replace("<img />", ""))]


def read_pptx(path: Path) -> List[Part]:
    from pptx import Presentation

    parts = []
    for number, slide in enumerate(Presentation(str(path)).slides, 1):
        title_shape = slide.shapes.title
        html = [f"<h1>{escape(_text(title_shape.text_frame))}</h1>"] if title_shape is not None else []
        shapes = sorted(slide.shapes, key=lambda s: ((s.top or 0), (s.left or 0)))
        for shape in shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                html.append(_table(shape.table))
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                html.append(_frame(shape.text_frame, _bulleted(shape)))
        parts.append(Part("".join(html), number, f"slide {number}"))
    return parts


def _text(frame: Any) -> str:
    return " ".join(" ".join(p.text for p in frame.paragraphs).split())


def _frame(frame: Any, bulleted: bool) -> str:
    """A text frame: a body placeholder's paragraphs as a list nested by their levels; a text box's or a
    subtitle's as paragraphs, those indented below the top level as a list."""
    out: List[str] = []
    depth = 0
    for paragraph in frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if not text:
            continue
        level = paragraph.level + 1 if bulleted or paragraph.level > 0 else 0
        while depth < level:
            out.append("<ul>")
            depth += 1
        while depth > level:
            out.append("</ul>")
            depth -= 1
        out.append(f"<li>{escape(text)}</li>" if level else f"<p>{escape(text)}</p>")
    out.extend("</ul>" * depth)
    return "".join(out)


def _bulleted(shape: Any) -> bool:
    """A body or content placeholder: its layout shows each paragraph with a bullet."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    return bool(shape.is_placeholder) and shape.placeholder_format.type in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)


def _table(table: Any) -> str:
    rows = list(table.rows)
    grid = [[" ".join(cell.text.split()) for cell in row.cells] for row in rows]
    spans: List[Span] = []
    for r, row in enumerate(rows):
        for c, cell in enumerate(row.cells):
            if cell.is_merge_origin:
                spans.append((r, c, cell.span_height, cell.span_width))
                for i in range(cell.span_height):
                    for j in range(cell.span_width):
                        grid[r + i][c + j] = grid[r][c]
    return table_html(grid, 1, spans)
