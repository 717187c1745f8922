"""Questions over attachments (issue 61's judge set ``benchmarks/attachments_wiki``): the gold attachment first,
and the offline answer quoting it.

The set's generator writes its wiki (HTML pages and attachments: PDF, Word, Excel, CSV, PowerPoint, Markdown,
text) into a temporary folder (``generate.py OUT``, run as a script); this checkout indexes the pages and the
attachments (``load_pages``, the ``[attachments]`` readers) into a fresh store with the embedded default and
asks each question of ``half`` (1, 2 or 0 for both) alone:

- P@1: the top hit is an evidence of the gold attachment (``attachment`` field); also where the gold names a
  location (a PDF page, a sheet by number, a slide), the top hit on it;
- answered right: the offline chat engine's answer holds the gold answer string and cites an evidence of the
  gold attachment; refused: the out-of-scope answer.

There is no baseline side: a package before issue 61 reads no attachment (its P@1 here is 0 by construction).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from harness import CHECKOUT

OPTIONS = {"half": 0}
SET = CHECKOUT / "benchmarks" / "attachments_wiki"


def _records(out: Path, questions: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    from llama_index_ragonite import EvidenceStore, RagoniteChatEngine, load_pages
    from llama_index_ragonite.prompts import OUT_OF_SCOPE

    store = out / "store"
    docs = load_pages(out / "pages") + load_pages(out / "attachments")
    EvidenceStore(store).ingest(docs, show_progress=False)
    engine = RagoniteChatEngine.from_store(store)
    records = []
    for q in questions:
        engine.reset()
        response = engine.chat(q["question"])
        hits = response.source_nodes
        top = hits[0].node.metadata if hits else {}
        cited = [hits[i - 1].node.metadata for i in response.turn.cited if 0 < i <= len(hits)]
        located = q["gold_location"] if isinstance(q["gold_location"], int) else None
        records.append(
            {
                **q,
                "p1": top.get("attachment") == q["gold_attachment"],
                "p1_location": top.get("attachment") == q["gold_attachment"]
                and (located is None or top.get("location") == located),
                "right": q["answer"] in response.response
                and any(m.get("attachment") == q["gold_attachment"] for m in cited),
                "refused": response.response.strip() == OUT_OF_SCOPE,
                "answer_text": response.response,
                "top": top.get("title", ""),
            }
        )
    return records


def _share(records: List[Dict[str, Any]], key: str) -> str:
    return f"{sum(r[key] for r in records) / len(records):.3f} ({sum(r[key] for r in records)} of {len(records)})"


def run(bench) -> List[str]:
    half = int(bench.opts["half"])
    questions = [q for q in json.loads((SET / "questions.json").read_text()) if not half or q["half"] == half]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attachments-wiki-") as tmp:
        out = Path(tmp) / "wiki"
        subprocess.run([sys.executable, str(SET / "generate.py"), str(out)], check=True, capture_output=True)
        records = _records(out, questions)
    seconds = time.perf_counter() - started
    groups = {
        "all": records,
        **{f"language {lang}": [r for r in records if r["language"] == lang] for lang in ("en", "de")},
        **{f"kind {kind}": [r for r in records if r["answer_kind"] == kind] for kind in ("cell", "sentence")},
        **{f"half {h}": [r for r in records if r["half"] == h] for h in (1, 2)},
    }
    lines = [
        f"Set: [benchmarks/attachments_wiki](../attachments_wiki/README.md), "
        f"{'both halves' if not half else f'half {half}'}: {len(records)} questions over "
        f"{len({r['gold_attachment'] for r in records})} attachments; offline default (embedded model, extractive "
        f"answerer), each question asked alone. Wall time {seconds:.0f} s (generation and indexing included).",
        "",
        "| questions | P@1 gold attachment (goal ≥ 0.85) | ... and its page, sheet or slide | answered right | refused |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, group in groups.items():
        if group:
            lines.append(
                f"| {label} | {_share(group, 'p1')} | {_share(group, 'p1_location')} | {_share(group, 'right')} | "
                f"{_share(group, 'refused')} |"
            )
    misses = [r for r in records if not r["p1"]]
    if misses:
        lines += ["", "Questions whose top hit is another file:", ""]
        lines += [f"- {r['id']} ({r['language']}): {r['question']} → {r['top']}" for r in misses]
    return lines
