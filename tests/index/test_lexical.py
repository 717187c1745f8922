from __future__ import annotations

import hashlib
import itertools
import json
import math

import bm25s
import numpy as np
import pytest
from fakes import parse
from llama_index.core.schema import MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_ragonite.index.lexical import MANIFEST_NAME, LexicalIndex, LexicalIndexError
from llama_index_ragonite.index.lexical_format import NODES_NAME


def node(node_id: str, text: str, doc: str | None = None, **metadata) -> TextNode:
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)} if doc else {}
    return TextNode(id_=node_id, text=text, metadata=metadata, relationships=relationships)


def ids(results) -> list[str]:
    return [r.node.node_id for r in results]


def plain(**kwargs) -> LexicalIndex:
    """No stemming, no stopwords: tokens are exactly the lower-cased words."""
    return LexicalIndex(stemmer=None, stopwords=None, **kwargs)


TOY = [
    node("cooking", "Pasta recipe: boil water, add salt, cook the pasta for ten minutes."),
    node("k8s", "Upgrade a Kubernetes cluster: drain each node, upgrade kubelet, then uncordon the node."),
    node("backup", "Nightly database backup and restore procedure for the PostgreSQL cluster."),
    node("garden", "Water the tomato plants every morning during the summer."),
]


@pytest.fixture
def toy() -> LexicalIndex:
    index = LexicalIndex()
    index.upsert(TOY)
    return index


# ---------------------------------------------------------------- ranking and scores


def test_obvious_answer_ranks_first(toy):
    assert ids(toy.search("how do I upgrade kubernetes?"))[0] == "k8s"
    assert ids(toy.search("restore the database from backup"))[0] == "backup"
    assert ids(toy.search("tomato plants"))[0] == "garden"
    results = toy.search("cluster")
    assert set(ids(results)) == {"k8s", "backup"}  # only nodes that contain a query term
    assert all(r.score > 0 for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_k_limits_and_fewer_results_when_fewer_match(toy):
    assert len(toy.search("water cluster pasta", k=2)) == 2
    assert len(toy.search("water cluster pasta", k=10)) == 4
    assert ids(toy.search("kubernetes", k=10)) == ["k8s"]
    with pytest.raises(ValueError):
        toy.search("water", k=0)


def _lucene_bm25(query: list[str], doc: list[str], corpus: list[list[str]], k1: float, b: float) -> float:
    n = len(corpus)
    avgdl = sum(map(len, corpus)) / n
    score = 0.0
    for term in query:
        df = sum(term in d for d in corpus)
        tf = doc.count(term)
        if tf == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
    return score


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.3), (0.9, 1.0)])
def test_scores_match_hand_computed_lucene_bm25(k1, b):
    corpus = [
        ["cat", "dog", "cat", "fish"],
        ["dog", "bird"],
        ["fish", "fish", "fish", "owl", "cat", "eel"],
    ]
    index = plain(k1=k1, b=b)
    index.upsert([node(f"d{i}", " ".join(words)) for i, words in enumerate(corpus)])
    for query in (["cat"], ["dog"], ["fish"], ["cat", "dog"], ["owl", "fish", "bird"], ["cat", "cat"]):
        got = {r.node.node_id: r.score for r in index.search(" ".join(query))}
        expected = {f"d{i}": _lucene_bm25(query, doc, corpus, k1, b) for i, doc in enumerate(corpus)}
        expected = {node_id: score for node_id, score in expected.items() if score > 0}
        assert got == pytest.approx(expected, rel=1e-6), query


def test_hand_computed_value_for_one_term():
    # N=3, avgdl=2; "cat" is in one document (tf=2, dl=3).
    index = plain()
    index.upsert([node("a", "cat dog cat"), node("b", "dog bird"), node("c", "fish")])
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    tf_part = 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / 2))
    [hit] = index.search("cat")
    assert hit.node.node_id == "a"
    assert hit.score == pytest.approx(idf * tf_part, rel=1e-6)


