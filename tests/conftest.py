from __future__ import annotations

import os
from pathlib import Path

import pytest
from llama_index.core.schema import Document

from llama_index_ragonite import HTMLEvidenceParser

REPO = Path(__file__).resolve().parents[1]
CONFQUESTIONS = Path(os.environ.get("CONFQUESTIONS_DIR", REPO.parent / "shared" / "datasets" / "confquestions"))


def parse(html: str, doc_id: str = "page", **parser_kwargs):
    """Nodes of one page."""
    doc = Document(id_=doc_id, text=html, metadata={"title": "Test page", "url": "https://wiki.example/p/1"})
    return HTMLEvidenceParser(**parser_kwargs).get_nodes_from_documents([doc])


def of_type(nodes, kind: str):
    return [n for n in nodes if n.metadata["evidence_type"] == kind]


@pytest.fixture(scope="session")
def confquestions_documents() -> Path:
    folder = CONFQUESTIONS / "documents"
    if not folder.is_dir():
        pytest.skip(f"ConfQuestions not found at {CONFQUESTIONS} (set CONFQUESTIONS_DIR)")
    return folder
