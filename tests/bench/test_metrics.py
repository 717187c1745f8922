import pytest

from llama_index_ragonite.bench.metrics import gold_keys, mrr_at_k, page_key, precision_at_1, recall_at_k

A = "https://openxt.atlassian.net/wiki/spaces/TEST/pages/761823271/OpenXT+9.0+Measurement+Test"
A_STRIPPED = "https://openxt.atlassian.net/wiki/spaces/TEST/pages/761823271/OpenXT90MeasurementTest"
B = "https://openxt.atlassian.net/wiki/spaces/DC/pages/1234/Other"


def test_pages_match_on_confluence_id_even_when_punctuation_was_stripped():
    assert page_key(A) == page_key(A_STRIPPED) == "761823271"
    assert page_key("file:///wiki/a.html/") == "file:///wiki/a.html"


def test_metrics_by_hand():
    gold = gold_keys([A_STRIPPED])
    assert precision_at_1([A, B], gold) == 1.0
    assert precision_at_1([B, A], gold) == 0.0
    assert mrr_at_k([B, B, A], gold) == pytest.approx(1 / 3)
    assert mrr_at_k([B] * 10 + [A], gold, k=10) == 0.0
    two = gold_keys([A, B])
    assert recall_at_k([A, A, "x"], two) == 0.5 and recall_at_k([B, A], two) == 1.0
    assert recall_at_k([A], set()) == 0.0
