"""The row that answered gets the largest share, alone: a fee table of our own and the sample wiki's
firmware table, on the embedded default (issue 46: a table and its rows were one cluster, and every
source showed 100%)."""

from __future__ import annotations

import pytest
from fakes import REPO

from llama_index_ragonite import CounterfactualAttributor, EvidenceStore, RagoniteChatEngine, load_pages
from llama_index_ragonite.cli import render_attribution

FEES = (
    "<html><head><title>Adoption fees</title></head><body><h1>Adoption fees</h1>"
    "<p>The fee covers vaccination and a microchip.</p><table><tr><th>Animal</th><th>Fee</th></tr>"
    "<tr><td>Dog</td><td>120 EUR</td></tr><tr><td>Cat</td><td>80 EUR</td></tr>"
    "<tr><td>Rabbit</td><td>40 EUR</td></tr></table></body></html>"
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows")
    (root / "fees").mkdir()
    (root / "fees" / "adoption-fees.html").write_text(FEES)
    EvidenceStore(root / "fees-store").ingest(load_pages(root / "fees"), show_progress=False)
    EvidenceStore(root / "wiki-store").ingest(load_pages(REPO / "examples" / "sample_wiki"), show_progress=False)
    return root


@pytest.mark.parametrize(
    "store, question, quoted",
    [
        ("fees-store", "How much does a cat cost?", "80 EUR"),
        ("wiki-store", "Which firmware does the Lenovo T14 run?", "Lenovo T14: Firmware 1."),
    ],
)
def test_the_quoted_row_has_the_largest_share_alone(stores, store, question, quoted):
    engine = RagoniteChatEngine.from_store(stores / store)
    response = engine.chat(question)
    assert quoted in response.response and response.turn.cited  # a second citation: another page's value
    row = response.turn.cited[0] - 1
    assert response.source_nodes[row].node.metadata["evidence_type"] == "table_row"
    result = CounterfactualAttributor.from_engine(engine).attribute(
        response.completed_question, response.source_nodes, response.response
    )
    assert result.tied_top == [row], result.to_text()
    assert abs(sum(result.evidence_shares) - 1) < 1e-9
    assert render_attribution(result).splitlines()[1].endswith(f"[Evidence {row + 1}]")  # the CLI's first line
