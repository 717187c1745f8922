"""PDF files (pdfplumber) -> one part per page: headings, paragraphs, lists and tables in reading order.

- Ruled tables: pdfplumber's line-based table finder. Borderless tables: runs of at least three lines
  whose words fall into the same three or more columns (gaps of ``COLUMN_GAP`` points between cells);
  two-column prose has two, so it stays prose.
- Reading order: lines top to bottom; where consecutive lines each have text on both sides of a gutter
  (a two-column layout), the left column is read before the right one.
- Headings: bold lines larger than the body text, the largest size level 1; a page goes on under the
  headings open at the end of the page before (they start its part again), so a section that continues
  on the next page keeps its heading path.
- A page without a text layer (a scan) gives nothing; a file whose pages all lack one is given up:
  no OCR engine is assumed (docs/index.md says how to add one).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple, cast

from llama_index_ragonite.parsing.attachments.errors import AttachmentError
from llama_index_ragonite.parsing.attachments.html_out import Part, escape, table_html

COLUMN_GAP = 0.45  # × the font size: a gap between two cells of a borderless row (a space is ~0.3 of it)
_ITEM = re.compile(r"^(?:[•\-–*▪●]\s+|\d{1,2}[.)]\s+)")
Word = Dict[str, Any]


def read_pdf(path: Path, password: str = "") -> List[Part]:
    import pdfplumber

    try:
        pdf = pdfplumber.open(str(path), password=password or None)
    except Exception as err:  # pdfminer raises its own types (PDFPasswordIncorrect, PDFSyntaxError)
        name, detail = type(err).__name__, repr(err)  # pdfplumber wraps pdfminer's PDFPasswordIncorrect
        encrypted = "Password" in detail or "Encrypt" in detail
        reason = "encrypted (a password is needed)" if encrypted else f"unreadable ({name})"
        raise AttachmentError(f"PDF {reason}") from None
    with pdf:
        pages = [_page_lines(page) for page in pdf.pages]
    if not any(lines or tables for lines, tables in pages):
        raise AttachmentError("no text layer (a scanned PDF; no OCR engine is configured)")
    sizes = [w["size"] for lines, _ in pages for line in lines for w in line]
    body = statistics.median(sizes) if sizes else 10.0
    heading_sizes = sorted({round(line[0]["size"], 1) for lines, _ in pages for line in lines if _heading(line, body)})
    levels = {size: min(i + 1, 6) for i, size in enumerate(reversed(heading_sizes))}
    parts: List[Part] = []
    open_headings: List[Tuple[int, str]] = []  # the headings open at the end of the page before: (level, text)
    for number, (lines, tables) in enumerate(pages, 1):
        html = [f"<h{lv}>{escape(text)}</h{lv}>" for lv, text in open_headings]
        html += _blocks(lines, tables, body, levels, open_headings)
        parts.append(Part("".join(html), number, f"page {number}"))
    return parts


def _page_lines(page: Any) -> Tuple[List[List[Word]], List[Tuple[float, str]]]:
    """The page's text lines outside tables, and its tables as (top, HTML)."""
    tables: List[Tuple[float, str]] = []
    boxes = []
    for found in page.find_tables():
        rows = [[" ".join((cell or "").split()) for cell in row] for row in found.extract()]
        if len(rows) >= 2 and len(rows[0]) >= 2:
            tables.append((found.bbox[1], table_html(rows, 1)))
            boxes.append(found.bbox)
    words = [
        w
        for w in page.extract_words(extra_attrs=["size", "fontname"], keep_blank_chars=False, use_text_flow=False)
        if not any(b[0] - 1 <= w["x0"] and w["x1"] <= b[2] + 1 and b[1] - 1 <= w["top"] <= b[3] + 1 for b in boxes)
    ]
    lines = _lines(words)
    lines, borderless = _borderless(lines)
    return lines, sorted(tables + borderless, key=lambda t: t[0])


def _lines(words: List[Word]) -> List[List[Word]]:
    lines: List[List[Word]] = []
    for word in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if lines and abs(lines[-1][0]["top"] - word["top"]) <= 2:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _segments(line: Sequence[Word]) -> List[List[Word]]:
    out: List[List[Word]] = [[line[0]]]
    for word in line[1:]:
        if word["x0"] - out[-1][-1]["x1"] >= COLUMN_GAP * word["size"]:
            out.append([word])
        else:
            out[-1].append(word)
    return out