def test_indexes_the_llm_view_of_metadata_or_the_embed_view_if_asked():
    node = TextNode(
        id_="n",
        text="body text",
        metadata={"title": "Zeppelin guide", "secret": "hidden", "neighbours": "airship"},
        excluded_llm_metadata_keys=["secret"],
        excluded_embed_metadata_keys=["secret", "neighbours"],
    )
    index = plain()
    index.upsert([node])
    assert ids(index.search("zeppelin")) == ids(index.search("airship")) == ["n"]  # shown to the LLM: searchable
    assert index.search("hidden") == []  # ... metadata excluded from it is not
    embed_view = LexicalIndex(stemmer=None, stopwords=None, metadata_mode="embed")
    embed_view.upsert([node])
    assert ids(embed_view.search("zeppelin")) == ["n"] and embed_view.search("airship") == []


# ---------------------------------------------------------------- tokenization options


def test_stemming_on_and_off():
    docs = [node("a", "How to install the plugin"), node("b", "Release notes")]
    stemmed = LexicalIndex(stemmer="english")
    stemmed.upsert(docs)
    exact = LexicalIndex(stemmer=None)
    exact.upsert(docs)
    assert ids(stemmed.search("installing")) == ["a"]
    assert ids(stemmed.search("installed plugins")) == ["a"]
    assert exact.search("installing") == []
    assert ids(exact.search("install")) == ["a"]


def test_stopwords():
    docs = [node("a", "the cat sat on the mat"), node("b", "a dog in a fog"), node("c", "the end")]
    with_stop = LexicalIndex(stopwords="en")
    with_stop.upsert(docs)
    without = LexicalIndex(stopwords=None)
    without.upsert(docs)
    assert with_stop.search("the") == []
    assert set(ids(without.search("the"))) == {"a", "c"}
    # Stopwords in a real query do not change the ranking of the content words.
    assert ids(with_stop.search("the cat on the mat")) == ids(with_stop.search("cat mat")) == ["a"]
    custom = LexicalIndex(stopwords=["Cat", "mat"])
    custom.upsert(docs)
    assert custom.search("cat mat") == []
    assert ids(custom.search("fog")) == ["b"]


def test_invalid_options_fail_early():
    with pytest.raises(ValueError, match="method"):
        LexicalIndex(method="tfidf")
    with pytest.raises(ValueError, match="stemmer"):
        LexicalIndex(stemmer="klingon")
    with pytest.raises(ValueError, match="stopwords"):
        LexicalIndex(stopwords="klingon")
    with pytest.raises(ValueError):
        LexicalIndex(b=2)


# ---------------------------------------------------------------- contents


def test_upsert_replaces_by_id():
    index = plain()
    index.upsert([node("x", "old apple text"), node("y", "banana")])
    index.upsert([node("x", "new cherry text")])
    assert len(index) == 2
    assert index.node_ids() == ["x", "y"]
    assert index.search("apple") == []
    assert ids(index.search("cherry")) == ["x"]
    assert ids(index.search("text")) == ["x"]  # one entry, not two
    assert index.get_node("x").text == "new cherry text"


def test_upsert_duplicates_within_one_batch_keep_the_last():
    index = plain()
    index.upsert([node("x", "first"), node("x", "second")])
    assert len(index) == 1
    assert index.search("first") == []
    assert ids(index.search("second")) == ["x"]


def test_reupserting_unchanged_nodes_does_not_rebuild(monkeypatch):
    index = plain()
    index.upsert(TOY)
    before = [(r.node.node_id, r.score) for r in index.search("water cluster")]
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **kw: pytest.fail("rebuilt"))
    index.upsert(TOY)
    assert [(r.node.node_id, r.score) for r in index.search("water cluster")] == before


def test_delete():
    index = plain()
    index.upsert([node("a", "alpha"), node("b", "alpha beta"), node("c", "gamma")])
    assert ids(index.search("alpha")) == ["a", "b"]
    assert index.delete(["a", "missing"]) == 1
    assert index.delete("c") == 1  # a lone id is not split into characters
    assert index.node_ids() == ["b"]
    assert ids(index.search("alpha")) == ["b"]
    assert index.search("gamma") == []
    with pytest.raises(KeyError):
        index.get_node("a")
    assert index.delete(["b"]) == 1
    assert len(index) == 0
    assert index.search("alpha") == []


