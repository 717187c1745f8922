"""Issue 44: `ragonite index` on a disk that fills up, on a real file system (a small tmpfs).

The store lies on a tmpfs mounted for the test, the pages elsewhere; a ballast file leaves little
room. The real CLI runs in a subprocess (``crash_index.py none``: hashing embeddings, no model)
and must exit 2 with "disk full at <store>", no traceback; once the ballast is gone the next run
completes, ``ragonite check`` passes and the store equals a clean build. Mounting needs root:
without it the test is skipped, except under CI=true, where it must run (CI runs as root).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from llama_index_ragonite.cli import main
from llama_index_ragonite.errors import DiskFullError
from llama_index_ragonite.index.disk_full import disk_full_as_store_error
from llama_index_ragonite.index.store import EvidenceStore

SCRIPT = Path(__file__).with_name("crash_index.py")
TIMEOUT = 180
WORDS = "alpha beta gamma delta server release firmware laptop boot test matrix upgrade staging".split()


@contextmanager
def tmpfs(folder: Path, size_mb: int):
    """A tmpfs of ``size_mb`` MB mounted on ``folder``, unmounted afterwards."""
    folder.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        refused = done.returncode != 0 and (done.stderr.strip() or f"exit {done.returncode}")
    except OSError as err:  # no mount command
        refused = str(err)
    if refused:
        reason = f"cannot mount a tmpfs to fill ({refused}): a real full disk needs root"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI runs as root, so this test must run there")
        pytest.skip(reason)
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True, timeout=30).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


def leave_free(folder: Path, kilobytes: int) -> Path:
    """Fill ``folder``'s file system with a ballast file, leaving about ``kilobytes`` KB free."""
    ballast = folder / "ballast"
    free = shutil.disk_usage(folder).free - kilobytes * 1024
    with open(ballast, "wb") as file:
        os.posix_fallocate(file.fileno(), 0, max(free, 1))
    return ballast


def write_pages(folder: Path, count: int) -> Path:
    folder.mkdir()
    rng = random.Random(44)
    for i in range(count):
        paragraphs = "".join(
            f"<p>{' '.join(rng.choice(WORDS) for _ in range(50))} page{i} part{j}</p>" for j in range(4)
        )
        (folder / f"p{i:03d}.html").write_text(f"<title>Page {i}</title><h1>Notes</h1>{paragraphs}")
    return folder


def edit(source: Path) -> Path:
    (source / "p007.html").write_text("<title>Page 7</title><p>Rewritten: the staging server moved to rack 4.</p>")
    return source


def ragonite_index(source: Path, store: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "none", str(source), str(store)], capture_output=True, text=True, timeout=TIMEOUT
    )


def contents(store: Path, copy: Path) -> dict:
    """What a clean build determines, read from a copy (nothing of this process stays open on the tmpfs)."""
    sys.path.insert(0, str(SCRIPT.parent))
    from chromadb.api.client import SharedSystemClient
    from crash_index import HashingTermsEmbedding

    shutil.copytree(store, copy, ignore=shutil.ignore_patterns("ballast"))
    SharedSystemClient.clear_system_cache()
    opened = EvidenceStore(copy, embed_model=HashingTermsEmbedding())
    got = opened._open_vector_store().client.get(include=["documents", "metadatas"])
    return {
        "chroma": sorted(zip(got["ids"], got["documents"], (m["document_id"] for m in got["metadatas"]))),
        "lexical": sorted(opened.lexical.node_ids()),
        "latent": sorted(opened.latent.node_pages().items()),
        "pages": sorted(opened.manifest["pages"]),  # fingerprints hold the url: the folder differs
    }


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("diskfull")
    v1 = write_pages(root / "v1", 240)
    v2 = edit(shutil.copytree(v1, root / "v2"))
    clean = {}
    for name, source in (("v1", v1), ("v2", v2)):
        built = ragonite_index(source, root / f"clean-{name}")
        assert built.returncode == 0, built.stderr
        clean[name] = contents(root / f"clean-{name}", root / f"clean-{name}-copy")
    return root, {"v1": v1, "v2": v2}, clean


@pytest.mark.fault(
    "disk full during `ragonite index` (a real tmpfs: a new store, or an update with little room left)",
    "exit 2, 'disk full at <store>' and no traceback; after freeing space the next run repairs and completes,"
    " `ragonite check` passes and the store equals a clean build",
)
@pytest.mark.parametrize("case", ["new store", "update"])
def test_disk_full_during_index_then_free_space_and_resume(sources, tmp_path, case):
    root, pages, clean = sources
    with tmpfs(tmp_path / "disk", 40) as disk:
        store = disk / "store"
        source = pages["v2"]
        if case == "update":  # one page changes: a small Chroma write, then the BM25 files rewritten whole
            source = shutil.copytree(pages["v1"], tmp_path / "src")
            first = ragonite_index(source, store)
            assert first.returncode == 0, first.stderr
            edit(source)
        ballast = leave_free(disk, 1024 if case == "new store" else 400)

        full = ragonite_index(source, store)
        assert full.returncode == 2, full.stderr
        assert "disk full at" in full.stderr and str(store) in full.stderr, full.stderr
        assert "Traceback" not in full.stderr, full.stderr

        ballast.unlink()
        resumed = ragonite_index(source, store)
        assert resumed.returncode == 0, resumed.stderr
        assert "evidences indexed" in resumed.stdout
        after = contents(store, tmp_path / "copy")
    assert main(["check", "--store", str(tmp_path / "copy")]) == 0
    assert after == clean["v2"]


def test_a_chroma_error_without_errno_is_disk_full_only_when_the_disk_is(tmp_path):
    """Chroma's "Error in compaction" names no disk: the store's free space decides."""
    from chromadb.errors import InternalError

    def compaction_failure():
        raise InternalError("Error in compaction: Failed to apply logs to the metadata segment")

    with pytest.raises(InternalError):  # plenty of room: Chroma's own error, unchanged
        with disk_full_as_store_error(tmp_path):
            compaction_failure()
    with tmpfs(tmp_path / "disk", 2) as disk:
        leave_free(disk, 0)
        with pytest.raises(DiskFullError, match=r"disk full at .*store \(InternalError: Error in compaction.*KB free"):
            with disk_full_as_store_error(disk / "store"):
                compaction_failure()
