"""The real ``ragonite serve`` process on a free loopback port, over stores built from the sample wiki."""

from __future__ import annotations

import shutil

import pytest
from fakes import REPO
from openai_stub import OpenAIStub

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


@pytest.fixture(scope="module")
def stub():
    """An OpenAI-compatible stub on loopback for one test module's server (its LLM ``stub``)."""
    with OpenAIStub() as stub:
        yield stub


@pytest.fixture
def clean_stub(stub):
    """``stub`` with an empty script before and after the test."""
    stub.clear_script()
    yield stub
    stub.clear_script()