def test_delete_ref_doc_with_parsed_pages():
    page_a = parse("<h1>Setup</h1><p>Install the zebra plugin.</p><p>Configure zebra settings.</p>", doc_id="page-a")
    page_b = parse("<h1>Other</h1><p>The zebra crossing is painted white.</p>", doc_id="page-b")
    index = LexicalIndex()
    index.upsert([*page_a, *page_b])
    assert {n.ref_doc_id for n in page_a} == {"page-a"}
    assert len(index) == len(page_a) + len(page_b)
    assert index.delete_ref_doc("page-a") == len(page_a)
    assert index.delete_ref_doc("page-a") == 0
    assert set(index.node_ids()) == {n.node_id for n in page_b}
    assert {r.node.ref_doc_id for r in index.search("zebra")} == {"page-b"}


def test_empty_query_empty_index_unknown_tokens(toy):
    assert LexicalIndex().search("anything") == []
    assert toy.search("") == []
    assert toy.search("   \n\t") == []
    assert toy.search("xylophone quasar") == []  # nothing in the vocabulary
    assert toy.search("?! ... a") == []  # no tokens at all (single characters are not tokens)
    assert ids(toy.search("xylophone kubernetes")) == ["k8s"]  # unknown tokens are just ignored
    stop_only = LexicalIndex()
    stop_only.upsert([node("s", "the and of")])  # a node with no tokens at all
    assert stop_only.search("the") == []
    assert stop_only.search("anything") == []


def test_get_node_returns_copies_without_embedding():
    index = plain()
    original = node("a", "alpha", doc="d", title="T")
    original.embedding = [0.1, 0.2]
    index.upsert([original])
    stored = index.get_node("a")
    assert stored.embedding is None
    assert stored.model_copy(update={"embedding": [0.1, 0.2]}) == original
    stored.metadata["title"] = "mutated"
    original.text = "mutated too"
    assert index.get_node("a").metadata["title"] == "T"
    assert ids(index.search("alpha")) == ["a"]


# ---------------------------------------------------------------- determinism


def test_ties_broken_by_node_id_whatever_the_insertion_order():
    docs = [node(f"n{i}", "same words here") for i in (3, 1, 4, 0, 2)]
    forward, backward = plain(), plain()
    forward.upsert(docs)
    backward.upsert(reversed(docs))
    expected = ["n0", "n1", "n2", "n3", "n4"]
    assert ids(forward.search("words")) == ids(backward.search("words")) == expected
    assert ids(forward.search("words", k=2)) == ["n0", "n1"]
    assert len({r.score for r in forward.search("words")}) == 1


def test_repeated_searches_are_identical(toy):
    first = [(r.node.node_id, r.score) for r in toy.search("water the cluster node", k=3)]
    for _ in range(5):
        assert [(r.node.node_id, r.score) for r in toy.search("water the cluster node", k=3)] == first


# ---------------------------------------------------------------- persistence


def _rich_nodes() -> list[TextNode]:
    parent = RelatedNodeInfo(node_id="parent", metadata={"evidence_type": "page"}, hash="h")
    rich = TextNode(
        id_="rich",
        text="Quarterly revenue table for the Orion project",
        metadata={"title": "Orion", "position": 3, "column_headers": ["Year", "Revenue"], "score": 0.5},
        excluded_embed_metadata_keys=["position"],
        excluded_llm_metadata_keys=["score"],
        relationships={
            NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-1"),
            NodeRelationship.PARENT: parent,
            NodeRelationship.CHILD: [RelatedNodeInfo(node_id="c1"), RelatedNodeInfo(node_id="c2")],
        },
        text_template="[{metadata_str}]\n{content}",
        metadata_template="{key}={value}",
        metadata_separator=" | ",
        start_char_idx=10,
        end_char_idx=55,
    )
    html = "<h1>Orion</h1><p>Orion revenue grew.</p><table><tr><th>Year</th><th>Revenue</th></tr><tr><td>2024</td><td>5</td></tr></table>"
    return [rich, *parse(html, doc_id="orion-page"), *TOY]


QUERIES = ["orion revenue", "revenue 2024", "water", "upgrade the kubernetes cluster", "nothing-matches-here"]


def _snapshot(index: LexicalIndex) -> list[list[tuple[str, float]]]:
    return [[(r.node.node_id, r.score) for r in index.search(q, k=5)] for q in QUERIES]


