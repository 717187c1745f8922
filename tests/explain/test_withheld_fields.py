"""``withheld`` reads which neighbour a Before/After line quotes from the structure fields; nodes of a
store built before the fields existed (none of them) are read through their text, with the same result."""

from pathlib import Path

import pytest
from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages
from llama_index_ragonite.explain.regeneration import withheld
from llama_index_ragonite.parsing.structure import STRUCTURE_KEYS

SAMPLE_WIKI = Path(__file__).resolve().parents[2] / "examples" / "sample_wiki"


def shown(items):
    return [(n.node.node_id, n.node.get_content(MetadataMode.LLM)) for n in items]


def without_fields(node):
    return node.model_copy(update={"metadata": {k: v for k, v in node.metadata.items() if k not in STRUCTURE_KEYS}})


@pytest.mark.parametrize("after_position", ["header", "end"])
def test_fields_and_the_old_text_route_withhold_the_same(after_position):
    contextualizer = EvidenceContextualizer(after_position=after_position)
    nodes = contextualizer(HTMLEvidenceParser().get_nodes_from_documents(load_pages(SAMPLE_WIKI)))
    items = [NodeWithScore(node=n, score=1.0) for n in nodes]
    old = [NodeWithScore(node=without_fields(n), score=1.0) for n in nodes]
    changed = 0
    for i in range(len(items)):
        kept, left_out = items[:i] + items[i + 1 :], items[i : i + 1]
        new_view = shown(withheld(kept, left_out))
        assert new_view == shown(withheld(old[:i] + old[i + 1 :], old[i : i + 1]))
        changed += new_view != shown(kept)
    assert changed >= len(items) // 2  # most left-out evidences are quoted by a neighbour
