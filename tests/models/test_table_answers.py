"""Table question answering offline (issue 60): the row the question names, the column it asks for, quoted as
the page's own cells with the row key, cited; no verbalization glue; "3. Stock" is one claim."""

from __future__ import annotations

import pytest

from llama_index_ragonite import EvidenceStore, RagoniteChatEngine, load_pages
from llama_index_ragonite.explain.spans import answer_claims
from llama_index_ragonite.models.extractive.tables import number_forms, table_answer
from llama_index_ragonite.models.extractive.units import Unit
from llama_index_ragonite.prompts import OUT_OF_SCOPE


def _page(title: str, lang: str, intro: str, headers, rows) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<html lang="{lang}"><head><title>{title}</title></head><body><h1>{title}</h1><p>{intro}</p>'
        f"<table><tr>{head}</tr>{body}</table></body></html>"
    )


PAGES = {
    "it-handbook.html": _page(
        "IT handbook: laptops", "en", "Every new employee gets a laptop chosen by their role.",
        ["Role", "Model", "RAM", "Price"],
        [("Developer", "Dell XPS 15", "32 GB", "2,900 EUR"), ("Sales", "Lenovo ThinkPad X1 Carbon", "16 GB", "2,100 EUR"),
         ("Designer", "Apple MacBook Pro 16", "36 GB", "3,400 EUR"), ("Support", "HP EliteBook 840", "16 GB", "1,500 EUR")],
    ),
    "drucker.html": _page(
        "Drucker im Bürogebäude München", "de", "Alle Drucker drucken mit dem Mitarbeiterausweis.",
        ["Drucker", "Stockwerk", "Farbe", "Raum"],
        [("MUC-PR-01", "1. Stock", "Farbe", "Teeküche"), ("MUC-PR-02", "2. Stock", "Schwarzweiß", "Kopierraum 2.14"),
         ("MUC-PR-03", "3. Stock", "Farbe", "Flur vor dem Besprechungsraum Isar")],
    ),
}  # fmt: skip


# Known gaps (issue 60, not met yet): "laptop" names the Model column only by its values' meaning, and "third
# floor" names the "3. Stock" row only by meaning; the column fit (question against headers) stays under FIT_FLOOR.
GAP = pytest.mark.xfail(strict=True, reason="the asked column or row is named only by meaning (issue 60 gap)")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    (root / "pages").mkdir()
    for name, html in PAGES.items():
        (root / "pages" / name).write_text(html, encoding="utf-8")
    EvidenceStore(root / "store").ingest(load_pages(root / "pages"), show_progress=False)
    return root / "store"


def ask(store, question: str) -> str:
    return RagoniteChatEngine.from_store(store).chat(question).response


@pytest.mark.parametrize(
    "question, row",
    [
        pytest.param("Which laptop do sales people get?", "Sales: Lenovo ThinkPad X1 Carbon [Source", marks=GAP),
        pytest.param("Which laptop do developers get?", "Developer: Dell XPS 15 [Source", marks=GAP),
        ("How much RAM does the designer laptop have?", "Designer: 36 GB [Source"),
        pytest.param("What does the support laptop cost?", "Support: 1,500 EUR [Source", marks=GAP),
    ],
)
def test_a_role_lookup_is_answered_with_the_asked_cell_and_the_row_key(store, question, row):
    answer = ask(store, question)
    assert answer != OUT_OF_SCOPE
    assert row in answer
    assert " is " not in answer and ", and " not in answer  # no verbalization glue


def test_a_german_row_answer_reads_as_the_pages_cells_without_english_glue(store):
    answer = ask(store, "In welchem Raum steht der Drucker MUC-PR-03?")
    assert "MUC-PR-03: Flur vor dem Besprechungsraum Isar [Source" in answer
    assert " is " not in answer and ", and " not in answer


def test_the_printer_on_the_third_floor_is_answered_from_the_german_page(store):
    answer = ask(store, "Wo steht der Drucker im 3. Stock?")
    assert answer != OUT_OF_SCOPE
    assert "3. Stock: MUC-PR-03" in answer and " is " not in answer and ", and " not in answer


@GAP
def test_the_printer_on_the_third_floor_asked_in_english_is_answered_from_the_german_page(store):
    answer = ask(store, "Which printer is on the third floor?")
    assert answer != OUT_OF_SCOPE
    assert "3. Stock" in answer and "Flur vor dem Besprechungsraum Isar" in answer
    assert " is " not in answer and ", and " not in answer


def test_an_ordinal_or_abbreviation_ends_no_claim():
    answer = "Extractive answer: MUC-PR-03: 3. Stock, Flur vor dem Besprechungsraum Isar [Source 1]"
    assert len(answer_claims(answer, 1)) == 1
    two = "Siehe z. B. Nr. 5 der Liste [Source 1]. Der Drucker steht im Flur [Source 2]."
    assert [c.cited for c in answer_claims(two, 2)] == [[0], [1]]


def test_numbers_match_in_any_format_the_page_writes_them():
    assert number_forms("1.450 €") & number_forms("1,450 euros") & number_forms("1450")
    assert number_forms("49,00 €") == number_forms("49.00 euros")
    assert number_forms("1.750,00 €") == number_forms("1,750.00") == number_forms("1 750")
    rows = [
        Unit(1, 0, "r1", "Fees", cells=(("Meter size", "Q3 10"), ("Base fee", "228.00 euros"))),
        Unit(2, 1, "r2", "Fees", cells=(("Meter size", "Q3 16"), ("Base fee", "356.00 euros"))),
    ]
    found = table_answer("What is the base fee for a Q3 16 meter?", rows)
    assert found is not None and found.unit == 1 and found.text() == "Q3 16: 356.00 euros"


def test_a_referent_with_brackets_of_its_own_is_stripped_whole():
    """A completed follow-up's referent is a page title that may hold brackets itself: "(archived)"."""
    from llama_index_ragonite.models.extractive.scoring import own_words

    assert own_words("How much does it cost? (Laptop policy 2024 (archived))") == "How much does it cost?"
    assert own_words("How much does it cost? (Laptop policy 2025)") == "How much does it cost?"
    assert own_words("(just brackets)") == "(just brackets)"  # nothing of its own: the question as it is
