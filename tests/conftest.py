"""Fixtures shared by every test folder; the test doubles live in fakes.py.

Also registers the ``fault`` marker: ``@pytest.mark.fault(name, expected, area=None)`` says that a
test reproduces one fault class (``name``) and checks the behaviour we promise for it
(``expected``). ``python benchmarks/run.py faults`` runs ``pytest -m fault`` and tables them; ``area``
defaults to the test's folder (parsing, index, retrieval, chat, explain, models, serve, confluence; cli at the top).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import CONFQUESTIONS

FAULT_AREAS = ("parsing", "models", "index", "retrieval", "chat", "explain", "cli", "serve", "confluence", "access")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fault(name, expected, area=None): the test reproduces fault class `name` and checks the promised "
        "`expected` behaviour (tabled by `python benchmarks/run.py faults`)",
    )


def fault_marks(item: pytest.Item) -> list[dict[str, str]]:
    """The ``fault`` markers of a test as {name, expected, area}; a malformed marker is an error, not a skipped row."""
    found = []
    for mark in item.iter_markers("fault"):
        args = dict(zip(("name", "expected", "area"), mark.args))
        args.update(mark.kwargs)
        if set(args) - {"name", "expected", "area"} or not all(
            isinstance(args.get(k), str) and args[k].strip() for k in ("name", "expected")
        ):
            raise pytest.UsageError(f"{item.nodeid}: write @pytest.mark.fault(name, expected, area=None)")
        area = args.get("area") or _area_of(item)
        if area not in FAULT_AREAS:
            raise pytest.UsageError(f"{item.nodeid}: fault area {area!r} is not one of {', '.join(FAULT_AREAS)}")
        found.append({"name": args["name"], "expected": args["expected"], "area": area})
    return found


def _area_of(item: pytest.Item) -> str:
    parts = Path(str(item.path)).resolve().relative_to(Path(__file__).resolve().parent).parts
    return parts[0] if len(parts) > 1 else "cli"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # a malformed marker fails collection; the parsed ones travel with the reports
        item.user_properties.extend(("fault", fault) for fault in fault_marks(item))


@pytest.fixture(scope="session")
def confquestions_documents() -> Path:
    folder = CONFQUESTIONS / "documents"
    if not folder.is_dir():
        pytest.skip(f"ConfQuestions not found at {CONFQUESTIONS} (set CONFQUESTIONS_DIR)")
    return folder