def test_persist_and_load_round_trip(tmp_path, monkeypatch):
    nodes = _rich_nodes()
    index = LexicalIndex(stemmer="english", stopwords=["the", "for"], k1=1.2, b=0.6)
    index.upsert(nodes)
    index.delete(["garden"])  # a stale index must be rebuilt before it is written
    expected = _snapshot(index)
    index.persist(tmp_path / "lex")

    # Loading and searching must not rebuild the matrix.
    real_index = bm25s.BM25.index
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **kw: pytest.fail("rebuilt on load"))
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded.config() == index.config()
    assert loaded.node_ids() == index.node_ids()
    assert _snapshot(loaded) == expected
    for original in nodes:
        if original.node_id != "garden":
            restored = loaded.get_node(original.node_id)
            assert restored == original
            assert restored.get_content(MetadataMode.EMBED) == original.get_content(MetadataMode.EMBED)
            assert restored.get_content(MetadataMode.LLM) == original.get_content(MetadataMode.LLM)
    assert loaded.get_node("rich").relationships[NodeRelationship.PARENT].metadata == {"evidence_type": "page"}
    assert loaded.get_node("rich").child_nodes[1].node_id == "c2"

    # A loaded index keeps working: changes rebuild it from the stored text.
    monkeypatch.setattr(bm25s.BM25, "index", real_index)
    for target in (index, loaded):
        target.upsert([node("new", "Orion launch checklist")])
        target.delete_ref_doc("orion-page")
    assert _snapshot(loaded) == _snapshot(index)


def test_persist_replaces_previous_index_and_leaves_no_temp_folders(tmp_path):
    index = plain()
    index.upsert([node("a", "alpha")])
    index.persist(tmp_path / "lex")
    index.upsert([node("b", "beta")])
    index.persist(tmp_path / "lex")
    assert LexicalIndex.load(tmp_path / "lex").node_ids() == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lex"]


