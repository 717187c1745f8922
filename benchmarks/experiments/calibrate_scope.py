"""Calibrating the out-of-scope decision (offline answerer).

Fits ``models/extractive/scope.py``'s weights for an embedding model (issue 45: one calibrated score, one
set of weights per model, chosen on a set that then does not judge it):

* calibration set: in scope, the 600 ConfQuestions questions as their gold completed question; out of
  scope, ``benchmarks/unanswerable_questions.json`` and every list of ``benchmarks/off_topic_questions.json``.
  Each question is retrieved alone (``Bench.retriever``) and assessed by ``ExtractiveAnswerer.assess`` over
  those nodes as the chat engine's ``ExtractiveSynthesizer`` reads them, by meaning with the store's
  embedding model and once by words only (the lexical model). ``--set also=heldout_wiki_b`` adds a wiki set
  (its turns' gold completed questions, retrieved from a store of its pages, labelled by whether they have
  a gold page): ConfQuestions' questions name product names nearly every time, a wiki in everyday language,
  half of it asked in German, weighs words and cosines otherwise. A set added here no longer judges;
  ``NAME:HALF`` adds one half of a set written in halves. ``--set confquestions=no`` leaves ConfQuestions
  out (a check, not a tuning set) and asks the unanswerable lists of each wiki set's store instead: the
  weights of issue 60 were fitted so, on ``heldout_wiki_c:1``;
* a logistic regression on ``ScopeFeatures`` (standardised, L2 1e-2, both classes weighed equally,
  full-batch gradient descent), mapped back to raw weights. Tried and not kept: weighing the unanswerable
  questions that sound like the wiki as much as the off-topic ones (14% of answerable questions refused);
* the operating point: the bias is lowered until ``IN_SCOPE`` of the answerable questions are in scope; a
  wrong extractive answer cites the page it quotes, a refusal leaves the user with nothing;
* the weights are copied into ``scope.SCOPE_MODELS`` under the model's name and ``LEXICAL_SCOPE`` by hand,
  so the change is a reviewed commit.

Judged elsewhere, never here: the held-out wikis (experiment ``heldout``) and
``benchmarks/unanswerable_questions_heldout.json`` (experiment ``out_of_scope``).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np
from harness import CHECKOUT, shown
from harness.conversations import LISTS

OPTIONS = {"unanswerable": "benchmarks/unanswerable_questions.json", "also": (), "confquestions": "yes"}
IN_SCOPE = 0.95  # the operating point: at least this share of the calibration's answerable questions answered


def features(answerer, retriever, questions: Sequence[str]) -> np.ndarray:
    """One row of ``ScopeFeatures`` per question (its retrieved nodes assessed as the synthesizer reads them)."""
    from llama_index_ragonite.models.extractive.scope import feature_names
    from llama_index_ragonite.models.extractive.sources import node_source, plain_question

    rows = []
    for question in questions:
        nodes = retriever.retrieve(question)
        assessed = answerer.assess(plain_question(question), [node_source(i, n.node) for i, n in enumerate(nodes, 1)])
        rows.append(assessed.features.vector() if assessed.features else (0.0,) * len(feature_names()))
    return np.array(rows, dtype=float)


def wiki_set(name: str, tmp: str):
    """A wiki set's retriever (its pages in a fresh store under ``tmp``), its turns' gold completed
    questions and their labels (1: a gold page). ``name``: a folder of benchmarks/, ``NAME:HALF`` for the
    conversations of one half (a set written in halves: tune on one, judge on the other)."""
    from llama_index_ragonite import EvidenceStore, HybridRetriever, load_pages

    folder_name, _, half = name.partition(":")
    folder = CHECKOUT / "benchmarks" / folder_name
    store_dir = Path(tmp) / folder.name / "store"
    EvidenceStore(store_dir).ingest(load_pages(folder / "pages"), show_progress=False)
    conversations = json.loads((folder / "conversations.json").read_text())
    turns = [t for c in conversations if not half or str(c.get("half")) == half for t in c["turns"]]
    retriever = HybridRetriever.from_store(store_dir, k_lexical=10, k_dense=10, top_n=10)
    return retriever, [t["completed"] for t in turns], [int(t["gold_page"] is not None) for t in turns]


def fit(x: np.ndarray, y: np.ndarray, used: Sequence[int], steps: int = 4000) -> Tuple[np.ndarray, float]:
    """Class-balanced L2 logistic regression on the ``used`` feature columns; raw-scale weights and bias."""
    cols = list(used)
    mean, std = x[:, cols].mean(axis=0), x[:, cols].std(axis=0) + 1e-9
    z = (x[:, cols] - mean) / std
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w, b = np.zeros(len(cols)), 0.0
    for _ in range(steps):
        g = (1 / (1 + np.exp(-(z @ w + b))) - y) * weight
        w -= 0.5 * (z.T @ g / len(y) + 1e-2 * w)
        b -= 0.5 * g.mean()
    raw = np.zeros(x.shape[1])
    raw[cols] = w / std
    return raw, float(b - (w * mean / std).sum())


def operating_point(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> float:
    """The bias that answers ``IN_SCOPE`` of the answerable questions (a lower one when the fit already does)."""
    return float(b - min(0.0, np.quantile(x[y == 1] @ w + b, 1 - IN_SCOPE)))


def run(bench) -> List[str]:
    from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer
    from llama_index_ragonite.models.extractive.scope import ScopeFeatures, ScopeModel, feature_names

    confquestions = bench.opts["confquestions"] != "no"
    retriever = bench.retriever()
    answerable = [q.completed for q in bench.questions()] if confquestions else []
    unanswerable_file = CHECKOUT / bench.opts["unanswerable"]
    unanswerable = [q["question"] for q in json.loads(unanswerable_file.read_text(encoding="utf-8"))["questions"]]
    unanswerable += [q for by_lang in LISTS.values() for lang in ("en", "de") for q in by_lang[lang]]
    model, names, tmp = retriever.embed_model, feature_names(), tempfile.TemporaryDirectory(prefix="calibrate-")
    also = [bench.opts["also"]] if isinstance(bench.opts["also"], str) else list(bench.opts["also"])
    wikis = [wiki_set(name, tmp.name) for name in also]
    if not confquestions:  # the unanswerable lists asked of each wiki set's store instead of ConfQuestions'
        wikis = [
            (r, [*questions, *unanswerable], [*labels, *[0] * len(unanswerable)]) for r, questions, labels in wikis
        ]
        unanswerable = []
    y = np.array([1] * len(answerable) + [0] * len(unanswerable), dtype=float)
    lines = [
        f"Store: `{shown(bench.store_path, CHECKOUT)}` ({len(bench.store)} evidences), embedding model "
        f"`{model.model_name}`; hybrid retriever top 10. Calibration set: "
        + (
            f"{len(answerable)} answerable (ConfQuestions, gold completed) and {len(unanswerable)} unanswerable "
            f"or off-topic questions ({unanswerable_file.name} and the off-topic lists of off_topic_questions.json)"
            if confquestions
            else f"no ConfQuestions question; the unanswerable or off-topic questions of {unanswerable_file.name} "
            "and the off-topic lists of off_topic_questions.json asked of each wiki set's store"
        )
        + "".join(f"; {name}: {len(w[2])} turns ({sum(w[2])} answerable)" for name, w in zip(also, wikis))
        + ". Procedure: the module doc of this experiment.",
        "",
        "| scope model | " + " | ".join(names) + " | bias | answerable in scope | unanswerable out of scope |",
        "|---|" + "---:|" * (len(names) + 3),
    ]
    for label, answerer, used in (
        ("by meaning", ExtractiveAnswerer(embed_model=model), range(len(names))),
        ("lexical only", ExtractiveAnswerer(by_meaning=False), [0, 3, 4, 5, 6, 7, 8, 9]),
    ):
        xs, ys = [features(answerer, retriever, answerable + unanswerable)] if len(y) else [], [y]
        for wiki_retriever, wiki_questions, labels in wikis:
            own = {"embed_model": wiki_retriever.embed_model}  # cosines with the wiki store's model
            xs.append(
                features(
                    answerer.model_copy(update=own) if answerer.embed_model else answerer,
                    wiki_retriever,
                    wiki_questions,
                )
            )
            ys.append(np.array(labels, dtype=float))
        x, y_all = np.vstack(xs), np.concatenate(ys)
        w, b = fit(x, y_all, used)
        scope = ScopeModel(
            weights=tuple(round(float(v), 3) for v in w),
            bias=round(operating_point(x, y_all, w, b), 3),
            fitted_on=label,
        )
        inside = np.array([scope.in_scope(ScopeFeatures(*row)) for row in x])
        lines.append(
            f"| {label} | " + " | ".join(f"{v:.3f}" for v in scope.weights) + f" | {scope.bias:.3f} | "
            f"{inside[y_all == 1].mean():.3f} | {(~inside[y_all == 0]).mean():.3f} |"
        )
        print(f"{label}: ScopeModel(weights={scope.weights}, bias={scope.bias})", file=sys.stderr)
    tmp.cleanup()
    return lines
