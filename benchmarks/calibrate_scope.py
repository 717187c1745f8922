"""Fit the offline answerer's out-of-scope decision (``models/extractive/scope.py``) for an embedding model.

Usage:
    python benchmarks/calibrate_scope.py [--data DIR] [--store DIR] [--also SET] [--out FILE.md]

The procedure (issue 45: one calibrated score, one set of weights per embedding model, chosen on a
set that then does not judge it):

* calibration set: in scope, the 600 ConfQuestions questions asked as their gold completed question;
  out of scope, ``benchmarks/unanswerable_questions.json`` (48) and every off-topic list of
  ``benchmarks/completion_confquestions.py``. Each question is retrieved alone (hybrid retriever over
  the cached ALL store, top 10) and assessed by ``ExtractiveAnswerer.assess`` over those nodes, as the
  chat engine's ``ExtractiveSynthesizer`` reads them, scoring by meaning with the store's embedding
  model (and once by words only, for the lexical model). ``--also SET`` adds a wiki set of
  ``benchmarks/SET`` (pages and conversations, as ``heldout_conversations.py`` reads them): each turn's
  gold completed question, retrieved alone from a store of its pages, labelled by whether it has a
  gold page. ConfQuestions' questions name product names nearly every time; a wiki in everyday
  language, half of it asked in German, weighs the words and the cosines otherwise. A set added here
  no longer judges the decision;
* a logistic regression on ``ScopeFeatures`` (standardised, L2 1e-2, both classes weighed equally,
  full-batch gradient descent), mapped back to raw weights; in scope at probability ≥ 0.5. Tried and
  not kept: weighing the unanswerable questions that sound like the wiki as much as all the off-topic
  ones (a quarter each): fewer of them answered, but 14% of the calibration's answerable questions
  refused, and the trial cases' "Who grants access to the build server?" with them;
* the operating point: the bias is lowered until at least 95% of the calibration's answerable questions
  are in scope (``IN_SCOPE``). An extractive answer cites the page it quotes, so a wrong one is seen for
  what it is; a refusal of an answerable question leaves the user with nothing. With the balanced fit
  alone, questions in everyday words on a new wiki sat at the boundary (p ≈ 0.5: "Who grants access
  to the build server?" over a stock LlamaIndex retriever);
* the weights are copied into ``scope.SCOPE_MODELS`` under the model's ``model_name`` (by hand, so the
  change is a reviewed commit), and ``LEXICAL_SCOPE``.

Judged elsewhere, never here: the held-out wikis (``benchmarks/heldout_conversations.py``) and
``benchmarks/unanswerable_questions_heldout.json`` (``benchmarks/out_of_scope_confquestions.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import default_data, finish_report, shown  # noqa: E402
from harness.conversations import (  # noqa: E402
    FRESH_OFF_TOPIC,
    HELD_OUT_OFF_TOPIC,
    LAST_OFF_TOPIC,
    LATER_OFF_TOPIC,
    OFF_TOPIC,
    UNSEEN_OFF_TOPIC,
)
from harness.store import ALL_STORE, open_all_store  # noqa: E402

from llama_index_ragonite.bench.confquestions import load_questions  # noqa: E402
from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer  # noqa: E402
from llama_index_ragonite.models.extractive.prompt import node_source, plain_question  # noqa: E402
from llama_index_ragonite.models.extractive.scope import ScopeModel, feature_names  # noqa: E402
from llama_index_ragonite.retrieval.retriever import HybridRetriever  # noqa: E402

UNANSWERABLE = ROOT / "benchmarks" / "unanswerable_questions.json"
OFF_TOPIC_LISTS = (OFF_TOPIC, HELD_OUT_OFF_TOPIC, FRESH_OFF_TOPIC, UNSEEN_OFF_TOPIC, LATER_OFF_TOPIC, LAST_OFF_TOPIC)


def features(answerer: ExtractiveAnswerer, retriever, questions: Sequence[str]) -> np.ndarray:
    """One row of ``ScopeFeatures`` per question (its retrieved nodes assessed as the synthesizer reads them)."""
    from llama_index.core.schema import MetadataMode

    rows = []
    for question in questions:
        nodes = retriever.retrieve(question)
        views = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
        sources = [node_source(i, view) for i, view in enumerate(views, 1)]
        assessed = answerer.assess(plain_question(question), sources)
        rows.append(assessed.features.vector() if assessed.features else (0.0,) * len(feature_names()))
    return np.array(rows, dtype=float)


def wiki_set(folder: Path):
    """A wiki set's retriever (its pages in a fresh temporary store), its turns' gold completed questions
    and their labels (1: a gold page)."""
    import tempfile

    from llama_index_ragonite import EvidenceStore, load_pages

    store_dir = Path(tempfile.mkdtemp(prefix=f"calibrate-{folder.name}-")) / "store"
    EvidenceStore(store_dir).ingest(load_pages(folder / "pages"), show_progress=False)
    turns = [t for c in json.loads((folder / "conversations.json").read_text()) for t in c["turns"]]
    retriever = HybridRetriever.from_store(store_dir, k_lexical=10, k_dense=10, top_n=10)
    return retriever, [t["completed"] for t in turns], [int(t["gold_page"] is not None) for t in turns]


def fit(x: np.ndarray, y: np.ndarray, used: Sequence[int], steps: int = 4000) -> Tuple[np.ndarray, float]:
    """Class-balanced L2 logistic regression on the ``used`` feature columns; raw-scale weights and bias."""
    cols = list(used)
    xs = x[:, cols]
    mean, std = xs.mean(axis=0), xs.std(axis=0) + 1e-9
    z = (xs - mean) / std
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w, b = np.zeros(len(cols)), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = (p - y) * weight
        w -= 0.5 * (z.T @ g / len(y) + 1e-2 * w)
        b -= 0.5 * g.mean()
    raw = np.zeros(x.shape[1])
    raw[cols] = w / std
    return raw, float(b - (w * mean / std).sum())


IN_SCOPE = 0.95  # the operating point: at least this share of the calibration's answerable questions answered


def operating_point(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> float:
    """The bias that answers ``IN_SCOPE`` of the answerable questions (a lower one when the fit already does)."""
    logits = x[y == 1] @ w + b
    return float(b - min(0.0, np.quantile(logits, 1 - IN_SCOPE)))


def rates(x: np.ndarray, y: np.ndarray, model: ScopeModel) -> Tuple[float, float]:
    """(in scope among answerable, out of scope among unanswerable) on the calibration set itself."""
    from llama_index_ragonite.models.extractive.scope import ScopeFeatures

    inside = np.array([model.in_scope(ScopeFeatures(*row)) for row in x])
    return float(inside[y == 1].mean()), float((~inside[y == 0]).mean())


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=default_data(ROOT))
    ap.add_argument("--store", type=Path, default=ROOT / "benchmarks" / ".cache" / ALL_STORE)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--also", action="append", default=[], help="a wiki set under benchmarks/ to add (repeatable)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    store = open_all_store(args.store, args.data)
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    answerable = [q.completed for q in load_questions(args.data)]
    unanswerable = [q["question"] for q in json.loads(UNANSWERABLE.read_text(encoding="utf-8"))["questions"]]
    unanswerable += [q for lists in OFF_TOPIC_LISTS for by_lang in lists.values() for q in by_lang]
    questions = answerable + unanswerable
    y = np.array([1] * len(answerable) + [0] * len(unanswerable), dtype=float)
    model = retriever.embed_model
    wikis = [wiki_set(ROOT / "benchmarks" / name) for name in args.also]
    names = feature_names()
    lines = [
        "# Calibrating the out-of-scope decision (offline answerer)",
        "",
        f"Command: `python benchmarks/calibrate_scope.py{''.join(' --also ' + a for a in args.also)}"
        f"{' --out ' + str(args.out) if args.out else ''}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Store: `{shown(args.store, ROOT)}` ({len(store)} evidences), embedding model `{model.model_name}`; "
        f"hybrid retriever top 10. Calibration set: {len(answerable)} answerable (ConfQuestions, gold completed) "
        f"and {len(unanswerable)} unanswerable or off-topic questions ({UNANSWERABLE.name} and the off-topic "
        "lists of completion_confquestions.py)"
        + "".join(f"; {name}: {len(w[2])} turns ({sum(w[2])} answerable)" for name, w in zip(args.also, wikis))
        + ". Procedure: the module doc of this script.",
        "",
        "| scope model | " + " | ".join(names) + " | bias | answerable in scope | unanswerable out of scope |",
        "|---|" + "---:|" * (len(names) + 3),
    ]
    for label, answerer, used in (
        ("by meaning", ExtractiveAnswerer(embed_model=model), range(len(names))),
        ("lexical only", ExtractiveAnswerer(by_meaning=False), [0, 3, 4, 5, 6]),
    ):
        x = features(answerer, retriever, questions)
        xs, ys = [x], [y]
        for wiki_retriever, wiki_questions, labels in wikis:
            xs.append(
                features(
                    answerer.model_copy(update={"embed_model": wiki_retriever.embed_model})
                    if answerer.embed_model
                    else answerer,
                    wiki_retriever,
                    wiki_questions,
                )
            )
            ys.append(np.array(labels, dtype=float))
        x, y_all = np.vstack(xs), np.concatenate(ys)
        w, b = fit(x, y_all, used)
        b = operating_point(x, y_all, w, b)
        scope = ScopeModel(weights=tuple(round(float(v), 3) for v in w), bias=round(b, 3), fitted_on=label)
        inside, outside = rates(x, y_all, scope)
        lines.append(
            f"| {label} | " + " | ".join(f"{v:.3f}" for v in scope.weights) + f" | {scope.bias:.3f} | "
            f"{inside:.3f} | {outside:.3f} |"
        )
        print(f"{label}: ScopeModel(weights={scope.weights}, bias={scope.bias})", file=sys.stderr)
    lines += ["", f"Wall time {time.perf_counter() - started:.0f} s."]
    return finish_report(lines, args.out.resolve() if args.out else None)


if __name__ == "__main__":
    sys.exit(main())
