import pytest

from llama_index_ragonite.retrieval.fusion import rrf_fuse, rrf_scores


def test_rrf_scores_by_hand():
    lexical = ["a", "b", "c"]
    dense = ["c", "a", "d"]
    scores = rrf_scores([lexical, dense], k=60)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert [item for item, _ in rrf_fuse([lexical, dense])] == ["a", "c", "b", "d"]


def test_rrf_weights_k_and_ties():
    assert rrf_scores([["x"], ["y"]], k=0, weights=[2.0, 1.0]) == {"x": 2.0, "y": 1.0}
    # equal scores: order of first appearance (lexical list first), so fusion is deterministic
    assert rrf_fuse([["x", "y"], ["y", "x"]]) == rrf_fuse([["x", "y"], ["y", "x"]])
    assert [i for i, _ in rrf_fuse([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert rrf_fuse([[], []]) == []
    with pytest.raises(ValueError):
        rrf_scores([["x"]], weights=[1.0, 2.0])
    with pytest.raises(ValueError):
        rrf_scores([["x"]], k=-1)


def test_rrf_ranking_given_as_ranks_lets_items_tie():
    # page-title ranks: the two nodes of page 1 share rank 1
    scores = rrf_scores([["a", "b", "c"], {"a": 1, "c": 1, "b": 2}], k=60, weights=[1.0, 0.5])
    assert scores == pytest.approx({"a": 1 / 61 + 0.5 / 61, "b": 1 / 62 + 0.5 / 62, "c": 1 / 63 + 0.5 / 61})
    assert [i for i, _ in rrf_fuse([["a", "b", "c"], {"c": 1, "b": 2, "a": 3}])] == ["a", "c", "b"]
