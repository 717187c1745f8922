"""Summaries, significance marks and the paper's layout, on records built by hand."""

import pytest

from llama_index_ragonite.bench import report
from llama_index_ragonite.bench.config import BenchConfig, base_config, expand


def rec(i, p1, recall=1.0, turn=1, lang="en", source="table", q_type="simple", attribution=None):
    r = {
        "id": f"{i}",
        "turn": turn,
        "lang": lang,
        "source": source,
        "q_type": q_type,
        "gold_urls": ["https://w/pages/1/a"],
        "retrieved_urls": ["https://w/pages/1/a" if recall else "https://w/pages/2/b"],
        "scores": {"p1": p1, "mrr": p1, "recall": recall, "token_recall": 0.5, "k_precision": 1.0, "out_of_scope": 0.0},
    }
    if attribution:
        r["attribution"] = attribution
    return r


def test_slices_by_hand():
    records = [
        rec(0, 1.0, turn=1, lang="en"),
        rec(1, 0.0, turn=2, lang="de", source="list"),
        rec(2, 1.0, turn=7, lang="de", q_type="complex"),
    ]
    s = report.summarize(records)
    assert s["all"]["n"] == 3 and s["all"]["p1"] == pytest.approx(2 / 3)
    assert s["DE"]["p1"] == 0.5 and s["list"]["p1"] == 0.0 and s["turns 6-10"]["n"] == 1
    assert s["complex"]["p1"] == 1.0 and s["turn 3"]["n"] == 0 and s["turn 3"]["p1"] is None


def test_attribution_accuracy_counts_only_questions_with_gold_retrieved():
    records = [
        rec(0, 1.0, attribution={"cfa": "https://w/pages/1/a+b"}),  # gold page (by id), hit
        rec(1, 0.0, attribution={"cfa": "https://w/pages/2/b"}),  # gold retrieved, miss
        rec(2, 0.0, recall=0.0, attribution={"cfa": "https://w/pages/1/a"}),  # gold not retrieved: not counted
        rec(3, 1.0),  # no attribution recorded
    ]
    assert report.summarize(records)["all"]["attribution:cfa"] == 0.5


def test_significance_marks_in_the_paper_layout():
    base = base_config()
    better = [rec(i, 1.0) for i in range(30)]
    worse = [rec(i, 1.0 if i < 5 else 0.0) for i in range(30)]
    same = [rec(i, 1.0 if i != 3 else 0.0) for i in range(30)]
    runs = {"default": better, "ranking=lexical": worse, "ranking=dense": same}
    summary = {
        name: {"slices": report.summarize(r), "p_values": report.significance(r, better)} for name, r in runs.items()
    }
    assert summary["ranking=lexical"]["p_values"]["p1"] < 0.001 and summary["ranking=dense"]["p_values"]["p1"] == 1.0
    text = report.markdown(summary, base, ["# test"], groups=["ranking", "fusion"])
    assert "| lexical (BM25) | 0.167* |" in text  # 5/30, significantly below the baseline
    assert "| dense | 0.967 |" in text and "| 0.465 |" in text  # no mark; the paper's dense P@1 beside it
    assert "| hybrid | 1.000 |" in text  # the baseline row carries no mark
    assert "| reranker (needs a reranker model) | not run |" in text and "| RRF | 1.000 |" in text
    assert "## Table 2" not in text


def test_presets_change_one_setting_against_the_base():
    base = base_config()
    configs = expand(["paper"], base)
    assert configs[0] == base and len(configs) == len(set(configs))
    assert all(len(c.changes(base)) == 1 for c in configs[1:])
    assert {c.name(base) for c in configs} >= {
        "context=NONE",
        "corpus=tables",
        "completion=human",
        "linearizer=html",
        "tables=rows",
        "ranking=lexical",
    }
    with pytest.raises(ValueError, match="Unknown context"):
        BenchConfig(context="FULL")
    with pytest.raises(ValueError, match="Unknown preset"):
        expand(["table9"], base)
