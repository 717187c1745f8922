"""Checks an attachment passes before any reader opens it: its size, the type its bytes show, zip caps, macros.

Why before: a reader handed a decompression bomb or a file whose extension lies spends its time and
memory before it fails; these checks read a few bytes and the zip's directory. What they refuse is
given up with the reason (``AttachmentError``); the child process of ``isolation`` bounds the rest.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from llama_index_ragonite.parsing.attachments.errors import AttachmentError

MAX_FILE_BYTES = 100 * 1024 * 1024  # an attachment larger than this is skipped
MAX_UNZIPPED_BYTES = 300 * 1024 * 1024  # an Office file's parts, uncompressed
MAX_ZIP_RATIO = 100  # uncompressed / compressed over the whole archive
MAX_ZIP_ENTRIES = 20_000
MACRO_SUFFIXES = (".docm", ".xlsm", ".pptm")
_OFFICE_PART = {".docx": "word/document.xml", ".xlsx": "xl/workbook.xml", ".pptx": "ppt/presentation.xml"}
_TEXT = (".csv", ".md", ".markdown", ".txt")


def check(path: Path) -> None:
    """Raise ``AttachmentError`` (with the reason) for a file no reader should open."""
    suffix = path.suffix.lower()
    if suffix in MACRO_SUFFIXES:
        raise AttachmentError("a macro-enabled Office file: skipped (its macros are never run; save it without)")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise AttachmentError(f"{size:,} bytes, over the cap of {MAX_FILE_BYTES:,} bytes an attachment")
    with path.open("rb") as handle:
        head = handle.read(8192)
    if suffix == ".pdf" and b"%PDF-" not in head[:1024]:
        raise AttachmentError(f"named {suffix} but not a PDF (its first bytes are {head[:8]!r})")
    if suffix in _OFFICE_PART:
        _check_office(path, suffix, head)
    if suffix in _TEXT and b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise AttachmentError(f"named {suffix} but binary (NUL bytes): not a text file")


def _check_office(path: Path, suffix: str, head: bytes) -> None:
    if not head.startswith(b"PK\x03\x04"):
        raise AttachmentError(f"named {suffix} but not an Office file (no zip archive; first bytes {head[:8]!r})")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as err:
        raise AttachmentError(f"a broken {suffix} archive ({err})") from None
    names = {info.filename for info in infos}
    if _OFFICE_PART[suffix] not in names:
        raise AttachmentError(f"named {suffix} but holds no {_OFFICE_PART[suffix]}: another kind of file")
    if any(name.lower().endswith("vbaproject.bin") for name in names):
        raise AttachmentError("a macro-enabled Office file (it holds a VBA project): skipped, its macros never run")
    if len(infos) > MAX_ZIP_ENTRIES:
        raise AttachmentError(f"{len(infos):,} parts in its archive, over the cap of {MAX_ZIP_ENTRIES:,}")
    unzipped = sum(info.file_size for info in infos)
    packed = max(1, sum(info.compress_size for info in infos))
    if unzipped > MAX_UNZIPPED_BYTES or unzipped / packed > MAX_ZIP_RATIO:
        raise AttachmentError(
            f"a decompression bomb: {unzipped:,} bytes unpacked from {packed:,} (caps: {MAX_UNZIPPED_BYTES:,} "
            f"bytes, ratio {MAX_ZIP_RATIO})"
        )
