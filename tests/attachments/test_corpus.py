"""The judge's own checks: the corpus files exist, read back with their writers' libraries as described, and hold
what issue 61 asks the extractor to survive (ruled and borderless tables, merged cells, multi-row headers,
two-column PDF text, a table split across PDF pages). No extraction code is used here."""

from __future__ import annotations

import csv
import re
from html.parser import HTMLParser
from pathlib import Path

import docx
import openpyxl
import pytest
from pptx import Presentation

from .corpus import Corpus, FileSpec, build_corpus

MM = 72 / 25.4  # PDF points per millimetre


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("attachments"))


def _of_type(corpus: Corpus, kind: str) -> list[FileSpec]:
    return [f for f in corpus.files if f.type == kind]


def test_every_file_is_written_and_described_once(corpus):
    written = sorted(p.name for p in Path(corpus.directory).iterdir())
    assert written == sorted(f.name for f in corpus.files)
    assert {f.type for f in corpus.files} == {"docx", "xlsx", "csv", "pptx", "pdf", "md", "txt"}
    assert len(corpus.files) >= 10
    languages = {item.language for f in corpus.files for item in [*f.texts, *f.tables]}
    assert languages == {"en", "de"}
    assert Corpus.from_json(corpus.to_json()) == corpus


def test_the_corpus_holds_what_the_issue_asks_the_extractor_to_survive(corpus):
    tables = [t for _, t in corpus.tables()]
    assert sum(t.ruled is True for t in tables) >= 3 and sum(t.ruled is False for t in tables) >= 2
    pdf_tables = [t for f in _of_type(corpus, "pdf") for t in f.tables]
    assert {t.ruled for t in pdf_tables} == {True, False}  # both kinds in a PDF, where lines are all there is
    spans = [m for t in tables for m in t.merges]
    assert any(rowspan > 1 for _, _, rowspan, _ in spans) and any(colspan > 1 for _, _, _, colspan in spans)
    body_merges = [t for t in tables if any(r >= len(t.header_rows) for r, _, _, _ in t.merges)]
    assert body_merges, "a merged cell inside a table body, not only in a header"
    assert {f.type for f in corpus.files for t in f.tables if len(t.header_rows) > 1} >= {"docx", "xlsx"}
    split = [t for t in pdf_tables if t.row_pages and len(set(t.row_pages)) == 2]
    assert len(split) == 1 and split[0].header_repeated is True
    two_column = [(t.location, t.column) for f in _of_type(corpus, "pdf") for t in f.texts if t.column]
    assert {column for _, column in two_column} == {1, 2} and len({page for page, _ in two_column}) == 1
    assert [column for _, column in two_column] == sorted(column for _, column in two_column)  # left, then right
    assert sum(len(f.texts) for f in corpus.files) >= 100
    assert sum(len(t.body_rows) for t in tables) >= 80


def test_headers_join_levels_and_pairs_skip_empty_cells(corpus):
    mileage = next(t for t in corpus.file("travel_policy.docx").tables if t.name == "mileage_allowance")
    assert mileage.headers() == [
        "Vehicle", "Rate per km (EUR) / up to 300 km", "Rate per km (EUR) / above 300 km", "Maximum per trip (km)",
    ]  # fmt: skip
    assert mileage.pairs()[0][:2] == [("Vehicle", "Private car"), ("Rate per km (EUR) / up to 300 km", "0.30")]
    prices = corpus.file("preisliste_2024.xlsx").tables[0]
    assert prices.headers()[2:4] == ["Preis (EUR) / netto", "Preis (EUR) / brutto"]
    total = corpus.file("preisliste_2024.xlsx").tables[1].pairs()[-1]
    assert [h for h, _ in total] == ["Order", "Quantity", "Total (EUR)", "Net (EUR)"]


