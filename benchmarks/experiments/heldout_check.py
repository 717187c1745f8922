"""Check of a held-out wiki set: pages, conversations, fields, quotas.

A held-out set (``--set wiki=heldout_wiki``, ``heldout_wiki_b`` or ``heldout_wiki_c``) was written to quotas
(turns, kinds, German share, flags) with accepted strings taken verbatim from its pages; this checks that it still is:
the counts are the report, each problem a line of it, and the exit status 1 when there is one.
heldout_wiki_c (issue 60) adds: pages in English and German (``<html lang>``) with a last-modified meta,
tables with merged cells and two header rows, numbers in several formats, several current/archived page pairs
and ``conflict`` turns between them, ``cross_language`` and ``follows_table`` flags, conversations of 3-6
turns, and two halves (``half``: 1 for tuning, 2 run once at the end) that each hold a fair share of every quota.
Standard library only (it reads the set, never the package).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from typing import List, Tuple

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
    # pairs: (older near-copy, current page); a conflict turn asks the current page's value that the older differs in
    "heldout_wiki_c": dict(pairs=[("electricity-tariffs-2025-archived.html", "electricity-tariffs-2026.html"),
                                  ("fleet-policy-2025-archived.html", "fleet-policy-2026.html"),
                                  ("fernwaerme-preise-2025-archiv.html", "fernwaerme-preise-2026.html"),
                                  ("preisblatt-sonderleistungen-2025-archiv.html",
                                   "preisblatt-sonderleistungen-2026.html")],
                           table=None, extended=True, min_pages=15, max_turns=6,
                           quotas=dict(turns=150, conversations=35, table_cell=50, table_cell_en=15, table_cell_de=15,
                                       conflict=12, unanswerable_or_off_topic=20, follows_table=15,
                                       cross_language=10, topic_switch=16, topic_switch_de=8, pronoun=15, ellipsis=10,
                                       list=8, who=10, year_specific=4, needs_context=0)),
}  # fmt: skip
# heldout_wiki_c only: its extra kind, turn fields and page requirements
EXTENDED_KINDS = {"conflict"}
EXTENDED_FLAGS = {"cross_language", "follows_table"}
CONFLICT_FIELDS = {"older_page", "older_answers"}
MIN_DE_PAGES = 0.40
MIN_MERGED_TABLES, MIN_TWO_ROW_HEADERS = 6, 6
NUMBER_FORMATS = {
    "thousands with comma (1,750)": r"\b\d{1,3},\d{3}\b",
    "German amount (1.750,00 €)": r"\b\d{1,3}\.\d{3},\d\d ?€",
    "thousands with space (2 900)": r"\b\d{1,3} \d{3}\b",
    "decimal percent (12.5%)": r"\b\d+\.\d+ ?%",
    "ISO date (2026-03-01)": r"\b20\d\d-\d\d-\d\d\b",
    "German date (01.03.2026)": r"\b\d\d\.\d\d\.20\d\d\b",
    "English date (March 1, 2026)": r"\b(January|February|March|April|May|June|July|August|September|October|"
    r"November|December) \d{1,2}, 20\d\d\b",
    "time (07:30)": r"\b\d\d:\d\d\b",
}
EXTENDED_SHOWN = ["conflict", "table_cell_en", "table_cell_de", "cross_language", "follows_table"]
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
    extended = config.get("extended", False)
    flags, kinds = FLAGS | (EXTENDED_FLAGS if extended else set()), KINDS | (EXTENDED_KINDS if extended else set())
    for flag in flags & set(t):
        if t[flag] is not True:
            problem(f"{flag} must be true when present")
    if not (isinstance(q, str) and q.strip() and isinstance(c, str) and c.strip()):
        problem("empty question or completed")
    for bad, what in ((kind not in kinds, f"kind {kind!r}"), (mode not in ("any", "all"), f"answer_mode {mode!r}"),
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
        if set(t) & flags:
            problem(f"{kind} turn carries flags")
    elif page not in text:
        problem(f"gold_page {page!r} is not a page")
        return False
    else:
        if not answers:
            problem("answerable turn without answers")
        problem_all(problem, [f"answer {a!r} not in {page}" for a in answers if norm(a) not in text[page]])
    if extended:
        check_extended(t, i, answers, text, config, problem)
    if kind == "list" and (mode != "all" or len(answers) < 2):
        problem("a list turn needs answer_mode 'all' and at least two answers")
    if t.get("year_specific"):
        sibling = {a: b for pair in pairs(config) for a, b in (pair, pair[::-1])}.get(page)
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


def pairs(config: dict) -> list:
    """The set's near-duplicate pairs: one ``pair`` (heldout_wiki, _b) or several ``pairs`` (older, current)."""
    return config["pairs"] if "pairs" in config else [config["pair"]]


