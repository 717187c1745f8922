"""Hostile attachments are given up with a clear reason, bounded in time and memory, and nothing else in the run
is lost (issue 61): each case sits in a folder beside a good file that must still be read."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from fpdf import FPDF

from llama_index_ragonite import load_pages
from llama_index_ragonite.parsing.attachments import AttachmentError
from llama_index_ragonite.parsing.attachments.isolation import IsolatedReader

GOOD = "Die Führungskraft gibt jede Reise im Portal frei."


def _pdf(path: Path, text: str = GOOD, password: str = "") -> Path:
    pdf = FPDF()
    if password:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def _skipped(folder: Path) -> dict:
    skipped: dict = {}
    docs = load_pages(folder, skipped=skipped)
    assert any(GOOD in d.text for d in docs)  # the good file beside it is read
    return skipped


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    _pdf(tmp_path / "good.pdf")
    return tmp_path


@pytest.mark.fault("attachment: encrypted PDF", "skipped: 'PDF encrypted (a password is needed)'", area="parsing")
def test_an_encrypted_pdf_is_given_up_with_the_reason(folder):
    _pdf(folder / "secret.pdf", "Gehälter 2024", password="user")
    assert "PDF encrypted (a password is needed)" in _skipped(folder)["secret.pdf"]


@pytest.mark.fault(
    "attachment: a file whose extension lies about its type",
    "skipped: 'named .pdf but not a PDF' / 'named .docx but not an Office file'",
    area="parsing",
)
def test_a_file_whose_extension_lies_is_given_up(folder):
    (folder / "photo.pdf").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (folder / "page.docx").write_text("<html><body>not word</body></html>")
    skipped = _skipped(folder)
    assert "named .pdf but not a PDF" in skipped["photo.pdf"]
    assert "named .docx but not an Office file" in skipped["page.docx"]


@pytest.mark.fault(
    "attachment: a decompression bomb in a .docx/.xlsx",
    "skipped before any reader opens it: 'a decompression bomb: N bytes unpacked from M'",
    area="parsing",
)
def test_a_decompression_bomb_is_refused_from_the_zip_directory(folder):
    with zipfile.ZipFile(folder / "bomb.xlsx", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"\x00" * (60 * 1024 * 1024))
    assert "a decompression bomb" in _skipped(folder)["bomb.xlsx"]


@pytest.mark.fault(
    "attachment: a macro-enabled Office file (.xlsm, or a VBA project inside a .xlsx)",
    "skipped: 'a macro-enabled Office file', its macros never run",
    area="parsing",
)
def test_a_macro_enabled_office_file_is_skipped(folder):
    for name in ("macros.xlsm", "hidden.xlsx"):
        with zipfile.ZipFile(folder / name, "w") as archive:
            archive.writestr("[Content_Types].xml", "<Types/>")
            archive.writestr("xl/workbook.xml", "<workbook/>")
            archive.writestr("xl/vbaProject.bin", b"VBA")
    skipped = _skipped(folder)
    assert "macro-enabled Office file" in skipped["macros.xlsm"] and "macro-enabled" in skipped["hidden.xlsx"]


@pytest.mark.fault(
    "attachment: a spreadsheet of 1,048,576 rows",
    "skipped from its declared dimensions, before its cells load: 'over the cap of 20,000 rows'",
    area="parsing",
)
def test_a_sheet_of_a_million_rows_is_given_up_from_its_dimensions(folder):
    from openpyxl import Workbook

    book = Workbook()
    book.active.append(["Key", "Value"])
    book.active.append(["a", "1"])
    book.save(folder / "huge.xlsx")
    with zipfile.ZipFile(folder / "huge.xlsx") as src:
        parts = {name: src.read(name) for name in src.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    parts["xl/worksheets/sheet1.xml"] = sheet.replace(
        '<dimension ref="A1:B2"/>', '<dimension ref="A1:B1048576"/>'
    ).encode()
    with zipfile.ZipFile(folder / "huge.xlsx", "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in parts.items():
            dst.writestr(name, data)
    assert "1,048,576 rows" in _skipped(folder)["huge.xlsx"]


@pytest.mark.fault(
    "attachment: a reader that runs too long or past its memory cap",
    "its child process is killed ('took longer than N s' / 'its reader died'), the next file is read",
    area="parsing",
)
def test_a_reader_past_its_deadline_or_memory_is_killed_and_the_next_file_is_read(folder):
    good = folder / "good.pdf"
    with IsolatedReader(timeout_s=0.001) as hasty:
        with pytest.raises(AttachmentError, match="took longer than"):
            hasty.read(good)
    with IsolatedReader(memory_bytes=24 * 1024 * 1024) as starved:
        with pytest.raises(AttachmentError, match="its reader died|memory cap"):
            starved.read(good)
    with IsolatedReader() as reader:
        assert GOOD in reader.read(good)[0].html


@pytest.mark.fault(
    "attachment: a scanned PDF without a text layer",
    "skipped: 'no text layer (a scanned PDF; no OCR engine is configured)'",
    area="parsing",
)
def test_a_pdf_without_text_is_reported_as_a_scan(folder):
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")  # a picture of a page, no text
    pdf.output(str(folder / "scan.pdf"))
    assert "no text layer" in _skipped(folder)["scan.pdf"]


@pytest.mark.fault(
    "attachments without the [attachments] extra installed",
    "skipped with one warning that names the extra; a store keeps what it had of them",
    area="parsing",
)
def test_without_the_extra_attachments_are_skipped_with_one_line(folder, monkeypatch, caplog):
    from llama_index_ragonite.parsing.attachments import reading

    line = "'.pdf files need the [attachments] extra: pip install 'llama-index-ragonite[attachments]'"
    monkeypatch.setattr(reading, "available", lambda suffix: line)
    _pdf(folder / "second.pdf")
    (folder / "page.html").write_text(f"<html><head><title>P</title></head><body><p>{GOOD}</p></body></html>")
    skipped: dict = {}
    docs = load_pages(folder, skipped=skipped)
    assert [d.id_ for d in docs] == ["page.html"]
    assert skipped == {"good.pdf": line, "second.pdf": line}
    warnings = [r.getMessage() for r in caplog.records if "attachment file(s) skipped" in r.getMessage()]
    assert len(warnings) == 1 and "2 attachment file(s) skipped" in warnings[0] and "[attachments]" in warnings[0]
