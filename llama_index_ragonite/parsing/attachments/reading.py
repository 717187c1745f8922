"""A folder walk's attachments: read through one isolated child, or skipped with one line naming the extra.

``load_pages`` opens an ``AttachmentReading`` for its run: the child starts at the first attachment and
ends with the walk; files whose reader's library is missing are collected and reported once (not one
warning per file), and kept in the walk's ``skipped`` so a store keeps what it had of them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from llama_index.core.schema import Document

from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES, AttachmentError, available
from llama_index_ragonite.parsing.attachments.guard import MACRO_SUFFIXES
from llama_index_ragonite.parsing.file_names import display_path

logger = logging.getLogger(__name__)

ATTACHMENT_FILES = (*ATTACHMENT_SUFFIXES, *MACRO_SUFFIXES)  # the suffixes a folder walk hands to this module


class AttachmentReading:
    """One walk's attachment reading (module doc)."""

    def __init__(self, root: Path, base_url: Optional[str] = None) -> None:
        self.root, self.base_url = root, base_url
        self.without_extra: Dict[str, str] = {}  # page id -> the line naming the extra
        self._reader: Optional[Any] = None

    def __enter__(self) -> "AttachmentReading":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._reader is not None:
            self._reader.close()
        if self.without_extra:
            logger.warning(
                "%d attachment file(s) skipped, e.g. %s: %s",
                len(self.without_extra),
                next(iter(self.without_extra)),
                next(iter(self.without_extra.values())),
            )

    def documents(self, path: Path) -> List[Document]:
        """The documents of one attachment; ``AttachmentError`` (a ``PageLoadError``) naming it when given up."""
        from llama_index_ragonite.parsing.attachments.documents import attachment_documents
        from llama_index_ragonite.parsing.attachments.isolation import IsolatedReader

        suffix = path.suffix.lower()
        missing = available(suffix) if suffix in ATTACHMENT_SUFFIXES else None
        if missing:
            self.without_extra[display_path(path.relative_to(self.root).as_posix())] = missing
            return []
        if self._reader is None:
            self._reader = IsolatedReader()
        try:
            parts = self._reader.read(path)
        except AttachmentError as err:
            raise AttachmentError(f"{display_path(path.relative_to(self.root).as_posix())}: {err}") from None
        return attachment_documents(path, self.root, parts, self.base_url)