def test_persist_refuses_to_overwrite_other_data(tmp_path):
    (tmp_path / "notes.txt").write_text("precious")
    with pytest.raises(LexicalIndexError, match="refusing"):
        plain().persist(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "precious"


def test_empty_index_round_trip(tmp_path):
    plain().persist(tmp_path / "empty")
    loaded = LexicalIndex.load(tmp_path / "empty")
    assert len(loaded) == 0
    assert loaded.search("anything") == []
    loaded.upsert([node("a", "alpha")])
    assert ids(loaded.search("alpha")) == ["a"]


@pytest.fixture
def saved(tmp_path):
    index = LexicalIndex()
    index.upsert(TOY)
    path = tmp_path / "lex"
    index.persist(path)
    return path


def _rewrite_manifest(path, change):
    manifest = json.loads((path / MANIFEST_NAME).read_text())
    change(manifest)
    (path / MANIFEST_NAME).write_text(json.dumps(manifest))


def _corrupt_npy(path):
    data = path / "bm25s" / "data.csc.index.npy"
    array = np.load(data)
    array[0] += 1  # still a valid .npy file: only the checksum can tell
    np.save(data, array)


def _truncate_manifest(path):
    manifest = path / MANIFEST_NAME
    manifest.write_bytes(manifest.read_bytes()[:100])


DAMAGE = {
    "manifest missing": (lambda p: (p / MANIFEST_NAME).unlink(), "missing"),
    "manifest truncated": (_truncate_manifest, "truncated"),
    "bm25s file missing": (lambda p: (p / "bm25s" / "vocab.index.json").unlink(), "missing"),
    "bm25s file altered": (_corrupt_npy, "damaged"),
    "future format": (lambda p: _rewrite_manifest(p, lambda m: m.update(format_version=99)), "version"),
    "nodes file missing": (lambda p: (p / NODES_NAME).unlink(), "missing"),
    "nodes file altered": (lambda p: (p / NODES_NAME).write_bytes(b"[" + (p / NODES_NAME).read_bytes()[1:]), "damaged"),
    "node dropped": (
        lambda p: _rewrite_manifest(p, lambda m: [m[k].pop() for k in ("ids", "pages", "titles")]),
        "node table",
    ),
    "node table torn": (lambda p: _rewrite_manifest(p, lambda m: m["titles"].pop()), "columns"),
    "offsets shifted": (lambda p: _rewrite_manifest(p, lambda m: m["offsets"].__setitem__(1, 3)), "offsets"),
    "bad config": (lambda p: _rewrite_manifest(p, lambda m: m["config"].update(method="tfidf")), "config"),
}


@pytest.mark.fault(
    "lexical node file (nodes.jsonl) altered or missing",
    "StoreCorruptError naming the file ('damaged', 'missing') at open",
)
@pytest.mark.fault(
    "lexical node table torn (ids, pages, titles, offsets disagree) or offsets shifted",
    "StoreCorruptError naming the folder ('node table', 'columns', 'offsets') at open",
)
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_folder_raises(saved, damage):
    apply, message = DAMAGE[damage]
    apply(saved)
    with pytest.raises(LexicalIndexError, match=message) as excinfo:
        LexicalIndex.load(saved)
    assert str(saved) in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


@pytest.mark.fault(
    "lexical node record that does not parse, its file's checksum intact (a faulty writer)",
    "StoreCorruptError naming the file and the record when that node is read; the other nodes read",
)
def test_a_record_that_does_not_parse_is_named_when_read(saved):
    """A node file whose checksum holds (a faulty writer) but whose record 1 is not a node: the load
    passes, reading that node is a StoreCorruptError naming the file and the record; the others read."""
    lines = (saved / NODES_NAME).read_bytes().split(b"\n")[:-1]
    lines[1] = b'{"broken": true}'
    data = b"".join(line + b"\n" for line in lines)
    (saved / NODES_NAME).write_bytes(data)

    def fix(manifest):
        manifest["nodes_file"]["sha256"] = hashlib.sha256(data).hexdigest()
        manifest["offsets"] = [0] + list(itertools.accumulate(len(line) + 1 for line in lines))

    _rewrite_manifest(saved, fix)
    index = LexicalIndex.load(saved)
    ids = index.node_ids()
    with pytest.raises(LexicalIndexError, match="record 1") as excinfo:
        index.get_node(ids[1])
    assert str(saved / NODES_NAME) in str(excinfo.value)
    assert index.get_node(ids[0]).node_id == ids[0]


def test_a_loaded_index_reads_its_nodes_in_place_and_saves_them_again(saved, tmp_path):
    """Format 2: after load the nodes are rows of the memory-mapped file, not strings in memory; persisting
    elsewhere, changing and persisting over the loaded folder itself keep every node."""
    index = LexicalIndex.load(saved)
    before = {i: index.get_node(i).get_content() for i in index.node_ids()}
    assert all(isinstance(record.payload, int) for record in index._records.values())
    index.persist(tmp_path / "copy")
    index.upsert([TextNode(id_="new", text="a freshly added evidence about tomatoes")])
    index.persist(saved)  # over the folder its rows are read from
    for folder in (tmp_path / "copy", saved):
        again = LexicalIndex.load(folder)
        assert {i: again.get_node(i).get_content() for i in before} == before
    assert LexicalIndex.load(saved).get_node("new").get_content().endswith("tomatoes")
    assert index.get_node(next(iter(before))).get_content() == next(iter(before.values()))


def test_missing_folder_raises(tmp_path):
    for path in (tmp_path / "nowhere", tmp_path):
        with pytest.raises(LexicalIndexError) as excinfo:
            LexicalIndex.load(path)
        assert str(path) in str(excinfo.value)


# ---------------------------------------------------------------- other bm25s variants


@pytest.mark.parametrize("method", ["robertson", "atire", "bm25l", "bm25+"])
def test_other_methods_rank_and_only_return_matches(method):
    index = LexicalIndex(method=method)
    index.upsert(TOY)
    assert ids(index.search("kubernetes upgrade"))[0] == "k8s"
    assert set(ids(index.search("tomato"))) == {"garden"}


def test_default_stopwords_are_english_and_german():
    # German questions over English pages: "die", "was", "will" must not match English words.
    german_question = "Was sind die Firmware-Versionen?"
    assert LexicalIndex()._tokenize([german_question]) == [["firmwar", "versionen"]]
    assert "die" in LexicalIndex(stopwords="en")._tokenize([german_question])[0]
    with pytest.raises(ValueError, match="stopwords"):
        LexicalIndex(stopwords="en+xx")


# ---------------------------------------------------------------- tokens and titles


def test_wiki_tokens_keep_versions_and_single_characters():
    index = LexicalIndex()
    assert index._tokenize(["OpenXT 7.0, Stable-9 rc0. See ./build.sh"])[0] == [
        "openxt", "7.0", "7", "0", "stabl", "9", "rc0", "see", "build.sh", "build", "sh"
    ]  # fmt: skip
    index.upsert([node("six", "OpenXT 6.0 hardware tests"), node("seven", "OpenXT 7.0 hardware tests")])
    assert ids(index.search("Which laptops passed the OpenXT 7.0 hardware tests?"))[0] == "seven"
    legacy = LexicalIndex(tokenizer="bm25s")  # bm25s's pattern: "7.0" and "6.0" are no tokens at all
    legacy.upsert([node("six", "OpenXT 6.0 hardware tests"), node("seven", "OpenXT 7.0 hardware tests")])
    [first, second] = legacy.search("OpenXT 7.0 hardware tests")
    assert first.score == second.score
    with pytest.raises(ValueError, match="tokenizer"):
        LexicalIndex(tokenizer="whitespace")


def test_indexes_written_before_the_tokenizer_option_load_with_bm25s_tokens(tmp_path):
    index = LexicalIndex(tokenizer="bm25s")
    index.upsert([node("a", "OpenXT 7.0 notes"), node("b", "Release notes")])
    index.persist(tmp_path / "lex")
    manifest = json.loads((tmp_path / "lex" / MANIFEST_NAME).read_text())
    del manifest["config"]["tokenizer"]
    (tmp_path / "lex" / MANIFEST_NAME).write_text(json.dumps(manifest))
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded.tokenizer == "bm25s"  # queries are tokenized as the matrix was
    assert [(r.node.node_id, r.score) for r in loaded.search("7.0 notes")] == [
        (r.node.node_id, r.score) for r in index.search("7.0 notes")
    ]


def _titled(node_id: str, doc: str, title: str | None, text: str = "body") -> TextNode:
    return node(node_id, text, doc=doc, **({"title": title} if title is not None else {}))


def test_search_titles_ranks_documents_by_bm25_over_their_titles():
    index = plain()
    index.upsert(
        [
            _titled("p1-a", "p1", "Stable-9 rc0 Test Matrix"),
            _titled("p1-b", "p1", "Stable-9 rc0 Test Matrix"),
            _titled("p2-a", "p2", "Stable-9 rc2 Test Matrix (results)"),
            _titled("p3-a", "p3", "Community Calls"),
            _titled("p4-a", "p4", None, text="rc0 matrix without a title"),
            node("loose", "rc0", title="rc0 loose node"),  # no source document: not ranked
        ]
    )
    hits = index.search_titles("Which guest OSs were tested for Stable-9 rc0?")
    assert [doc for doc, _ in hits] == ["p1", "p2"]
    # by hand: titles as documents, N=3, avgdl=(5+6+2)/3; query terms stable, 9, rc0 (which, guest... match nothing)
    corpus = [
        ["stable", "9", "rc0", "test", "matrix"],
        ["stable", "9", "rc2", "test", "matrix", "results"],
        ["community", "calls"],
    ]
    expected = _lucene_bm25(["stable", "9", "rc0"], corpus[0], corpus, 1.5, 0.75)
    assert hits[0][1] == pytest.approx(expected, rel=1e-6)
    assert [doc for doc, _ in index.search_titles("community calls", k=1)] == ["p3"]
    assert index.search_titles("   ") == [] and index.search_titles("nothing matches") == []
    with pytest.raises(ValueError):
        index.search_titles("rc0", k=0)


def test_search_titles_follows_upserts_deletes_and_load(tmp_path):
    index = plain()
    index.upsert([_titled("a", "p1", "Old name"), _titled("b", "p2", "Other page")])
    assert [d for d, _ in index.search_titles("new name")] == ["p1"]
    index.upsert([_titled("a", "p1", "Renamed page")])  # same text, new title
    assert [d for d, _ in index.search_titles("renamed")] == ["p1"] and index.search_titles("old") == []
    index.delete_ref_doc("p1")
    assert [d for d, _ in index.search_titles("renamed page")] == ["p2"]
    index.persist(tmp_path / "lex")
    assert LexicalIndex.load(tmp_path / "lex").search_titles("other page") == index.search_titles("other page")