def _borderless(lines: List[List[Word]]) -> Tuple[List[List[Word]], List[Tuple[float, str]]]:
    """Runs of ≥ 3 lines whose words, taken together, leave ≥ 3 columns apart (gaps no line's text crosses)
    -> tables, a cell per column a line has text in; prose fills its width and ends a run."""
    kept: List[List[Word]] = []
    tables: List[Tuple[float, str]] = []
    i = 0
    while i < len(lines):
        j, columns = i, cast(List[List[float]], [])
        while j < len(lines) and len(_segments(lines[j])) >= 2:
            wider = _merge(columns + [[w["x0"], w["x1"]] for w in lines[j]], COLUMN_GAP * lines[j][0]["size"])
            if len(wider) < 3:
                break
            columns, j = wider, j + 1
        if j - i >= 3 and len(_segments(lines[i])) >= 3:
            rows = []
            for line in lines[i:j]:
                row = [""] * len(columns)
                for w in line:
                    k = next(n for n, c in enumerate(columns) if c[0] <= w["x0"] and w["x1"] <= c[1])
                    row[k] = f"{row[k]} {w['text']}".strip()
                rows.append(row)
            tables.append((lines[i][0]["top"], table_html(_aligned(rows), 1)))
            i = j
        else:
            kept.append(lines[i])
            i += 1
    return kept, tables


def _aligned(rows: List[List[str]]) -> List[List[str]]:
    """Adjacent columns that no row fills both of are one column aligned two ways (a left-aligned header
    over right-aligned numbers)."""
    k = 0
    while rows and k < len(rows[0]) - 1:
        if not any(row[k] and row[k + 1] for row in rows):
            rows = [row[:k] + [row[k] or row[k + 1]] + row[k + 2 :] for row in rows]
        else:
            k += 1
    return rows


def _merge(spans: List[List[float]], gap: float) -> List[List[float]]:
    """``spans`` merged where they overlap or lie closer than ``gap``."""
    merged: List[List[float]] = []
    for a, b in sorted(spans):
        if merged and a < merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def _heading(line: Sequence[Word], body: float) -> bool:
    return all("bold" in w["fontname"].lower() for w in line) and line[0]["size"] > body * 1.1


def _reading_order(lines: List[List[Word]]) -> List[List[Word]]:
    """Lines top to bottom; a run of lines that leave a gutter free, with text on both sides of it, is read as
    two columns: its left halves first, then its right halves (the columns' lines need not align)."""
    gutter = _gutter(lines)
    if gutter is None:
        return lines
    out: List[List[Word]] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and not _crosses(lines[j], gutter):
            j += 1
        run = lines[i:j]
        left = [[w for w in line if w["x1"] <= gutter] for line in run]
        right = [[w for w in line if w["x0"] >= gutter] for line in run]
        if any(right) and any(left) and len(run) >= 2:
            out += [line for line in left if line] + [line for line in right if line]
            i = j
        else:
            out.append(lines[i])
            i += 1
    return out


def _crosses(line: Sequence[Word], x: float) -> bool:
    return any(w["x0"] < x < w["x1"] for w in line) or any(
        a["x1"] <= x <= b["x0"] and b["x0"] - a["x1"] < COLUMN_GAP * a["size"] for a, b in zip(line, line[1:])
    )


def _gutter(lines: List[List[Word]]) -> float | None:
    """The x in the page's middle band that the most lines with text on both of its sides leave free
    (at least three such lines), or None: a one-column page."""
    if not lines:
        return None
    lo = min(w["x0"] for line in lines for w in line)
    hi = max(w["x1"] for line in lines for w in line)
    best, best_x = 0, None
    for step in range(30, 71, 2):
        x = lo + (hi - lo) * step / 100
        free = [line for line in lines if not _crosses(line, x)]
        both = sum(1 for line in free if line[0]["x1"] <= x <= line[-1]["x0"])
        sides = any(line[-1]["x1"] <= x for line in free) and any(line[0]["x0"] >= x for line in free)
        if sides and both + len(free) > best and len(free) >= 3:
            best, best_x = both + len(free), x
    return best_x


def _blocks(
    lines: List[List[Word]], tables: List[Tuple[float, str]], body: float, levels: Dict[float, int], open_: list
) -> List[str]:
    """HTML of the page: paragraphs (lines closer than 1.6 line heights), items, headings, tables by position."""
    html: List[str] = []
    pending = list(tables)
    paragraph: List[str] = []
    last_bottom = None

    def flush() -> None:
        if paragraph:
            text = " ".join(paragraph)
            html.append(
                f"<ul><li>{escape(_ITEM.sub('', text))}</li></ul>" if _ITEM.match(text) else f"<p>{escape(text)}</p>"
            )
            paragraph.clear()

    for line in _reading_order(lines):
        top = line[0]["top"]
        while pending and pending[0][0] <= top:
            flush()
            html.append(pending.pop(0)[1])
        text = " ".join(w["text"] for w in line)
        if _heading(line, body):
            flush()
            level = levels.get(round(line[0]["size"], 1), 2)
            open_[:] = [h for h in open_ if h[0] < level] + [(level, text)]
            html.append(f"<h{level}>{escape(text)}</h{level}>")
            last_bottom = line[0]["bottom"]
            continue
        gap = top - last_bottom if last_bottom is not None else 0
        if paragraph and (gap > 0.6 * line[0]["size"] or gap < -line[0]["size"] or _ITEM.match(text)):
            flush()
        paragraph.append(text)
        last_bottom = line[0]["bottom"]
    flush()
    html.extend(t for _, t in pending)
    return html
