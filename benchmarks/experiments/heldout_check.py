"""Check of a held-out wiki set: pages, conversations, fields, quotas.

A held-out set (``--set wiki=heldout_wiki`` or ``heldout_wiki_b``) was written to quotas (turns, kinds,
German share, flags) with accepted strings taken verbatim from its pages; this checks that it still is:
the counts are the report, each problem a line of it, and the exit status 1 when there is one.
Standard library only (it reads the set, never the package).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from typing import List

from harness import CHECKOUT

OPTIONS = {"wiki": "heldout_wiki"}
KINDS = {"first", "pronoun", "ellipsis", "topic_switch", "table_cell", "list", "who", "unanswerable", "off_topic"}
TURN_FIELDS = {"question", "completed", "gold_page", "answers", "answer_mode", "kind", "language"}
FLAGS = {"not_first_sentence", "needs_context", "year_specific"}
QUOTAS = dict(pronoun=15, ellipsis=10, table_cell=15, list=10, who=12, not_first_sentence=6, year_specific=4)
QUOTAS["needs_context"] = 3
# Per set: the near-duplicate pair (a year-specific turn's answers must not occur in the sibling), the table
# whose rows depend on the text just above it, and the quotas that differ.
SETS = {
    "heldout_wiki": dict(pair=("travel-policy-2025.html", "travel-policy-2026.html"), table="hotel-rates.html",
                         quotas=dict(turns=130, conversations=35, topic_switch=22, topic_switch_de=11,
                                     unanswerable_or_off_topic=22)),
    "heldout_wiki_b": dict(pair=("on-call-policy-2025.html", "on-call-policy-2026.html"),
                           table="shift-allowances.html",
                           quotas=dict(turns=150, conversations=40, topic_switch=24, topic_switch_de=12,
                                       unanswerable_or_off_topic=24)),
}  # fmt: skip
MIN_DE_SHARE = 0.40
SHOWN = ["first", "pronoun", "ellipsis", "topic_switch", "topic_switch_de", "table_cell", "list", "who",
         "unanswerable", "off_topic", "unanswerable_or_off_topic", "unanswerable_or_off_topic_at_start",
         "unanswerable_en", "unanswerable_de", "off_topic_en", "off_topic_de", "not_first_sentence", "year_specific",
         "needs_context"]  # fmt: skip


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def visible_text(markup: str) -> str:
    """The text a reader sees in the body: tags stripped, entities decoded."""
    body = re.search(r"<body[^>]*>(.*)</body>", markup, re.S | re.I)
    return norm(html.unescape(re.sub(r"<[^>]+>", " ", body.group(1) if body else markup)))


def first_sentence(par: str) -> str:
    """Up to the first full stop that ends a sentence (not 'Dr.', 'Prof.', 'e.g.')."""
    for m in re.finditer(r"[.!?](\s|$)", par):
        if not re.search(r"\b(dr|prof|e\.g|i\.e|no|st)\.$", par[: m.start() + 1]):
            return par[: m.end()]
    return par


def later_in_paragraph(answer: str, markup: str) -> bool:
    pars = [norm(html.unescape(re.sub(r"<[^>]+>", " ", p))) for p in re.findall(r"<p>(.*?)</p>", markup, re.S | re.I)]
    return any(norm(answer) in p[len(first_sentence(p)) :] for p in pars)


def check_turn(t: dict, i: int, last_page, markup: dict, text: dict, config: dict, problem) -> bool:
    """The rules one turn must keep (``i``: its place in the conversation); False: not counted (no such page)."""
    q, c, page, answers = t["question"], t["completed"], t["gold_page"], t["answers"]
    kind, mode, lang = t["kind"], t["answer_mode"], t["language"]
    for flag in FLAGS & set(t):
        if t[flag] is not True:
            problem(f"{flag} must be true when present")
    if not (isinstance(q, str) and q.strip() and isinstance(c, str) and c.strip()):
        problem("empty question or completed")
    for bad, what in ((kind not in KINDS, f"kind {kind!r}"), (mode not in ("any", "all"), f"answer_mode {mode!r}"),
                      (lang not in ("en", "de"), f"language {lang!r}")):  # fmt: skip
        if bad:
            problem(what)
    if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
        problem("answers must be a list of non-empty strings")
        answers = []
    if i == 0 and kind in ("pronoun", "ellipsis", "topic_switch"):
        problem(f"an opening turn cannot be {kind}")
    if i > 0 and kind == "first":
        problem("kind 'first' on a later turn")
    if i == 0 and q != c:
        problem("an opening turn is self-contained, completed should equal question")
    if kind == "topic_switch" and q != c:
        problem("topic switch whose completed differs from question")
    if kind == "topic_switch" and (page is None or page == last_page):
        problem("topic switch must land on another page than the previous answer")
    if kind in ("unanswerable", "off_topic"):
        if page is not None or answers:
            problem(f"{kind} needs gold_page null and answers []")
        if set(t) & FLAGS:
            problem(f"{kind} turn carries flags")
    elif page not in text:
        problem(f"gold_page {page!r} is not a page")
        return False
    else:
        if not answers:
            problem("answerable turn without answers")
        problem_all(problem, [f"answer {a!r} not in {page}" for a in answers if norm(a) not in text[page]])
    if kind == "list" and (mode != "all" or len(answers) < 2):
        problem("a list turn needs answer_mode 'all' and at least two answers")
    if t.get("year_specific"):
        sibling = dict([config["pair"], config["pair"][::-1]]).get(page)
        if sibling is None:
            problem("year_specific turn not on a versioned page")
        else:
            year = re.search(r"20\d\d", page).group(0)
            if year not in c:
                problem(f"year_specific turn whose completed does not name {year}")
            problem_all(
                problem, [f"answer {a!r} also occurs in {sibling}" for a in answers if norm(a) in text[sibling]]
            )
    if t.get("needs_context") and page != config["table"]:
        problem(f"needs_context turn not on {config['table']}")
    if t.get("not_first_sentence") and page in markup:
        if not (all if mode == "all" else any)(later_in_paragraph(a, markup[page]) for a in answers):
            problem("not_first_sentence, but the answer is not in a later sentence of a paragraph")
    return True


def problem_all(problem, messages: List[str]) -> None:
    for message in messages:
        problem(message)


def run(bench):
    wiki = bench.opts["wiki"]
    folder = CHECKOUT / "benchmarks" / wiki  # or an absolute path to a copy
    config = SETS[folder.name]
    problems: List[str] = []
    markup = {p.name: p.read_text(encoding="utf-8") for p in sorted((folder / "pages").glob("*.html"))}
    text = {name: visible_text(m) for name, m in markup.items()}
    for name, m in markup.items():
        if not 300 <= len(text[name].split()) <= 900:
            problems.append(f"page {name}: {len(text[name].split())} words, not 300-900")
        problems += [
            f"page {name}: no <{tag}>"
            for tag in ("title", "h1", "h2")
            if not re.search(rf"<{tag}>.+?</{tag}>", m, re.S)
        ]
    tables = sum(m.count("<table>") for m in markup.values())
    problems += [f"{len(markup)} pages, fewer than 12"] * (len(markup) < 12) + [f"{tables} tables, fewer than 5"] * (
        tables < 5
    )
    problems += [f"near-duplicate pair missing: {' / '.join(config['pair'])}"] * (
        not set(config["pair"]) <= set(markup)
    )
    conversations = json.loads((folder / "conversations.json").read_text(encoding="utf-8"))
    count, seen = Counter(), set()
    for conv in conversations:
        cid, turns = conv.get("id"), conv.get("turns")
        if not isinstance(cid, str) or cid in seen:
            problems.append(f"conversation id {cid!r} missing or repeated")
        seen.add(cid)
        if set(conv) != {"id", "language", "turns"}:
            problems.append(f"{cid}: fields {sorted(conv)}")
        if not isinstance(turns, list) or not 3 <= len(turns) <= 5:
            problems.append(f"{cid}: needs 3-5 turns")
            continue
        langs = {t.get("language") for t in turns}
        expected = langs.pop() if len(langs) == 1 else "mixed"
        if conv.get("language") != expected:
            problems.append(f"{cid}: language {conv.get('language')!r}, turns say {expected!r}")
        count["conversations"] += 1
        last_page = None
        for i, t in enumerate(turns):
            where = f"{cid} turn {i + 1}"
            missing, extra = TURN_FIELDS - set(t), set(t) - TURN_FIELDS - FLAGS
            if missing or extra:
                problems.append(f"{where}: missing {sorted(missing)}, unknown {sorted(extra)}")
                continue
            if not check_turn(
                t, i, last_page, markup, text, config, lambda msg, w=where: problems.append(f"{w}: {msg}")
            ):
                continue
            kind, lang = t["kind"], t["language"]
            count.update(["turns", f"lang_{lang}", kind, *(f for f in FLAGS if t.get(f))])
            count["topic_switch_de"] += kind == "topic_switch" and lang == "de"
            if kind in ("unanswerable", "off_topic"):
                count.update(["unanswerable_or_off_topic", f"{kind}_{lang}"])
                count["unanswerable_or_off_topic_at_start"] += i == 0
            last_page = t["gold_page"] if t["gold_page"] is not None else last_page
    used = {t["gold_page"] for conv in conversations for t in conv.get("turns", []) if isinstance(t, dict)}
    problems += [f"page {name} answers no turn" for name in text if name not in used]
    problems += [f"quota {k}: {count[k]} < {v}" for k, v in {**QUOTAS, **config["quotas"]}.items() if count[k] < v]
    de_share = count["lang_de"] / count["turns"] if count["turns"] else 0.0
    problems += [f"German share {de_share:.0%} < {MIN_DE_SHARE:.0%}"] * (de_share < MIN_DE_SHARE)
    problems += [
        f"no {k} turn" for k in ("unanswerable_en", "unanswerable_de", "off_topic_en", "off_topic_de") if not count[k]
    ]
    lines = [
        f"Set: `benchmarks/{wiki}`. Pages: {len(text)}, tables: {tables}; conversations: {count['conversations']}, "
        f"turns: {count['turns']}; turns by language: en {count['lang_en']}, de {count['lang_de']} (German "
        f"{de_share:.1%}); conversations by language: {dict(Counter(c.get('language') for c in conversations))}.",
        "",
        "| count | turns |",
        "|---|---:|",
        *[f"| {key} | {count[key]} |" for key in SHOWN],
        "",
        f"{len(problems)} problem(s)" + (":" if problems else "; OK."),
        *[f"- {p}" for p in problems],
    ]
    return lines, int(bool(problems))
