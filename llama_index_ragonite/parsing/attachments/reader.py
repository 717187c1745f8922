"""``AttachmentReader``: the attachment readers as a LlamaIndex ``BaseReader``, for a stock pipeline.

``SimpleDirectoryReader(dir, file_extractor={".pdf": AttachmentReader(), ".xlsx": AttachmentReader(), …})``
(or ``AttachmentReader.file_extractor()`` for every format) gives the same ``Document``s of HTML that
``load_pages`` gives, read through the same guarded child process, with the file's own metadata from
``SimpleDirectoryReader`` (``extra_info``) kept beside ``attachment``, ``location`` and ``location_kind``.
A file given up raises ``AttachmentError`` with the reason (``SimpleDirectoryReader(raise_on_error=False)``
skips it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document

from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES


class AttachmentReader(BaseReader):
    """PDF, Word, spreadsheet, slide, CSV, Markdown and text files -> ``Document``s (module doc)."""

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None, **kwargs: Any) -> List[Document]:
        from llama_index_ragonite.parsing.attachments.documents import attachment_documents
        from llama_index_ragonite.parsing.attachments.isolation import IsolatedReader

        path = Path(file)
        with IsolatedReader() as reader:
            parts = reader.read(path)
        documents = attachment_documents(path, path.parent, parts)
        for document in documents:
            document.metadata = {**(extra_info or {}), **document.metadata}
        return documents

    @classmethod
    def file_extractor(cls) -> Dict[str, BaseReader]:
        """``SimpleDirectoryReader``'s ``file_extractor`` for every attachment format."""
        reader = cls()
        return {suffix: reader for suffix in ATTACHMENT_SUFFIXES}
