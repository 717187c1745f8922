"""Checks the second held-out wiki set (heldout_wiki_b): pages, conversations, fields, quotas.

Run from anywhere:  python benchmarks/heldout_wiki_b/check.py
Prints the counts; exits 1 if anything is wrong.
Standard library only.
"""

import html
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGES = HERE / "pages"
CONVERSATIONS = HERE / "conversations.json"

KINDS = {"first", "pronoun", "ellipsis", "topic_switch", "table_cell", "list", "who", "unanswerable", "off_topic"}
TURN_FIELDS = {"question", "completed", "gold_page", "answers", "answer_mode", "kind", "language"}
FLAGS = {"not_first_sentence", "needs_context", "year_specific"}
# the near-duplicate pair: a year-specific turn's answers must not occur in the sibling
SIBLING = {
    "on-call-policy-2025.html": "on-call-policy-2026.html",
    "on-call-policy-2026.html": "on-call-policy-2025.html",
}
# the table whose rows depend on the text just above it
CONTEXT_TABLE_PAGE = "shift-allowances.html"

QUOTAS = {
    "turns": 150,
    "conversations": 40,
    "topic_switch": 24,
    "topic_switch_de": 12,
    "pronoun": 15,
    "ellipsis": 10,
    "table_cell": 15,
    "list": 10,
    "who": 12,
    "unanswerable_or_off_topic": 24,
    "not_first_sentence": 6,
    "year_specific": 4,
    "needs_context": 3,
}
MIN_DE_SHARE = 0.40

problems = []


def problem(msg):
    problems.append(msg)


def norm(text):
    return re.sub(r"\s+", " ", text).strip().lower()


def visible_text(markup):
    """The text a reader sees in the body: tags stripped, entities decoded."""
    body = re.search(r"<body[^>]*>(.*)</body>", markup, re.S | re.I)
    markup = body.group(1) if body else markup
    return norm(html.unescape(re.sub(r"<[^>]+>", " ", markup)))


def paragraphs(markup):
    return [norm(html.unescape(re.sub(r"<[^>]+>", " ", p))) for p in re.findall(r"<p>(.*?)</p>", markup, re.S | re.I)]


def first_sentence(par):
    """Up to the first full stop that ends a sentence (not 'Dr.', 'Prof.', 'e.g.')."""
    for m in re.finditer(r"[.!?](\s|$)", par):
        if not re.search(r"\b(dr|prof|e\.g|i\.e|no|st)\.$", par[: m.start() + 1]):
            return par[: m.end()]
    return par


# ---------------------------------------------------------------- pages
page_markup, page_text = {}, {}
for path in sorted(PAGES.glob("*.html")):
    markup = path.read_text(encoding="utf-8")
    page_markup[path.name] = markup
    page_text[path.name] = visible_text(markup)
    words = len(page_text[path.name].split())
    if not 300 <= words <= 900:
        problem(f"page {path.name}: {words} words, not 300-900")
    for tag in ("title", "h1", "h2"):
        if not re.search(rf"<{tag}>.+?</{tag}>", markup, re.S):
            problem(f"page {path.name}: no <{tag}>")
n_tables = sum(m.count("<table>") for m in page_markup.values())
if len(page_markup) < 12:
    problem(f"{len(page_markup)} pages, fewer than 12")
if n_tables < 5:
    problem(f"{n_tables} tables, fewer than 5")
for a, b in SIBLING.items():
    if a not in page_markup or b not in page_markup:
        problem(f"near-duplicate pair missing: {a} / {b}")

# ---------------------------------------------------------------- conversations
try:
    conversations = json.loads(CONVERSATIONS.read_text(encoding="utf-8"))
except (OSError, ValueError) as e:
    print(f"cannot load {CONVERSATIONS}: {e}")
    sys.exit(1)
if not isinstance(conversations, list):
    print("conversations.json is not a JSON list")
    sys.exit(1)

