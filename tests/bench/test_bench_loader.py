"""ConfQuestions loader errors: a wrong path and damaged files get clear errors."""

import json

import pytest

from llama_index_ragonite.bench.confquestions import load_corpus, load_questions
from llama_index_ragonite.parsing.loaders import PageLoadError

TURN = dict(
    turn_id="1",
    q_type="simple",
    q_en="Q?",
    q_de="F?",
    completed_q_en="Q?",
    completed_q_de="F?",
    a_url=["https://w/pages/1/x"],
    a_source="passage",
    a="A",
)


def folder(tmp_path, qa=None, page='{"id": "p", "title": "T", "url": "https://w/pages/1/x", "content": "<p>x</p>"}'):
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "confluence-001.json").write_text(page)
    (tmp_path / "qa-pairs.json").write_text(qa if qa is not None else json.dumps([{"conv_id": 1, "turns": [TURN]}]))
    return tmp_path


def test_a_valid_folder_loads(tmp_path):
    root = folder(tmp_path)
    assert [q.lang for q in load_questions(root)] == ["en", "de"] and len(load_corpus(root)) == 1


def test_wrong_path(tmp_path):
    with pytest.raises(PageLoadError, match="no such folder"):
        load_questions(tmp_path / "missing")
    with pytest.raises(PageLoadError, match="not a ConfQuestions folder"):
        load_corpus(tmp_path)


@pytest.mark.parametrize(
    "qa, message",
    [
        ('[{"conv_id": 1, "turns": [', "damaged benchmark file"),
        (json.dumps([{"conv_id": 1}]), "KeyError"),
        (json.dumps([{"conv_id": 1, "turns": [{**TURN, "a_url": []}]}]), "a_url"),
        (json.dumps([{"conv_id": 1, "turns": [{**TURN, "a_source": "image"}]}]), "a_source='image'"),
        (json.dumps([{"conv_id": 1, "turns": [{**TURN, "q_de": " "}]}]), r"turn 1 \(de\): bad question"),
        (json.dumps({"conv_id": 1}), "damaged benchmark file"),
    ],
)
def test_damaged_questions(tmp_path, qa, message):
    with pytest.raises(PageLoadError, match=message):
        load_questions(folder(tmp_path, qa=qa))


def test_damaged_page_and_empty_documents(tmp_path):
    with pytest.raises(PageLoadError, match="confluence-001.json: not valid JSON"):
        load_corpus(folder(tmp_path, page='{"id": "p", "content": '))
    (tmp_path / "documents" / "confluence-001.json").unlink()
    with pytest.raises(PageLoadError, match="no page files"):
        load_corpus(tmp_path)