def check_extended(t: dict, i: int, answers: list, text: dict, config: dict, problem) -> None:
    """heldout_wiki_c's turn rules: conflict turns against the older near-copy, cross_language, follows_table."""
    kind, page = t["kind"], t["gold_page"]
    if kind == "conflict":
        older = dict((current, old) for old, current in config["pairs"]).get(page)
        if older is None:
            problem("conflict turn whose gold_page is not the current page of a pair")
        elif t.get("older_page") != older:
            problem(f"conflict turn: older_page {t.get('older_page')!r}, expected {older!r}")
        else:
            olds = t.get("older_answers")
            if not isinstance(olds, list) or not olds or not all(isinstance(a, str) and a.strip() for a in olds):
                problem("conflict turn needs older_answers, a list of non-empty strings")
            else:
                problem_all(problem, [f"older answer {a!r} not in {older}" for a in olds if norm(a) not in text[older]])
            problem_all(problem, [f"answer {a!r} also occurs in {older}" for a in answers if norm(a) in text[older]])
    elif CONFLICT_FIELDS & set(t):
        problem("older_page/older_answers on a turn that is not a conflict turn")
    page_lang = config["page_lang"].get(page)
    if page_lang is not None and (page_lang != t["language"]) != bool(t.get("cross_language")):
        problem(f"cross_language must be set exactly when the {t['language']} question's page is {page_lang}")
    if t.get("follows_table"):
        if i == 0 or config["previous_kind"] not in ("table_cell", "conflict", "topic_switch"):
            problem("follows_table turn that does not follow a table-cell, conflict or topic-switch turn")
        if kind not in ("table_cell", "pronoun", "ellipsis"):
            problem(f"follows_table turn of kind {kind!r}")


