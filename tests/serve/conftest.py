"""The real ``ragonite serve`` process on a free loopback port, over stores built from the sample wiki."""

from __future__ import annotations

import shutil

import pytest
from fakes import REPO

SAMPLE = REPO / "examples" / "sample_wiki"


@pytest.fixture(scope="session")
def wiki_stores(tmp_path_factory) -> dict:
    """Two domains: the whole sample wiki, and the onboarding page alone."""
    from llama_index_ragonite.cli import main

    root = tmp_path_factory.mktemp("serve-stores")
    onboarding = root / "onboarding-pages"
    onboarding.mkdir()
    shutil.copy(SAMPLE / "onboarding.html", onboarding)
    stores = {"wiki": root / "wiki", "onboarding": root / "onboarding"}
    for source, store in ((SAMPLE, stores["wiki"]), (onboarding, stores["onboarding"])):
        assert main(["index", str(source), "--store", str(store), "--quiet"]) == 0
    return stores