class _Grid(HTMLParser):
    """Expands an HTML table's rowspan/colspan into a grid, the value repeated in every covered position."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[int, str]] = []
        self.pending: dict[tuple[int, int], str] = {}
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append({})
            self.column = 0
        elif tag in ("td", "th"):
            self.cell, self.span = [], dict(attrs)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            r = len(self.rows) - 1
            while (r, self.column) in self.pending or self.column in self.rows[r]:
                self.rows[r][self.column] = self.pending.pop((r, self.column), self.rows[r].get(self.column, ""))
                self.column += 1
            text = "".join(self.cell)
            for i in range(int(self.span.get("rowspan", 1))):
                for j in range(int(self.span.get("colspan", 1))):
                    self.pending[(r + i, self.column + j)] = text
            self.cell = None
        elif tag == "tr":
            r = len(self.rows) - 1
            for row, col in [k for k in self.pending if k[0] == r]:
                self.rows[r][col] = self.pending.pop((row, col))


def test_tables_as_html_expand_back_to_the_described_grid(corpus):
    for _, table in corpus.tables():
        parser = _Grid()
        parser.feed(table.to_html())
        grid = [[row[c] for c in sorted(row)] for row in parser.rows]
        assert grid == table.header_rows + table.body_rows, table.name
    assert 'rowspan="3"' in corpus.file("travel_policy.docx").tables[1].to_html()


def test_word_files_read_back_as_described(corpus):
    for spec in _of_type(corpus, "docx"):
        document = docx.Document(str(Path(corpus.directory) / spec.name))
        read = []
        for paragraph in document.paragraphs:
            style = paragraph.style.name
            if style.startswith("Heading "):
                read.append(("heading", paragraph.text, int(style.split()[1]), False))
            elif style.startswith("List "):
                read.append(("list_item", paragraph.text, 1, style == "List Number"))
            else:
                read.append(("paragraph", paragraph.text, 0, False))
        assert read == [(t.kind, t.text, t.level, t.ordered) for t in spec.texts]
        assert len(document.tables) == len(spec.tables)
        for written, table in zip(document.tables, spec.tables):
            grid = [[cell.text for cell in row.cells] for row in written.rows]  # a merged cell in every position
            assert grid == table.header_rows + table.body_rows, table.name
    coordinators = corpus.file("travel_policy.docx").tables[1]
    assert coordinators.heading_path == ["Travel Policy 2024", "Travel coordinators"]
    approvals = [t for t in corpus.file("travel_policy.docx").texts if t.ordered]
    assert approvals[0].heading_path == ["Travel Policy 2024", "Booking", "Approvals"]


def test_workbook_reads_back_with_cached_formula_values(corpus):
    spec = corpus.file("preisliste_2024.xlsx")
    path = Path(corpus.directory) / spec.name
    values = openpyxl.load_workbook(path, data_only=True)
    formulas = openpyxl.load_workbook(path)
    assert values.sheetnames == [t.sheet for t in spec.tables] == ["Preisliste", "Orders"]
    assert {str(r) for r in values["Preisliste"].merged_cells.ranges} == {"A1:A2", "B1:B2", "C1:D1", "E1:E2", "F1:F2"}
    for index, table in enumerate(spec.tables, start=1):
        assert table.location == index
        sheet = values[table.sheet]
        rows = list(sheet.iter_rows(min_row=len(table.header_rows) + 1, values_only=True))
        assert len(rows) == len(table.body_rows)
        for read, written in zip(rows, table.body_rows):
            for value, cell in zip(read, written):
                raw = "" if value is None else value.date().isoformat() if hasattr(value, "date") else str(value)
                assert raw == cell or raw in table.alternatives.get(cell, []), (table.name, value, cell)
    cached = [c for row in formulas["Orders"].iter_rows() for c in row if str(c.value).startswith("=")]
    assert len(cached) == 11
    assert all(isinstance(values["Orders"][c.coordinate].value, (int, float)) for c in cached)
    assert values["Orders"]["H6"].value == pytest.approx(20076.4)


def test_csv_files_read_back_as_described(corpus):
    for spec in _of_type(corpus, "csv"):
        delimiter = ";" if spec.name == "kostenstellen.csv" else ","
        raw = (Path(corpus.directory) / spec.name).read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf") == (spec.encoding == "utf-8-sig")
        with open(Path(corpus.directory) / spec.name, encoding=spec.encoding, newline="") as handle:
            rows = list(csv.reader(handle, delimiter=delimiter))
        assert rows == spec.tables[0].header_rows + spec.tables[0].body_rows


def test_slides_read_back_as_described(corpus):
    spec = corpus.file("onboarding_deck.pptx")
    deck = Presentation(str(Path(corpus.directory) / spec.name))
    assert len(deck.slides) == spec.locations == 5
    for number, slide in enumerate(deck.slides, start=1):
        items = [t for t in spec.texts if t.location == number]
        assert items[0].kind == "title" and items[0].text == slide.shapes.title.text
        read = []
        for shape in slide.placeholders:
            if shape.placeholder_format.idx != 0:
                read.extend((p.text, p.level + 1) for p in shape.text_frame.paragraphs)
        assert read == [(t.text, max(t.level, 1)) for t in items[1:]]
        tables = [s.table for s in slide.shapes if s.has_table]
        described = [t for t in spec.tables if t.location == number]
        assert len(tables) == len(described)
        for table, expected in zip(tables, described):
            assert [[c.text for c in row.cells] for row in table.rows] == expected.header_rows + expected.body_rows


def test_markdown_and_text_files_hold_every_item(corpus):
    for spec in _of_type(corpus, "md") + _of_type(corpus, "txt"):
        text = (Path(corpus.directory) / spec.name).read_text(encoding="utf-8")
        for item in spec.texts:
            assert item.text in text
        for table in spec.tables:
            for row in table.header_rows + table.body_rows:
                assert "| " + " | ".join(row) + " |" in text


def _words(text: str) -> str:
    return " ".join(text.split())


def test_pdf_page_counts(corpus):
    for spec in _of_type(corpus, "pdf"):
        raw = (Path(corpus.directory) / spec.name).read_bytes()
        assert len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", raw)) == spec.locations
        assert max(t.location or 0 for t in spec.texts) == spec.locations


def test_pdf_items_are_on_their_pages_and_columns(corpus):
    pdfplumber = pytest.importorskip("pdfplumber")  # installed with the [attachments] extra
    for spec in _of_type(corpus, "pdf"):
        with pdfplumber.open(Path(corpus.directory) / spec.name) as pdf:
            assert len(pdf.pages) == spec.locations
            pages = [_words(p.extract_text()) for p in pdf.pages]
            for item in spec.texts:
                page = pdf.pages[item.location - 1]
                if item.column:  # the left column lies left of the page's middle, the right one right of it
                    half = (0, 0, 105 * MM, page.height) if item.column == 1 else (105 * MM, 0, page.width, page.height)
                    assert _words(item.text) in _words(page.crop(half).extract_text())
                else:
                    assert _words(item.text) in pages[item.location - 1], item.text
                other = [p for n, p in enumerate(pages, 1) if n != item.location]
                assert not any(_words(item.text) in p for p in other)
            for table in spec.tables:
                for row, page_number in zip(table.body_rows, table.row_pages or []):
                    assert " ".join(row) in pages[page_number - 1], (table.name, row)
                for page_number in sorted(set(table.row_pages or [])):
                    header = " ".join(table.header_rows[0])
                    first = page_number == table.location
                    assert (header in pages[page_number - 1]) == (first or bool(table.header_repeated))
                page = pdf.pages[table.location - 1]
                found = page.search(" ".join(table.body_rows[0]), regex=False)
                assert len(found) == 1, (table.name, found)
                boxed = [r for r in page.rects if r["top"] <= found[0]["top"] and r["bottom"] >= found[0]["bottom"]]
                assert bool(boxed) == table.ruled, table.name  # cell lines around the text, or none