def check_pages(markup: dict, text: dict, config: dict) -> Tuple[List[str], List[str]]:
    """heldout_wiki_c's page rules: language, last-modified, German share, table shapes, number formats, pairs."""
    problems, lang, modified = [], {}, {}
    for name, m in markup.items():
        found = re.search(r'<html lang="(en|de)">', m)
        stamp = re.search(r'<meta name="last-modified" content="(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ)">', m)
        problems += [f'page {name}: no <html lang="en|de">'] * (not found)
        problems += [f"page {name}: no last-modified meta"] * (not stamp)
        lang[name], modified[name] = found and found.group(1), stamp and stamp.group(1)
    config["page_lang"] = lang
    if len(markup) < config["min_pages"]:
        problems.append(f"{len(markup)} pages, fewer than {config['min_pages']}")
    de = sum(v == "de" for v in lang.values()) / max(len(lang), 1)
    problems += [f"German pages {de:.0%} < {MIN_DE_PAGES:.0%}"] * (de < MIN_DE_PAGES)
    tables = [tb for m in markup.values() for tb in re.findall(r"<table>(.*?)</table>", m, re.S)]
    merged = sum(bool(re.search(r"(rowspan|colspan)=", tb)) for tb in tables)
    two_row = sum(
        len(rows) >= 2 and all("<td" not in r and "<th" in r for r in rows[:2])
        for rows in (re.findall(r"<tr>(.*?)</tr>", tb, re.S) for tb in tables)
    )
    problems += [f"{merged} tables with merged cells, fewer than {MIN_MERGED_TABLES}"] * (merged < MIN_MERGED_TABLES)
    problems += [f"{two_row} tables with two header rows, fewer than {MIN_TWO_ROW_HEADERS}"] * (
        two_row < MIN_TWO_ROW_HEADERS
    )
    formats = {what: sum(len(re.findall(rx, t, re.I)) for t in text.values()) for what, rx in NUMBER_FORMATS.items()}
    problems += [f"no number in the format {what}" for what, n in formats.items() if not n]
    for old, current in config["pairs"]:
        if old in modified and current in modified and modified[old] and modified[current]:
            if not modified[old] < modified[current]:
                problems.append(f"older page {old} is not older than {current} by last-modified")
    lines = [
        f"Pages: en {sum(v == 'en' for v in lang.values())}, de {sum(v == 'de' for v in lang.values())} (German "
        f"{de:.1%}); tables with merged cells: {merged}, with two header rows: {two_row}; near-duplicate pairs: "
        f"{len(config['pairs'])}.",
        "Number formats (occurrences): " + "; ".join(f"{what} {n}" for what, n in formats.items()) + ".",
    ]
    return problems, lines


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
    for pair in pairs(config):
        problems += [f"near-duplicate pair missing: {' / '.join(pair)}"] * (not set(pair) <= set(markup))
    extended = config.get("extended", False)
    page_lines: List[str] = []
    if extended:
        config = dict(config)
        more, page_lines = check_pages(markup, text, config)
        problems += more
    halves = {1: Counter(), 2: Counter()}
    conversations = json.loads((folder / "conversations.json").read_text(encoding="utf-8"))
    count, seen = Counter(), set()
    for conv in conversations:
        cid, turns = conv.get("id"), conv.get("turns")
        if not isinstance(cid, str) or cid in seen:
            problems.append(f"conversation id {cid!r} missing or repeated")
        seen.add(cid)
        if set(conv) != {"id", "language", "turns"} | ({"half"} if extended else set()):
            problems.append(f"{cid}: fields {sorted(conv)}")
        if extended and conv.get("half") not in (1, 2):
            problems.append(f"{cid}: half {conv.get('half')!r}, not 1 or 2")
        max_turns = config.get("max_turns", 5)
        if not isinstance(turns, list) or not 3 <= len(turns) <= max_turns:
            problems.append(f"{cid}: needs 3-{max_turns} turns")
            continue
        langs = {t.get("language") for t in turns}
        expected = langs.pop() if len(langs) == 1 else "mixed"
        if conv.get("language") != expected:
            problems.append(f"{cid}: language {conv.get('language')!r}, turns say {expected!r}")
        count["conversations"] += 1
        half = halves.get(conv.get("half"), Counter())
        half["conversations"] += 1
        last_page, previous_kind = None, None
        for i, t in enumerate(turns):
            where = f"{cid} turn {i + 1}"
            allowed = TURN_FIELDS | FLAGS | ((EXTENDED_FLAGS | CONFLICT_FIELDS) if extended else set())
            missing, extra = TURN_FIELDS - set(t), set(t) - allowed
            if missing or extra:
                problems.append(f"{where}: missing {sorted(missing)}, unknown {sorted(extra)}")
                continue
            if extended:
                config["previous_kind"] = previous_kind
            previous_kind = t.get("kind")
            if not check_turn(
                t, i, last_page, markup, text, config, lambda msg, w=where: problems.append(f"{w}: {msg}")
            ):
                continue
            kind, lang = t["kind"], t["language"]
            keys = ["turns", f"lang_{lang}", kind, *(f for f in FLAGS if t.get(f))]
            keys += ["topic_switch_de"] * (kind == "topic_switch" and lang == "de")
            if kind in ("unanswerable", "off_topic"):
                keys += ["unanswerable_or_off_topic", f"{kind}_{lang}"] + ["unanswerable_or_off_topic_at_start"] * (
                    i == 0
                )
            if extended:
                keys += [f for f in EXTENDED_FLAGS if t.get(f)] + [f"table_cell_{lang}"] * (kind == "table_cell")
            count.update(keys)
            half.update(keys)
            last_page = t["gold_page"] if t["gold_page"] is not None else last_page
    used = {t["gold_page"] for conv in conversations for t in conv.get("turns", []) if isinstance(t, dict)}
    problems += [f"page {name} answers no turn" for name in text if name not in used]
    quotas = {**QUOTAS, **config["quotas"]}
    problems += [f"quota {k}: {count[k]} < {v}" for k, v in quotas.items() if count[k] < v]
    if extended:  # each half holds at least 35% of every quota's turns (they were written together)
        problems += [
            f"quota {k} split unevenly: half 1 {halves[1][k]}, half 2 {halves[2][k]}"
            for k, v in quotas.items()
            if v and min(halves[1][k], halves[2][k]) < 0.35 * count[k]
        ]
    de_share = count["lang_de"] / count["turns"] if count["turns"] else 0.0
    problems += [f"German share {de_share:.0%} < {MIN_DE_SHARE:.0%}"] * (de_share < MIN_DE_SHARE)
    problems += [
        f"no {k} turn" for k in ("unanswerable_en", "unanswerable_de", "off_topic_en", "off_topic_de") if not count[k]
    ]
    shown = SHOWN + (EXTENDED_SHOWN if extended else [])
    lines = [
        f"Set: `benchmarks/{wiki}`. Pages: {len(text)}, tables: {tables}; conversations: {count['conversations']}, "
        f"turns: {count['turns']}; turns by language: en {count['lang_en']}, de {count['lang_de']} (German "
        f"{de_share:.1%}); conversations by language: {dict(Counter(c.get('language') for c in conversations))}.",
        *page_lines,
        "",
        *(
            ["| count | required | turns | half 1 | half 2 |", "|---|---:|---:|---:|---:|"]
            if extended
            else ["| count | turns |", "|---|---:|"]
        ),
        *[
            (
                f"| {key} | {quotas.get(key, '')} | {count[key]} | {halves[1][key]} | {halves[2][key]} |"
                if extended
                else f"| {key} | {count[key]} |"
            )
            for key in ["conversations", "turns", "lang_en", "lang_de"] * extended + shown
        ],
        "",
        f"{len(problems)} problem(s)" + (":" if problems else "; OK."),
        *[f"- {p}" for p in problems],
    ]
    return lines, int(bool(problems))
