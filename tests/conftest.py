"""Fixtures shared by every test folder; the test doubles live in fakes.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import CONFQUESTIONS


@pytest.fixture(scope="session")
def confquestions_documents() -> Path:
    folder = CONFQUESTIONS / "documents"
    if not folder.is_dir():
        pytest.skip(f"ConfQuestions not found at {CONFQUESTIONS} (set CONFQUESTIONS_DIR)")
    return folder
