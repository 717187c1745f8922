"""Extractive answers on ConfQuestions: the baseline's answerer vs this tree's (embedded default).

Issue 16 asks the offline ``ExtractiveAnswerer`` for the smallest unit that holds the answer and for
out-of-scope decisions that work across languages. Asked in fresh conversations of ``Bench.engine``:
the 600 answerable questions as their gold completed question, the unanswerable questions of
``benchmarks/unanswerable_questions.json``, and own questions over ``examples/sample_wiki`` (pages
ConfQuestions never asks about: do rules tuned on ConfQuestions carry over?). Retrieval does not depend
on the answerer, so the baseline's answerer (``--base-rev``) answers the very prompts this tree's engine
sent, in a child process (``Bench.call``); its answers then pass this tree's citation check, as the engine's.
Metrics (``bench.answer_metrics``): token F1 against the gold answer, median words of in-scope answers
(label and citations stripped), K-precision against the retrieved evidences' views, out-of-scope rates.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

from harness import CHECKOUT, shown, table_cell

OPTIONS = {"unanswerable": "benchmarks/unanswerable_questions.json", "examples": 8}
F1_FACTOR, MAX_MEDIAN_WORDS, LANG_GAP, UNANSWERABLE_TARGET = 1.3, 30, 0.05, 0.85
POSTER = "Which AMD graphics card(s) was checked with HP 8300 for the OpenXT GPU passthrough tests?"
POSTER_FOLLOW_UP = "What was the QEMU version in these tests?"  # completed by the engine's offline completer


def old_answers(prompts: str) -> List[str]:
    """The answers of the ``ExtractiveAnswerer`` first on ``sys.path`` (``Bench.call`` runs it at the baseline)
    to the prompts of the JSON file ``prompts`` (too many for a command line)."""
    from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer

    llm = ExtractiveAnswerer()
    return [llm.complete(p).text if p else "" for p in json.loads(Path(prompts).read_text(encoding="utf-8"))]


def quality(asked: Sequence, gold: Dict[str, str], lang: str = "") -> Dict[str, float]:
    from harness.asking import out_of_scope_rate

    from llama_index_ragonite.bench.answer_metrics import answer_text, is_out_of_scope, k_precision, token_f1
    from llama_index_ragonite.models.extractive.answerer import DEFAULT_LABEL

    group = [a for a in asked if not lang or a.lang == lang]
    texts = [answer_text(a.answer, DEFAULT_LABEL) for a in group]
    answered = [(a, t) for a, t in zip(group, texts) if not is_out_of_scope(a.answer)]
    return {
        "f1": statistics.mean(token_f1(t, [gold[a.lang + a.question]]) for a, t in zip(group, texts)),
        "kp": statistics.mean(k_precision(t, a.contexts) for a, t in zip(group, texts)),
        "kp_answered": statistics.mean([k_precision(t, a.contexts) for a, t in answered] or [0.0]),
        "words": statistics.median([len(t.split()) for _, t in answered] or [0]),
        "oos": out_of_scope_rate(group),
    }


def own_check(engine_of) -> List[tuple]:
    """The own questions over the sample wiki, in a throwaway store: (lang, question, expected, answer, ok)."""
    from harness.own_questions import OWN_QUESTIONS, SAMPLE_WIKI

    from llama_index_ragonite.bench.answer_metrics import is_out_of_scope
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.parsing.loaders import load_pages
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    with tempfile.TemporaryDirectory() as tmp:
        store = EvidenceStore(Path(tmp) / "store")
        store.ingest(load_pages(SAMPLE_WIKI), show_progress=False)
        engine, out = engine_of(HybridRetriever.from_store(store)), []
        for lang, question, expected in OWN_QUESTIONS:
            engine.reset()
            answer = str(engine.chat(question).response)
            ok = is_out_of_scope(answer) if not expected else all(e.lower() in answer.lower() for e in expected)
            out.append((lang, question, expected, answer, ok))
        return out


def run(bench) -> List[str]:
    from harness.asking import ask_all, out_of_scope_rate, rate_row
    from harness.own_questions import SAMPLE_WIKI

    from llama_index_ragonite.bench.answer_metrics import answer_text, token_f1
    from llama_index_ragonite.models.extractive.answerer import DEFAULT_LABEL
    from llama_index_ragonite.prompts import OUT_OF_SCOPE, check_citations

    questions = bench.questions()
    gold = {q.lang + q.completed: q.answer for q in questions}
    unanswerable = json.loads((CHECKOUT / bench.opts["unanswerable"]).read_text(encoding="utf-8"))["questions"]
    engine = bench.engine()
    t = time.perf_counter()
    new = ask_all(engine, [(q.lang, q.source, q.completed) for q in questions], "answerable")
    bad_new = ask_all(engine, [(q["lang"], q["kind"], q["question"]) for q in unanswerable], "unanswerable")
    new_s = time.perf_counter() - t
    engine.reset()
    poster, follow_up = engine.chat(POSTER), engine.chat(POSTER_FOLLOW_UP)  # one conversation
    t = time.perf_counter()
    prompts = [a.prompt for a in [*new, *bad_new]]
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as file:
        file.write(json.dumps(prompts))
        file.flush()
        raw = bench.call("old_answers", bench.base, prompts=file.name)
    old_s = time.perf_counter() - t
    cited = [
        check_citations(r.strip(), p.count("### Source ")).answer if p else OUT_OF_SCOPE for p, r in zip(prompts, raw)
    ]
    old_all = [a._replace(answer=c or OUT_OF_SCOPE) for a, c in zip([*new, *bad_new], cited)]
    old, bad_old = old_all[: len(new)], old_all[len(new) :]
    own = own_check(bench.engine)

    q_old, q_new = quality(old, gold), quality(new, gold)
    gap = {
        n: abs(quality(r, gold, "de")["oos"] - quality(r, gold, "en")["oos"]) for n, r in (("old", old), ("new", new))
    }
    bad_rate, bad_rate_old = out_of_scope_rate(bad_new), out_of_scope_rate(bad_old)
    checks = [
        (f"token F1 >= {F1_FACTOR} x HEAD", q_new["f1"] >= F1_FACTOR * q_old["f1"],
         f"{q_new['f1']:.3f} vs {q_old['f1']:.3f} ({q_new['f1'] / max(q_old['f1'], 1e-9):.2f}x)"),
        (f"median answer <= {MAX_MEDIAN_WORDS} words", q_new["words"] <= MAX_MEDIAN_WORDS, f"{q_new['words']:g}"),
        ("K-precision not lower", q_new["kp"] >= q_old["kp"], f"{q_new['kp']:.3f} vs {q_old['kp']:.3f}"),
        (f"DE out-of-scope within {LANG_GAP} of EN", gap["new"] <= LANG_GAP,
         f"gap {gap['new']:.3f} (HEAD {gap['old']:.3f})"),
        (f"unanswerable out of scope >= {UNANSWERABLE_TARGET}", bad_rate >= UNANSWERABLE_TARGET,
         f"{bad_rate:.3f} (HEAD {bad_rate_old:.3f})"),
        ("answerable out-of-scope rate does not rise", q_new["oos"] <= q_old["oos"],
         f"{q_new['oos']:.3f} vs {q_old['oos']:.3f}"),
    ]  # fmt: skip
    poster_ok = all(w in str(poster.response) for w in ("7750", "W600")) and len(poster.turn.cited) >= 2

    def f1_of(rows, source: str) -> float:
        return statistics.mean(
            token_f1(answer_text(a.answer, DEFAULT_LABEL), [gold[a.lang + a.question]])
            for a in rows
            if a.kind == source
        )

    n = bench.opts["examples"]
    return [
        f"{len(new) + len(bad_new)} questions through the engine with the new answerer in {new_s:.0f} s "
        f"({new_s * 1000 / max(len(new) + len(bad_new), 1):.0f} ms each, retrieval included), the baseline's "
        f"answerer on the same prompts in {old_s:.0f} s (child process, model loading included). Store: "
        f"`{shown(bench.store_path, CHECKOUT)}` ({len(bench.store)} evidences); the embedded default's engine, "
        f"one fresh conversation per question. Answerable: {len(new)} ConfQuestions questions as their gold "
        f"completed question; unanswerable: `{bench.opts['unanswerable']}` ({len(bad_new)}). HEAD: the baseline.",
        "",
        "## Issue 16 targets",
        "",
        "| target | met | this run |",
        "|---|---|---|",
        *[f"| {name} | {'yes' if ok else 'NO'} | {value} |" for name, ok, value in checks],
        f"| poster's example: both AMD rows cited | {'yes' if poster_ok else 'NO'} | "
        f"{table_cell(str(poster.response), 200)} |",
        f'| follow-up "{POSTER_FOLLOW_UP}" → "{table_cell(follow_up.turn.completed_question, 200)}": QEMU 1.4 | '
        f"{'yes' if '1.4' in str(follow_up.response) else 'NO'} | {table_cell(str(follow_up.response), 200)} |",
        "",
        "## Answer quality (answerable questions)",
        "",
        "| answerer | lang | token F1 | median words (answered) | K-precision | K-precision (answered) | out of scope |",
        "|---|---|---:|---:|---:|---:|---:|",
        *[
            f"| {name} | {lang or 'all'} | {m['f1']:.3f} | {m['words']:g} | {m['kp']:.3f} | {m['kp_answered']:.3f} "
            f"| {m['oos']:.3f} |"
            for name, rows in (("HEAD", old), ("new", new))
            for lang in ("en", "de", "")
            for m in [quality(rows, gold, lang)]
        ],
        "",
        "By evidence type holding the gold answer (token F1, HEAD → new): "
        + ", ".join(
            f"{src} {f1_of(old, src):.3f} → {f1_of(new, src):.3f}"
            for src in ("passage", "list", "table")
            if any(a.kind == src for a in new)
        ),
        "",
        "## Out-of-scope rate",
        "",
        "| answerer, questions | EN | DE | all |",
        "|---|---:|---:|---:|",
        rate_row("HEAD, answerable", old),
        rate_row("new, answerable", new),
        rate_row("HEAD, unanswerable", bad_old),
        rate_row("new, unanswerable", bad_new),
        "",
        f"## Own questions over `{shown(SAMPLE_WIKI, CHECKOUT)}` (not from ConfQuestions): "
        f"{sum(o[4] for o in own)}/{len(own)} as expected",
        "",
        "| lang | question | expected | answer | ok |",
        "|---|---|---|---|---|",
        *[
            f"| {lang} | {table_cell(q, 200)} | {', '.join(e) or 'out of scope'} | {table_cell(a, 200)} | "
            f"{'yes' if ok else 'no'} |"
            for lang, q, e, a, ok in own
        ],
        "",
        f"## Examples (first {n} answerable English and German questions, HEAD → new)",
        "",
        "| lang | question | gold | HEAD | new |",
        "|---|---|---|---|---|",
        *[
            f"| {b.lang} | {table_cell(b.question, 120)} | {table_cell(gold[b.lang + b.question], 80)} | "
            f"{table_cell(a.answer, 160)} | {table_cell(b.answer, 160)} |"
            for lang in ("en", "de")
            for a, b in [(a, b) for a, b in zip(old, new) if b.lang == lang][:n]
        ],
    ]
