"""Answer quality of the embedded default's extractive answerer: the HEAD answerer vs this tree's, in one run.

Usage:
    python benchmarks/answers_confquestions.py [--data DIR] [--store DIR] [--base-rev REV] [--limit N] [--out FILE.md]

Issue 16 asks the offline ``ExtractiveAnswerer`` for the smallest unit that holds the answer and
for out-of-scope decisions that work across languages. Measured on:

* the 600 answerable ConfQuestions questions, asked as their gold completed question, each in a
  fresh conversation of a ``RagoniteChatEngine`` with the embedded default (hybrid retriever, 10
  lexical + 10 dense + latent-term, RRF, top 10, over the cached ALL store, never rebuilt);
* the unanswerable questions of ``benchmarks/unanswerable_questions.json``;
* own questions with expected answers over ``examples/sample_wiki`` (pages ConfQuestions never
  asks about), to check that rules tuned on ConfQuestions carry over.

Metrics (``bench.answer_metrics``): token F1 against the gold answer (SQuAD style), the median
answer length in words (``answer_text``: no label, no citation markers; in-scope answers only),
Unitxt K-precision against the retrieved evidences' LLM views, the out-of-scope rates.

The baseline is the real code of a commit (``--base-rev``, default HEAD), extracted with
``git archive`` into a temporary folder. Retrieval does not depend on the answerer, so the
new answerer runs inside the engine and the HEAD answerer answers the very prompts the engine
sent, in a subprocess whose ``sys.path`` starts with the HEAD copy; its answers then pass the
engine's citation check (``prompts.check_citations``, as ``RagoniteChatEngine`` does).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from harness import default_data, finish_report, package_at, repository, shown, table_cell
from harness.asking import Asked, ask_all, out_of_scope_rate, rate_row
from harness.own_questions import OWN_QUESTIONS, SAMPLE_WIKI
from harness.store import ALL_STORE, open_all_store

from llama_index_ragonite.bench.answer_metrics import answer_text, is_out_of_scope, k_precision, token_f1
from llama_index_ragonite.bench.confquestions import load_questions
from llama_index_ragonite.chat.engine import RagoniteChatEngine
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.extractive.answerer import DEFAULT_LABEL, ExtractiveAnswerer
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.prompts import OUT_OF_SCOPE, check_citations
from llama_index_ragonite.retrieval.retriever import HybridRetriever

ROOT = repository(__file__)
DEFAULT_DATA = default_data(ROOT)
DEFAULT_STORE = ROOT / "benchmarks" / ".cache" / ALL_STORE
UNANSWERABLE = ROOT / "benchmarks" / "unanswerable_questions.json"
F1_FACTOR, MAX_MEDIAN_WORDS, LANG_GAP, UNANSWERABLE_TARGET = 1.3, 30, 0.05, 0.85
POSTER = "Which AMD graphics card(s) was checked with HP 8300 for the OpenXT GPU passthrough tests?"
POSTER_FOLLOW_UP = "What was the QEMU version in these tests?"  # completed by the engine's offline completer


def old_answers(base: Path, prompts: Sequence[str]) -> List[str]:
    """The HEAD ``ExtractiveAnswerer``'s answers to ``prompts``, in a subprocess importing from ``base``."""
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(base)!r})\n"
        "from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer\n"
        "import llama_index_ragonite\n"
        f"assert llama_index_ragonite.__file__.startswith({str(base)!r}), llama_index_ragonite.__file__\n"
        "llm = ExtractiveAnswerer()\n"
        "prompts = json.load(open(sys.argv[1], encoding='utf-8'))\n"
        "json.dump([llm.complete(p).text if p else '' for p in prompts], open(sys.argv[2], 'w', encoding='utf-8'))\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "prompts.json"), Path(tmp, "answers.json")
        src.write_text(json.dumps(list(prompts)), encoding="utf-8")
        subprocess.run([sys.executable, "-c", code, str(src), str(dst)], check=True, cwd=tmp)
        raw = json.loads(dst.read_text(encoding="utf-8"))
    out = []
    for prompt, text in zip(prompts, raw):
        n_sources = prompt.count("### Source ")
        answer = check_citations(text.strip(), n_sources).answer if prompt else OUT_OF_SCOPE
        out.append(answer or OUT_OF_SCOPE)
    return out


def as_old(asked: Sequence[Asked], answers: Sequence[str]) -> List[Asked]:
    return [a._replace(answer=b) for a, b in zip(asked, answers)]


