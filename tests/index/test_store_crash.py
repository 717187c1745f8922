"""Kill a real `ragonite index` with SIGKILL at several points, edit pages, resume: the store equals a clean build.

Issue 17, case 1: a run killed after Chroma had written a page but before the manifest
recorded it left, after an edit and a re-index, the page's old evidences in Chroma (246
evidences in Chroma against 222 in BM25). Each run here is a subprocess (crash_index.py)
of the real CLI, bounded in time, with no network.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import MetadataMode

from llama_index_ragonite.errors import StoreInterruptedError
from llama_index_ragonite.index.store import EvidenceStore

SCRIPT = Path(__file__).with_name("crash_index.py")
TIMEOUT = 180

TABLE = "<table><tr><th>Laptop</th><th>Result</th></tr><tr><td>Dell Latitude</td><td>passed</td></tr>{rows}</table>"
V1 = {
    "alpha": "<title>Alpha</title><h1>Setup</h1><p>Alpha boots from USB.</p><ul><li>one</li><li>two</li></ul>",
    "beta": "<title>Beta</title><h1>Tests</h1><p>Beta passed on all laptops.</p>"
    + TABLE.format(rows="<tr><td>HP EliteBook</td><td>failed</td></tr>"),
    "gamma": "<title>Gamma</title><p>Gamma is retired.</p>",
}
V2 = {  # the killed run: beta edited, gamma removed, delta added
    "alpha": V1["alpha"],
    "beta": "<title>Beta</title><h1>Tests</h1><p>Beta failed on one laptop.</p>" + TABLE.format(rows=""),
    "delta": "<title>Delta</title><h1>Matrix</h1><p>Delta ships in May.</p>"
    + TABLE.format(rows="<tr><td>Lenovo T14</td><td>passed</td></tr><tr><td>Acer Swift</td><td>blocked</td></tr>"),
}
V3 = {  # the resumed run: the pages being written when the run died are edited again
    "alpha": V1["alpha"],
    "beta": "<title>Beta</title><h1>Tests</h1><p>Beta is being retested next week.</p>",
    "delta": "<title>Delta</title><h1>Matrix</h1><p>Delta ships in June, the table moved to Beta.</p>",
}


def write_pages(folder: Path, pages: dict) -> Path:
    folder.mkdir(parents=True)
    for name, html in pages.items():
        (folder / f"{name}.html").write_text(html, encoding="utf-8")
    return folder


def ragonite_index(point: str, source: Path, store: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), point, str(source), str(store), *flags],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def open_store(path: Path) -> EvidenceStore:
    sys.path.insert(0, str(SCRIPT.parent))
    from crash_index import HashingTermsEmbedding

    return EvidenceStore(path, embed_model=HashingTermsEmbedding())


def contents(path: Path) -> dict:
    """Everything a clean build determines: ids, texts and pages in every index, vectors, manifest pages."""
    from chromadb.api.client import SharedSystemClient

    # This process opened the store before the resumed run rewrote it: Chroma caches one client
    # per path, whose in-memory HNSW state would be stale (a reader's concern, issue 17 item 5).
    SharedSystemClient.clear_system_cache()
    store = open_store(path)
    got = store._open_vector_store().client.get(include=["documents", "metadatas", "embeddings"])
    chroma = {
        node_id: (text, meta["document_id"], tuple(np.round(vector, 6)))
        for node_id, text, meta, vector in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])
    }
    lexical = {
        node_id: (node.ref_doc_id, node.get_content(MetadataMode.LLM))
        for node_id in store.lexical.node_ids()
        for node in [store.lexical.get_node(node_id)]
    }
    latent = {
        node_id: (page, tuple(store.latent.vector(node_id)[0]), tuple(store.latent.vector(node_id)[1]))
        for node_id, page in store.latent.node_pages().items()
    }
    return {"chroma": chroma, "lexical": lexical, "latent": latent, "pages": store.manifest["pages"]}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("crash")
    sources = {name: write_pages(root / name, pages) for name, pages in (("v1", V1), ("v2", V2), ("v3", V3))}
    for name, source in (("base", sources["v1"]), ("clean", sources["v3"])):
        done = ragonite_index("none", source, root / name)
        assert done.returncode == 0, done.stderr
    return root, sources


@pytest.mark.fault(
    "`ragonite index` killed with SIGKILL (embedding, vector-store, lexical or manifest write), pages edited, resumed",
    "readers get StoreInterruptedError until the resume; the resumed store equals a clean build (same ids, texts, BM25, latent terms)",
)
@pytest.mark.parametrize("point", ["embed", "vector-store", "lexical", "manifest"])
def test_killed_index_then_edit_and_resume_equals_a_clean_build(builds, point):
    root, sources = builds
    store = root / f"store-{point}"
    shutil.copytree(root / "base", store)

    killed = ragonite_index(point, sources["v2"], store)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    # A reader of the interrupted store gets a clear error, or (killed before any write) the old store.
    try:
        reader = open_store(store)
        assert reader.vector_store is not None  # opening runs the reader's check
        assert reader.check().ok and reader.page_ids() == sorted(f"{name}.html" for name in V1)
    except StoreInterruptedError as err:
        assert point != "embed" and "ragonite index" in str(err)

    resumed = ragonite_index("none", sources["v3"], store)
    assert resumed.returncode == 0, resumed.stderr
    assert "evidences indexed" in resumed.stdout

    clean, after = contents(root / "clean"), contents(store)
    for part in ("chroma", "lexical", "latent", "pages"):
        assert after[part] == clean[part], part
    assert len(after["latent"]) == len(after["chroma"]) > 0
    assert open_store(store).check().ok
    assert not any("HP EliteBook" in text or "Acer Swift" in text for text, *_ in after["chroma"].values())


@pytest.mark.fault(
    "a store ingesting with a user's own TransformComponent killed (vector-store or manifest write), pages edited, resumed",
    "the resumed store equals a clean build with that transformation: its metadata on every evidence, nothing stale",
)
@pytest.mark.parametrize("point", ["vector-store", "manifest"])
def test_a_user_transformation_survives_kill_edit_and_resume(builds, point):
    root, sources = builds
    clean, store = root / f"clean-transform-{point}", root / f"store-transform-{point}"
    assert ragonite_index("none", sources["v3"], clean, "--transform").returncode == 0
    assert ragonite_index("none", sources["v1"], store, "--transform").returncode == 0
    killed = ragonite_index(point, sources["v2"], store, "--transform")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = ragonite_index("none", sources["v3"], store, "--transform")
    assert resumed.returncode == 0 and "evidences indexed" in resumed.stdout, resumed.stderr

    after = contents(store)
    assert after == contents(clean)
    assert open_store(store).check().ok
    reader = open_store(store)
    teams = {reader.lexical.get_node(node_id).metadata.get("team") for node_id in after["lexical"]}
    assert teams == {"platform", "release"}  # the transformation ran on every evidence
    assert all(text.split("\n\n")[0].endswith(("platform", "release")) for _, text in after["lexical"].values())
    manifest = reader.manifest
    assert manifest["transformations"] == ["crash_index.TeamLabel"] or manifest["transformations"][0].endswith(
        "TeamLabel"
    )
    assert contents(root / "clean")["pages"] != after["pages"]  # its settings are part of each page's fingerprint
