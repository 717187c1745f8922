"""BM25 for an audience: a user's scores are those of an index holding only the nodes the user may read.

Why: with the whole store's statistics, a guessed term placed in (or absent from) a page the user may not
read moves the user's scores (a membership oracle). Each test compares a narrowed, audience-scored search
over the whole index with a plain search over an index of only the readable nodes.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_ragonite.index.bm25 import METHODS
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.lexical_format import TERM_COUNTS_NAME

WORDS = "alpha beta gamma delta kestrel runner rack build farm salary band review bonus payout canteen soup".split()


def corpus(count: int = 60, seed: int = 3) -> list[TextNode]:
    rng = random.Random(seed)
    nodes = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]  # some nodes hold no token at all
        page = f"page-{i % 12}"
        nodes.append(
            TextNode(
                id_=f"n{i:03d}",
                text=" ".join(words),
                metadata={"title": f"{rng.choice(WORDS)} {rng.choice(WORDS)} handbook"},
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=page)},
            )
        )
    return nodes


def index_of(nodes, **kwargs) -> LexicalIndex:
    index = LexicalIndex(stemmer=None, stopwords=None, **kwargs)
    index.upsert(nodes)
    return index


def hits(results) -> list[tuple[str, float]]:
    return [(r.node.node_id, r.score) for r in results]


def same_ranking(got, want) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-5, atol=1e-6)


QUERIES = ["kestrel runner", "salary band review", "bonus bonus payout", "soup", "alpha beta gamma delta", "zebra"]


@pytest.mark.parametrize("method", METHODS)
def test_an_audience_is_scored_as_an_index_of_its_nodes_alone(method):
    nodes = corpus()
    readable = [n for n in nodes if int(n.ref_doc_id.split("-")[1]) % 3 != 0]
    whole, alone = index_of(nodes, method=method), index_of(readable, method=method)
    audience = frozenset(n.node_id for n in readable)
    for query in QUERIES:
        narrowed = whole.search(query, 10, allowed=audience, audience=audience)
        same_ranking(hits(narrowed), hits(alone.search(query, 10)))
        pages = frozenset(n.ref_doc_id for n in readable)
        titles = whole.search_titles(query, 5, pages=pages, audience=pages)
        same_ranking(titles, alone.search_titles(query, 5))


def test_a_hidden_node_holding_a_guessed_term_changes_nothing_the_user_sees():
    """The attack: the score of the user's own node for 'ZEBRA-7731' moved with a hidden node's text."""
    base = corpus(30)
    hidden_with = TextNode(id_="secret", text="zebra 7731 salary band", metadata={"title": "Board salaries"})
    hidden_without = TextNode(id_="secret", text="quarterly salary band", metadata={"title": "Board salaries"})
    own = TextNode(id_="own", text="zebra stripes in the canteen", metadata={"title": "Canteen"})
    audience = frozenset(n.node_id for n in base) | {"own"}
    seen = []
    for hidden in (hidden_with, hidden_without):
        index = index_of([*base, own, hidden])
        seen.append(hits(index.search("zebra 7731", 10, allowed=audience, audience=audience)))
        unscoped = hits(index.search("zebra 7731", 10, allowed=audience))
        seen.append(unscoped)
    assert seen[0] == seen[2]  # audience statistics: identical whatever the hidden node says
    assert seen[1] != seen[3]  # positive control: the whole index's statistics do move


def test_narrowing_without_an_audience_keeps_the_whole_index_statistics():
    nodes = corpus()
    index = index_of(nodes)
    everyone = frozenset(n.node_id for n in nodes)
    for query in QUERIES:
        same_ranking(hits(index.search(query, 10, audience=everyone)), hits(index.search(query, 10)))


def test_term_counts_are_persisted_and_read_back(tmp_path):
    nodes = corpus()
    index = index_of(nodes)
    index.persist(tmp_path / "lexical")
    assert (tmp_path / "lexical" / TERM_COUNTS_NAME).is_file()
    loaded = LexicalIndex.load(tmp_path / "lexical")
    audience = frozenset(n.node_id for n in nodes[::2])
    for query in QUERIES:
        want = hits(index.search(query, 10, allowed=audience, audience=audience))
        assert hits(loaded.search(query, 10, allowed=audience, audience=audience)) == want


def test_a_folder_without_term_counts_counts_them_from_the_texts(tmp_path):
    """Stores written before the counts existed: the first audience search counts them, the next write keeps them."""
    nodes = corpus()
    index_of(nodes).persist(tmp_path / "lexical")
    manifest_file = tmp_path / "lexical" / "lexical.json"
    import json

    manifest = json.loads(manifest_file.read_text())
    manifest.pop("term_counts")
    manifest_file.write_text(json.dumps(manifest))
    (tmp_path / "lexical" / TERM_COUNTS_NAME).unlink()
    old = LexicalIndex.load(tmp_path / "lexical")
    audience = frozenset(n.node_id for n in nodes[1::2])
    alone = index_of([n for n in nodes if n.node_id in audience])
    for query in QUERIES:
        same_ranking(hits(old.search(query, 10, allowed=audience, audience=audience)), hits(alone.search(query, 10)))
    old.persist(tmp_path / "again")
    assert (tmp_path / "again" / TERM_COUNTS_NAME).is_file()


def test_damaged_term_counts_are_a_store_error(tmp_path):
    from llama_index_ragonite.errors import StoreCorruptError

    index_of(corpus()).persist(tmp_path / "lexical")
    file = tmp_path / "lexical" / TERM_COUNTS_NAME
    data = bytearray(file.read_bytes())
    data[-200] ^= 0xFF
    file.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match="term counts"):
        LexicalIndex.load(tmp_path / "lexical")