def quality(asked: Sequence[Asked], gold: Dict[str, str], lang: str = "") -> Dict[str, float]:
    group = [a for a in asked if not lang or a.lang == lang]
    texts = [answer_text(a.answer, DEFAULT_LABEL) for a in group]
    answered = [t for a, t in zip(group, texts) if not is_out_of_scope(a.answer)]
    return {
        "f1": statistics.mean(token_f1(t, [gold[a.lang + a.question]]) for a, t in zip(group, texts)),
        "kp": statistics.mean(k_precision(t, a.contexts) for a, t in zip(group, texts)),
        "kp_answered": statistics.mean(
            [k_precision(t, a.contexts) for a, t in zip(group, texts) if not is_out_of_scope(a.answer)] or [0.0]
        ),
        "words": statistics.median([len(t.split()) for t in answered] or [0]),
        "oos": out_of_scope_rate(group),
    }


def own_check(answerer: ExtractiveAnswerer) -> List[Tuple[str, str, List[str], str, bool]]:
    """The own questions over the sample wiki, in a throwaway store; (lang, question, expected, answer, passed)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = EvidenceStore(Path(tmp) / "store")
        store.ingest(load_pages(SAMPLE_WIKI), show_progress=False)
        engine = RagoniteChatEngine(HybridRetriever.from_store(store), llm=answerer, follow_ups=0)
        out = []
        for lang, question, expected in OWN_QUESTIONS:
            engine.reset()
            answer = str(engine.chat(question).response)
            ok = is_out_of_scope(answer) if not expected else all(e.lower() in answer.lower() for e in expected)
            out.append((lang, question, expected, answer, ok))
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--store", type=Path, default=DEFAULT_STORE)
    ap.add_argument("--base-rev", default="HEAD", help="the baseline commit (default HEAD), run from a git archive")
    ap.add_argument("--limit", type=int, default=0, help="only the first N answerable questions (development)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    start, load_before = time.perf_counter(), os.getloadavg()
    questions = load_questions(args.data)[: args.limit or None]
    gold = {q.lang + q.completed: q.answer for q in questions}
    unanswerable = json.loads(UNANSWERABLE.read_text(encoding="utf-8"))["questions"]
    store = open_all_store(args.store, args.data)
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    answerer = ExtractiveAnswerer()
    engine = RagoniteChatEngine(retriever, llm=answerer, follow_ups=0)

    t = time.perf_counter()
    new = ask_all(engine, [(q.lang, q.source, q.completed) for q in questions], "answerable")
    bad_new = ask_all(engine, [(q["lang"], q["kind"], q["question"]) for q in unanswerable], "unanswerable")
    new_s = time.perf_counter() - t
    engine.reset()
    poster = engine.chat(POSTER)
    follow_up = engine.chat(POSTER_FOLLOW_UP)  # same conversation
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as base:
        base_commit = package_at(args.base_rev, Path(base), ROOT)
        old_all = old_answers(Path(base), [a.prompt for a in [*new, *bad_new]])
    old_s = time.perf_counter() - t
    old, bad_old = as_old(new, old_all[: len(new)]), as_old(bad_new, old_all[len(new) :])
    own = own_check(ExtractiveAnswerer())
    wall, load_after = time.perf_counter() - start, os.getloadavg()

    q_old, q_new = quality(old, gold), quality(new, gold)
    per_lang = {
        (name, lang): quality(rows, gold, lang) for name, rows in (("old", old), ("new", new)) for lang in ("en", "de")
    }
    gap_old = abs(per_lang[("old", "de")]["oos"] - per_lang[("old", "en")]["oos"])
    gap_new = abs(per_lang[("new", "de")]["oos"] - per_lang[("new", "en")]["oos"])
    checks = [
        (
            f"token F1 >= {F1_FACTOR} x HEAD",
            q_new["f1"] >= F1_FACTOR * q_old["f1"],
            f"{q_new['f1']:.3f} vs {q_old['f1']:.3f} ({q_new['f1'] / max(q_old['f1'], 1e-9):.2f}x)",
        ),
        (f"median answer <= {MAX_MEDIAN_WORDS} words", q_new["words"] <= MAX_MEDIAN_WORDS, f"{q_new['words']:g}"),
        ("K-precision not lower", q_new["kp"] >= q_old["kp"], f"{q_new['kp']:.3f} vs {q_old['kp']:.3f}"),
        (f"DE out-of-scope within {LANG_GAP} of EN", gap_new <= LANG_GAP, f"gap {gap_new:.3f} (HEAD {gap_old:.3f})"),
        (
            f"unanswerable out of scope >= {UNANSWERABLE_TARGET}",
            out_of_scope_rate(bad_new) >= UNANSWERABLE_TARGET,
            f"{out_of_scope_rate(bad_new):.3f} (HEAD {out_of_scope_rate(bad_old):.3f})",
        ),
        (
            "answerable out-of-scope rate does not rise",
            q_new["oos"] <= q_old["oos"],
            f"{q_new['oos']:.3f} vs {q_old['oos']:.3f}",
        ),
    ]
    poster_ok = all(w in str(poster.response) for w in ("7750", "W600")) and len(poster.turn.cited) >= 2
    follow_ok = "1.4" in str(follow_up.response)
    lines = [
        "# Extractive answers on ConfQuestions: HEAD answerer vs this tree's (embedded default)",
        "",
        "Command: `python benchmarks/answers_confquestions.py"
        + ("" if args.base_rev == "HEAD" else f" --base-rev {args.base_rev}")
        + f" --out benchmarks/results/answers_confquestions.md`; baseline: {base_commit} (`git archive`).",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average (1/5/15 min) {' / '.join(f'{x:.1f}' for x in load_before)} at start, "
        f"{' / '.join(f'{x:.1f}' for x in load_after)} at the end (the cores are shared with other jobs).",
        f"Wall time {wall:.0f} s: {len(new) + len(bad_new)} questions through the engine with the new answerer in "
        f"{new_s:.0f} s ({new_s * 1000 / max(len(new) + len(bad_new), 1):.0f} ms each, retrieval included), "
        f"the HEAD answerer on the same prompts in {old_s:.0f} s (subprocess, model loading included).",
        f"Store: `{shown(args.store, ROOT)}` ({len(store)} evidences); hybrid retriever, 10 lexical + 10 dense"
        f"{' + 10 latent-term' if retriever.latent else ''}, RRF, top 10; one fresh conversation per question, "
        "no follow-up suggestions. Answerable: "
        f"{len(new)} ConfQuestions questions as their gold completed question; unanswerable: "
        f"`{shown(UNANSWERABLE, ROOT)}` ({len(bad_new)}).",
        "",
        "## Issue 16 targets",
        "",
        "| target | met | this run |",
        "|---|---|---|",
        *[f"| {name} | {'yes' if ok else 'NO'} | {value} |" for name, ok, value in checks],
        f"| poster's example: both AMD rows cited | {'yes' if poster_ok else 'NO'} | {table_cell(str(poster.response), 200)} |",
        f'| follow-up "{POSTER_FOLLOW_UP}" → "{table_cell(follow_up.turn.completed_question, 200)}": QEMU 1.4 | '
        f"{'yes' if follow_ok else 'NO'} | {table_cell(str(follow_up.response), 200)} |",
        "",
        "## Answer quality (answerable questions)",
        "",
        "| answerer | lang | token F1 | median words (answered) | K-precision | K-precision (answered) | out of scope |",
        "|---|---|---:|---:|---:|---:|---:|",
        *[
            f"| {name} | {lang or 'all'} | {m['f1']:.3f} | {m['words']:g} | {m['kp']:.3f} | {m['kp_answered']:.3f} | {m['oos']:.3f} |"
            for name, rows in (("HEAD", old), ("new", new))
            for lang in ("en", "de", "")
            for m in [quality(rows, gold, lang)]
        ],
        "",
        "By evidence type holding the gold answer (token F1, HEAD → new): "
        + ", ".join(
            f"{src} {statistics.mean(token_f1(answer_text(o.answer, DEFAULT_LABEL), [gold[o.lang + o.question]]) for o in old if o.kind == src):.3f} → "
            f"{statistics.mean(token_f1(answer_text(n.answer, DEFAULT_LABEL), [gold[n.lang + n.question]]) for n in new if n.kind == src):.3f}"
            for src in ("passage", "list", "table")
            if any(n.kind == src for n in new)
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
        f"## Own questions over `{shown(SAMPLE_WIKI, ROOT)}` (not from ConfQuestions): {sum(o[4] for o in own)}/{len(own)} as expected",
        "",
        "| lang | question | expected | answer | ok |",
        "|---|---|---|---|---|",
        *[
            f"| {lang} | {table_cell(q, 200)} | {', '.join(e) or 'out of scope'} | {table_cell(a, 200)} | {'yes' if ok else 'no'} |"
            for lang, q, e, a, ok in own
        ],
        "",
        "## Examples (first 8 answerable English and German questions, HEAD → new)",
        "",
        "| lang | question | gold | HEAD | new |",
        "|---|---|---|---|---|",
        *[
            f"| {n.lang} | {table_cell(n.question, 120)} | {table_cell(gold[n.lang + n.question], 80)} | {table_cell(o.answer, 160)} | {table_cell(n.answer, 160)} |"
            for lang in ("en", "de")
            for o, n in [(o, n) for o, n in zip(old, new) if n.lang == lang][:8]
        ],
    ]
    return finish_report(lines, args.out)


if __name__ == "__main__":
    sys.exit(main())
