"""ConfQuestions conversations through the chat engine (embedded default, ALL context).

Each of ConfQuestions' 50 conversations x EN/DE (100, 600 turns) is played turn by turn through
``RagoniteChatEngine.from_defaults(retriever, follow_ups=0)`` (the offline question completer, the
engine's retrieval, the extractive answerer), a fresh engine per conversation, once with the baseline
package (``--base-rev``) and once with this tree's, each in a child process (``harness.conversations``),
one after the other, on the same cached store. P@1 and MRR@10 are the page of the first source in the
answer prompt; "self-contained" turns (gold completion = raw question) must be shown unchanged. After
each conversation off-topic requests must be answered out of scope; the conversations of
``benchmarks/completion_conversations.json`` (24, over pages no ConfQuestions question asks about) are
played the same way. For reference, the raw and the gold-completed questions are retrieved alone.
"""

from __future__ import annotations

import json
from collections import Counter
from statistics import median
from typing import Dict, List

from harness import CHECKOUT, shown, table_cell
from harness.conversations import LATER_LISTS, OWN, list_label, play, played, refused

__all__ = ["play"]  # what Bench.call runs in the child processes
OPTIONS: dict = {}


def table(questions, ranked: Dict[str, List[List[str]]], metric, slices) -> List[str]:
    from llama_index_ragonite.bench.metrics import gold_keys, mean

    counts = " | ".join(f"{name} ({sum(map(keep, questions))})" for name, keep in slices.items())
    lines = [f"| query | {counts} |", "|---|" + "---:|" * len(slices)]
    for name, rows in ranked.items():
        scores = [metric(urls, gold_keys(q.gold_urls)) for q, urls in zip(questions, rows)]
        cells = [f"{mean([s for q, s in zip(questions, scores) if keep(q)]):.3f}" for keep in slices.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def own_table(runs) -> List[str]:
    from llama_index_ragonite.text import words

    data = json.loads(OWN.read_text(encoding="utf-8"))["conversations"]
    lines = [
        "| engine | self-contained follow-ups unchanged | follow-ups completed | ... with the previous topic "
        "| turns whose top source is on the conversation's page |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, run in runs.items():
        kept = contained = followups = completed = on_topic = on_page = n = 0
        for conversation, played_turns in zip(data, run["own"]):
            for i, (turn, out) in enumerate(zip(conversation["turns"], played_turns)):
                n, on_page = n + 1, on_page + (out["title"] == conversation["page"])
                if turn["kind"] == "sc" and i:
                    contained, kept = contained + 1, kept + (out["completed"] == turn["q"])
                elif turn["kind"] == "fu":
                    added = set(words(out["completed"])) - set(words(turn["q"]))
                    followups, completed = followups + 1, completed + (out["completed"] != turn["q"])
                    on_topic += any(w in added for term in turn["topic"] for w in words(term))
        lines.append(
            f"| {name} | {kept}/{contained} | {completed}/{followups} | {on_topic}/{followups} | {on_page}/{n} |"
        )
    return lines


def answer_rows(runs: Dict[str, dict], questions) -> List[str]:
    """Issue 45's answer figures per engine: answers holding the gold answer (token recall >= 0.5 against
    it, label and citations stripped), median words of the in-scope answers, answerable turns refused."""
    from llama_index_ragonite.bench.answer_metrics import answer_text, token_recall

    lines = [
        "| engine | answers holding the gold answer (token recall >= 0.5, of 600) | EN | DE "
        "| median words (answered turns) | answerable turns answered out of scope |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, run in runs.items():
        texts = [answer_text(t["answer"], "Extractive answer: ") for t in run["turns"]]
        held = [
            not t["out_of_scope"] and token_recall(text, [q.answer]) >= 0.5
            for t, text, q in zip(run["turns"], texts, questions)
        ]
        counts = [len(text.split()) for t, text in zip(run["turns"], texts) if not t["out_of_scope"]]
        by = {code: sum(h for h, q in zip(held, questions) if q.lang == code) for code in ("en", "de")}
        lines.append(
            f"| {name} | {sum(held)} | {by['en']} | {by['de']} | {median(counts) if counts else 0:g} "
            f"| {sum(t['out_of_scope'] for t in run['turns'])} |"
        )
    return lines


def run(bench) -> List[str]:
    from llama_index_ragonite.bench.metrics import gold_keys, mean, mrr_at_k, precision_at_1
    from llama_index_ragonite.bench.significance import mcnemar
    from llama_index_ragonite.bench.slices import question_slices

    runs = {"HEAD": played(bench, bench.base), "this tree": played(bench)}
    questions, retriever = bench.questions(), bench.retriever()
    cache: Dict[str, List[str]] = {}

    def urls(text: str) -> List[str]:
        if text not in cache:
            cache[text] = [hit.node.metadata["url"] for hit in retriever.retrieve(text)]
        return cache[text]

    ranked = {
        "raw conversational turn (retriever alone)": [urls(q.question) for q in questions],
        "gold completed question (retriever alone)": [urls(q.completed) for q in questions],
        **{f"chat engine, {name}": [t["urls"] for t in run["turns"]] for name, run in runs.items()},
    }
    p1 = {name: [precision_at_1(u, gold_keys(q.gold_urls)) for q, u in zip(questions, rows)]
          for name, rows in ranked.items()}  # fmt: skip
    first = {(q.conv_id, q.lang): gold_keys(q.gold_urls) for q in questions if q.turn == 1}
    moved = {q for q in questions if q.turn > 1 and not gold_keys(q.gold_urls) & first[(q.conv_id, q.lang)]}
    slices = dict(question_slices("all", "en", "de", "turn 1", "turns 2+", "simple", "complex"))
    slices["2+, topic page"] = lambda q: q.turn > 1 and q not in moved
    slices["2+, other page"] = lambda q: q in moved
    contained = [i for i, q in enumerate(questions) if q.completed == q.question]
    later = [i for i in contained if questions[i].turn > 1]
    old, new = p1["chat engine, HEAD"], p1["chat engine, this tree"]
    gold = p1["gold completed question (retriever alone)"]

    def lang(values, code):
        return mean([v for v, q in zip(values, questions) if q.lang == code])

    summary = [
        "| engine | P@1 all | EN | DE | EN - DE | self-contained unchanged (of 45) | ... follow-ups (of 21) "
        "| follow-ups completed (of 500) | answerable turns answered out of scope (of 600) "
        "| off-topic question out of scope (of 100) | "
        + " | ".join(f"... {list_label(key)} (of 100)" for key in LATER_LISTS)
        + " | wall time |",
        "|---|" + "---:|" * (10 + len(LATER_LISTS)),
    ]
    for name, run in runs.items():
        values, texts = p1[f"chat engine, {name}"], [t["completed"] for t in run["turns"]]
        kept = [sum(texts[i] == questions[i].question for i in group) for group in (contained, later)]
        done = sum(t != q.question for t, q in zip(texts, questions) if q.turn > 1)
        lists = " | ".join(refused(run, key) for key in ("off_topic", *LATER_LISTS))
        summary.append(
            f"| {name} | {mean(values):.3f} | {lang(values, 'en'):.3f} | {lang(values, 'de'):.3f} "
            f"| {lang(values, 'en') - lang(values, 'de'):+.3f} | {kept[0]} ({kept[0] / len(contained):.1%}) "
            f"| {kept[1]} ({kept[1] / len(later):.1%}) | {done} | {sum(t['out_of_scope'] for t in run['turns'])} "
            f"| {lists} | {run['wall_s']:.0f} s |"
        )
    new_run = runs["this tree"]
    choices = Counter(t["choice"] or "no history (turn 1)" for t in new_run["turns"])
    examples = [
        (q, t) for q, t in zip(questions, new_run["turns"]) if q.conv_id == questions[0].conv_id and q.turn <= 4
    ]
    answered = [o for key in ("off_topic", *LATER_LISTS) for o in new_run[key] if not o["out_of_scope"]]
    return [
        f"Store: `{shown(bench.store_path, CHECKOUT)}` ({len(bench.store)} evidences), its whole HNSW graph on disk"
        " (`harness.store.settle_vectors`: both engines search the same graph); hybrid retriever, 10 lexical +"
        " 10 dense + 10 latent-term + titles, RRF, top 10. HEAD: the baseline. Off-topic lists:"
        " `benchmarks/off_topic_questions.json` (each list's note says when it was written and what was chosen on it)."
        " Targets (issue 16): P@1 >= 0.85, German within 0.04 of English, >= 98% of self-contained turns unchanged,"
        " off-topic questions out of scope.",
        "",
        *summary,
        "",
        *answer_rows(runs, questions),
        "",
        f"McNemar exact p (P@1, 600 paired turns): this tree vs HEAD {mcnemar(new, old):.2g} "
        f"({sum(a > b for a, b in zip(new, old))} turns won, {sum(a < b for a, b in zip(new, old))} lost); "
        f"this tree vs gold completion {mcnemar(new, gold):.2g}.",
        "",
        "This tree's conversation retrieval, ranking used per turn: "
        + ", ".join(f"{name} {count}" for name, count in choices.most_common())
        + ".",
        "",
        "## Precision@1",
        "",
        *table(questions, ranked, precision_at_1, slices),
        "",
        '"2+, topic page": follow-ups on a gold page of the conversation\'s first turn; "2+, other page":'
        " follow-ups after the conversation moved to another page.",
        "Paper (bge-m3 + reranker, GPT-4o): P@1 0.528 with LLM completion, 0.658 with human completion.",
        "",
        "## MRR@10",
        "",
        *table(questions, ranked, mrr_at_k, slices),
        "",
        "## Off-topic questions this tree answers",
        "",
        *(["| completed question | answer |", "|---|---|"] if answered else []),
        *[f"| {table_cell(o['completed'], 10**6)[-120:]} | {table_cell(o['answer'], 10**6)[:160]} |" for o in answered],
        *([] if answered else ["None: every off-topic question was answered out of scope."]),
        "",
        "## Conversations written for issue 16 (24, `benchmarks/completion_conversations.json`; no rule tuned on them)",
        "",
        *own_table(runs),
        "",
        "## What this tree's engine reports and retrieves (conversation 1, turns 1-4)",
        "",
        "| lang | turn | raw | completed_question | ranking used |",
        "|---|---:|---|---|---|",
        *[f"| {q.lang} | {q.turn} | {q.question} | {t['completed']} | {t['choice'] or '-'} |" for q, t in examples],
    ]
