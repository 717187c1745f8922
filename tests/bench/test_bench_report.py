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
    assert "| dense | 0.967 |" in text and "| 0.450 |" in text  # no mark; the paper's Table 4 dense P@1 beside it
    assert "| hybrid | 1.000 |" in text  # the baseline row carries no mark
    assert "| reranker (needs a reranker: --reranker) | not run |" in text and "| RRF | 1.000 |" in text
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


def test_instruction_following_table3_and_turns_beside_the_paper(tmp_path):
    base = base_config()
    runs = []
    for i in range(10):  # 3 out-of-scope answers, 4 questions without a gold page in the top 10
        r = rec(i, 1.0 if i >= 4 else 0.0, attribution={"naive": "https://w/pages/1/a"})
        r["scores"].update(out_of_scope=float(i < 3), mrr=1.0 if i >= 4 else 0.0)
        runs.append(r)
    summary = {"default": {"slices": report.summarize(runs), "p_values": {}}}
    assert summary["default"]["slices"]["all"][report.MISS_AT_10] == pytest.approx(0.4)
    text = report.markdown(summary, base, ["# t"])
    assert "| default | 30.0% | 40.0% | -10.0% |" in text and "| paper (GPT-4o) | 33.2% | 39.3% | -6.1% |" in text
    assert "## Table 3: attribution accuracy" in text and "| naive | 1.000 | 0.772 |" in text
    assert "| turn 1 | 10 |" in text and "| 0.660 | 0.720 |" in text  # the paper's Table 4 turns beside ours


def test_table3_and_table4_plots(tmp_path):
    from llama_index_ragonite.bench import plots

    base = base_config()
    runs = {
        "default": [rec(i, 1.0, attribution={"counterfactual": "https://w/pages/1/a"}) for i in range(4)],
        "ranking=lexical": [rec(i, float(i % 2)) for i in range(4)],
    }
    summary = {name: {"slices": report.summarize(r), "p_values": {}} for name, r in runs.items()}
    images = dict(plots.plots(summary, base, tmp_path, "t"))
    assert set(images.values()) == {"t_slices.png", "t_attribution.png", "t_table4.png"}
    assert all((tmp_path / f).stat().st_size > 5000 for f in images.values())


def test_every_paper_number_names_its_version_and_both_are_side_by_side():
    base = base_config()
    runs = [rec(i, 1.0, attribution={"counterfactual+clusters": "https://w/pages/1/a"}) for i in range(4)]
    summary = {"default": {"slices": report.summarize(runs), "p_values": {}}}
    text = report.markdown(summary, base, ["# t"])
    # the headline's base row: the README's ALL (0.528/0.529) and the demo paper's (0.523/0.585)
    assert "demo paper P@1 | demo paper relevance |" in text and "| 0.528 | 0.529 | 0.523 | 0.585 |" in text
    assert "the released repository's README" in text and "the WSDM 2025 demo paper's text" in text
    assert "## Table 4: turns (base configuration, by position in the conversation; paper: the WSDM" in text
    # Table 3: the README's per-method number and the demo paper's per-slice accuracies beside ours
    assert "| counterfactual+clusters | 1.000 | 0.799 |" in text
    assert "| slice | ours (counterfactual+clusters) | demo paper (360) |" in text and "| DE | " in text
    assert "| table | " in text and "| 0.766 |" in text