count = Counter()
seen_ids = set()
for conv in conversations:
    cid = conv.get("id")
    if not isinstance(cid, str) or cid in seen_ids:
        problem(f"conversation id {cid!r} missing or repeated")
    seen_ids.add(cid)
    if set(conv) != {"id", "language", "turns"}:
        problem(f"{cid}: fields {sorted(conv)}")
    turns = conv.get("turns")
    if not isinstance(turns, list) or not 3 <= len(turns) <= 5:
        problem(f"{cid}: needs 3-5 turns")
        continue
    langs = {t.get("language") for t in turns}
    expected = langs.pop() if len(langs) == 1 else "mixed"
    if conv.get("language") != expected:
        problem(f"{cid}: language {conv.get('language')!r}, turns say {expected!r}")
    count["conversations"] += 1
    last_page = None
    for i, t in enumerate(turns):
        where = f"{cid} turn {i + 1}"
        missing = TURN_FIELDS - set(t)
        extra = set(t) - TURN_FIELDS - FLAGS
        if missing or extra:
            problem(f"{where}: missing {sorted(missing)}, unknown {sorted(extra)}")
            continue
        for flag in FLAGS & set(t):
            if t[flag] is not True:
                problem(f"{where}: {flag} must be true when present")
        q, c, page, answers = t["question"], t["completed"], t["gold_page"], t["answers"]
        kind, mode, lang = t["kind"], t["answer_mode"], t["language"]
        if not (isinstance(q, str) and q.strip() and isinstance(c, str) and c.strip()):
            problem(f"{where}: empty question or completed")
        if kind not in KINDS:
            problem(f"{where}: kind {kind!r}")
        if mode not in ("any", "all"):
            problem(f"{where}: answer_mode {mode!r}")
        if lang not in ("en", "de"):
            problem(f"{where}: language {lang!r}")
        if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
            problem(f"{where}: answers must be a list of non-empty strings")
            answers = []
        if i == 0 and kind in ("pronoun", "ellipsis", "topic_switch"):
            problem(f"{where}: an opening turn cannot be {kind}")
        if i > 0 and kind == "first":
            problem(f"{where}: kind 'first' on a later turn")
        if i == 0 and q != c:
            problem(f"{where}: an opening turn is self-contained, completed should equal question")
        if kind == "topic_switch":
            if q != c:
                problem(f"{where}: topic switch whose completed differs from question")
            if page is None or page == last_page:
                problem(f"{where}: topic switch must land on another page than the previous answer")
        if kind in ("unanswerable", "off_topic"):
            if page is not None or answers:
                problem(f"{where}: {kind} needs gold_page null and answers []")
            if set(t) & FLAGS:
                problem(f"{where}: {kind} turn carries flags")
        else:
            if page not in page_text:
                problem(f"{where}: gold_page {page!r} is not a page")
                continue
            if not answers:
                problem(f"{where}: answerable turn without answers")
            for a in answers:
                if norm(a) not in page_text[page]:
                    problem(f"{where}: answer {a!r} not in {page}")
        if kind == "list" and (mode != "all" or len(answers) < 2):
            problem(f"{where}: a list turn needs answer_mode 'all' and at least two answers")
        if t.get("year_specific"):
            sib = SIBLING.get(page)
            if sib is None:
                problem(f"{where}: year_specific turn not on a versioned page")
            else:
                year = re.search(r"20\d\d", page).group(0)
                if year not in c:
                    problem(f"{where}: year_specific turn whose completed does not name {year}")
                for a in answers:
                    if norm(a) in page_text[sib]:
                        problem(f"{where}: answer {a!r} also occurs in {sib}")
        if t.get("needs_context") and page != CONTEXT_TABLE_PAGE:
            problem(f"{where}: needs_context turn not on {CONTEXT_TABLE_PAGE}")
        if t.get("not_first_sentence") and page in page_markup:
            pars = paragraphs(page_markup[page])

            def later_in_paragraph(a, pars=pars):
                return any(norm(a) in p[len(first_sentence(p)) :] for p in pars)

            test = all if mode == "all" else any
            if not test(later_in_paragraph(a) for a in answers):
                problem(f"{where}: not_first_sentence, but the answer is not in a later sentence of a paragraph")
        # counts
        count["turns"] += 1
        count[f"lang_{lang}"] += 1
        count[kind] += 1
        if kind == "topic_switch" and lang == "de":
            count["topic_switch_de"] += 1
        if kind in ("unanswerable", "off_topic"):
            count["unanswerable_or_off_topic"] += 1
            count[f"{kind}_{lang}"] += 1
            if i == 0:
                count["unanswerable_or_off_topic_at_start"] += 1
        for flag in FLAGS:
            if t.get(flag):
                count[flag] += 1
        if page is not None:
            last_page = page

used = {t["gold_page"] for conv in conversations for t in conv.get("turns", []) if isinstance(t, dict)}
for name in page_text:
    if name not in used:
        problem(f"page {name} answers no turn")

# ---------------------------------------------------------------- quotas
for key, minimum in QUOTAS.items():
    if count[key] < minimum:
        problem(f"quota {key}: {count[key]} < {minimum}")
de_share = count["lang_de"] / count["turns"] if count["turns"] else 0.0
if de_share < MIN_DE_SHARE:
    problem(f"German share {de_share:.0%} < {MIN_DE_SHARE:.0%}")
for k in ("unanswerable_en", "unanswerable_de", "off_topic_en", "off_topic_de"):
    if count[k] == 0:
        problem(f"no {k} turn")

print(f"pages: {len(page_text)}, tables: {n_tables}")
print(f"conversations: {count['conversations']}, turns: {count['turns']}")
print(f"turns by language: en {count['lang_en']}, de {count['lang_de']} (German {de_share:.1%})")
print("conversations by language:", dict(Counter(c.get("language") for c in conversations)))
for key in (
    "first",
    "pronoun",
    "ellipsis",
    "topic_switch",
    "topic_switch_de",
    "table_cell",
    "list",
    "who",
    "unanswerable",
    "off_topic",
    "unanswerable_or_off_topic",
    "unanswerable_or_off_topic_at_start",
    "unanswerable_en",
    "unanswerable_de",
    "off_topic_en",
    "off_topic_de",
    "not_first_sentence",
    "year_specific",
    "needs_context",
):
    print(f"  {key}: {count[key]}")
if problems:
    print(f"\n{len(problems)} problem(s):")
    for p in problems:
        print("  -", p)
    sys.exit(1)
print("OK")
