"""Why an attachment was given up: a ``PageLoadError``, so a folder walk skips it with the reason and a file
indexed before keeps its previous evidences (``EvidenceStore.ingest(failed=…)``), as a page does."""

from __future__ import annotations

from llama_index_ragonite.errors import PageLoadError


class AttachmentError(PageLoadError):
    """The file cannot be read as the attachment it claims to be (the message says why)."""
