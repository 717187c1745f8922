"""Bytes of a page or text file -> text, in the encoding the file declares, else the one its bytes show.

Why: a Windows wiki export says ``<meta charset="windows-1252">`` and writes "Führungskraft" as one byte
for "ü"; read as UTF-8 with replacement it becomes "F�hrungskraft" in every evidence. The order:

1. a byte order mark (UTF-8, UTF-16, UTF-32): the bytes say it themselves;
2. a declared charset: the caller's (an attachment's HTTP ``Content-Type``), else an HTML page's own
   ``<meta charset>`` or ``<meta http-equiv="Content-Type" content="…; charset=…">`` in its first 4 KiB,
   else an XML declaration's ``encoding``; a declared name Python does not know is ignored (logged);
3. UTF-8 when the bytes are valid UTF-8 (the common case, and ASCII);
4. otherwise ``charset_normalizer``'s detection (a dependency), windows-1252 first among equally clean
   candidates, its choice logged; bytes that decode in no
   candidate keep U+FFFD replacements, logged.
"""

from __future__ import annotations

import codecs
import logging
import re
from typing import Optional, Tuple

logger = logging.getLogger(__name__)

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_META = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})""", re.I)
_XML = re.compile(rb"""^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})""", re.I)
_CONTENT_TYPE = re.compile(r"""charset\s*=\s*["']?([A-Za-z0-9._:-]{1,40})""", re.I)


def declared_charset(data: bytes, content_type: str = "") -> Optional[str]:
    """The charset ``content_type`` (an HTTP header) or the bytes' own head declares, if Python knows it."""
    found = _CONTENT_TYPE.search(content_type or "")
    name = found.group(1) if found else None
    if name is None:
        head = data[:4096]
        match = _META.search(head) or _XML.search(head)
        name = match.group(1).decode("ascii", "replace") if match else None
    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        logger.warning("declared charset %r is unknown; the encoding is detected instead", name)
        return None


def decode_bytes(data: bytes, content_type: str = "", name: str = "") -> Tuple[str, str]:
    """``(text, encoding)`` of ``data`` (module doc for the order); ``name`` only names the file in logs."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    declared = declared_charset(data, content_type)
    if declared:
        try:
            return data.decode(declared), declared
        except UnicodeDecodeError:
            logger.warning("%s declares %s but its bytes are not; the encoding is detected instead", name, declared)
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    detected = _detect(data)
    if detected:
        logger.info("%s is not UTF-8 and declares no charset; read as %s (detected)", name or "text", detected)
        return data.decode(detected, errors="replace"), detected
    logger.warning("%s is not valid UTF-8 and no encoding fits it; undecodable bytes replaced", name or "text")
    return data.decode("utf-8", errors="replace"), "utf-8"


def _detect(data: bytes) -> Optional[str]:
    """charset-normalizer's choice; among the candidates as clean as its best, windows-1252 first: the HTML
    standard's fallback for undeclared legacy text (on a short German text cp775 and cp1250 tie with it)."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    matches = list(from_bytes(data[:1_000_000]))
    if not matches:
        return None
    cleanest = min(m.chaos for m in matches)
    alike = {e for m in matches if m.chaos <= cleanest + 0.01 for e in m.could_be_from_charset}
    return "cp1252" if "cp1252" in alike else matches[0].encoding
