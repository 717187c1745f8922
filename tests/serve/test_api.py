"""The REST API end to end: the real server process, the embedded default models, real stores."""

from __future__ import annotations

import json

import pytest
from openai_stub import server_error
from processes import running_server

from llama_index_ragonite.chat.engine import MAX_MESSAGE_CHARS
from llama_index_ragonite.explain.query_engine import OUT_OF_SCOPE_ANSWER


@pytest.fixture(scope="module")
def server(wiki_stores, stub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-api")
    args = [
        "--store", f"wiki={wiki_stores['wiki']}", "--store", f"onboarding={wiki_stores['onboarding']}",
        "--llm", "extractive", "--llm", f"stub=openai-compatible:stub-model@{stub.base_url}",
        "--conversations", str(tmp / "history.sqlite"),
    ]  # fmt: skip
    with running_server(tmp, *args) as server:
        yield server


@pytest.fixture
def client(server):
    with server.client() as client:
        yield client


def new_conversation(client, **body) -> str:
    response = client.post("/api/conversations", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def ask(client, conversation: str, message: str) -> dict:
    response = client.post(f"/api/conversations/{conversation}/messages", json={"message": message})
    assert response.status_code == 200, response.text
    return response.json()


def test_health_domains_and_llms(client):
    health = client.get("/api/health").json()
    assert health["status"] == "ok" and health["domains"] == ["wiki", "onboarding"] and health["version"]
    domains = {d["name"]: d for d in client.get("/api/domains").json()}
    assert domains["wiki"]["pages"] == 4 and domains["onboarding"]["pages"] == 1
    assert domains["wiki"]["evidences"] > domains["onboarding"]["evidences"] > 0
    llms = client.get("/api/llms").json()
    assert [(m["name"], m["default"]) for m in llms] == [("extractive", True), ("stub", False)]


def test_a_turn_has_the_completed_question_sources_citations_and_trace(client):
    conversation = new_conversation(client)
    turn = ask(client, conversation, "Who owns the OTA server?")
    assert turn["index"] == 0 and turn["completed_question"] == "Who owns the OTA server?"
    assert "Bob owns the service" in turn["answer"] and turn["cited"] == [1]
    assert not turn["out_of_scope"] and turn["language"] == "en" and turn["follow_ups"]
    sources = turn["sources"]
    assert len(sources) == 10 and [s["n"] for s in sources] == list(range(1, 11))
    first = sources[0]
    assert first["title"] == "OTA update server" and "Bob owns the service" in first["text"]
    assert first["url"].endswith("ota-server.html") and first["kind"] == "passage" and first["id"]
    assert first["score"] > 0 and first["dense_rank"] >= 1 and "Section: Architecture" in first["context"]
    rows = [s for s in sources if s["kind"] == "row"]
    assert rows and rows[0]["table"][0] == ["Parameter", "Default", "Description"]
    trace = turn["trace"]
    assert trace["lexical"] and trace["dense"]
    # offline no answer prompt is written: the trace lists the sources the answerer read instead
    assert trace["answer_prompt"] is None
    assert [(r["n"], r["id"]) for r in trace["answer_read"]] == [(s["n"], s["id"]) for s in sources]
    assert trace["answer_read"][0]["title"] == "OTA update server"
    decision = trace["answer_decision"]  # the scope decision: answered on the cited unit, with its scores
    assert decision["answered"] is True and decision["unit"]["source"] == 1 and decision["probability"] >= 0.5
    assert {"id", "title", "rank", "score"} <= set(trace["lexical"][0])
    # every hit of every ranking is named by its page title, not only the ones that reached the answer
    assert all(hit["title"] for side in ("lexical", "dense", "fused") for hit in trace[side]), trace["lexical"]

    follow = ask(client, conversation, "And where are its settings read from?")
    assert follow["index"] == 1 and follow["completed_question"] != "And where are its settings read from?"
    assert "OTA" in follow["completed_question"] and "/etc/aurora/ota.toml" in follow["answer"]

    opened = client.get(f"/api/conversations/{conversation}").json()
    assert [t["question"] for t in opened["turns"]] == [
        "Who owns the OTA server?",
        "And where are its settings read from?",
    ]
    assert opened["title"] == "Who owns the OTA server?" and opened["messages"] == 4


def test_conversations_are_listed_deleted_and_restored(client):
    conversation = new_conversation(client, domain="onboarding")
    ask(client, conversation, "Who grants access to Jira?")
    listed = {c["id"]: c for c in client.get("/api/conversations").json()}
    assert listed[conversation]["domain"] == "onboarding" and not listed[conversation]["deleted"]
    assert client.delete(f"/api/conversations/{conversation}").status_code == 204
    assert conversation not in {c["id"] for c in client.get("/api/conversations").json()}
    trash = {c["id"]: c for c in client.get("/api/conversations", params={"include_deleted": "true"}).json()}
    assert trash[conversation]["deleted"]
    refused = client.post(f"/api/conversations/{conversation}/messages", json={"message": "Still there?"})
    assert refused.status_code == 409 and refused.json()["kind"] == "input"
    restored = client.post(f"/api/conversations/{conversation}/restore")
    assert restored.status_code == 200 and not restored.json()["deleted"]
    assert conversation in {c["id"] for c in client.get("/api/conversations").json()}
    assert client.get("/api/conversations/nope").status_code == 404


def test_the_answer_streams_as_server_sent_events(client):
    conversation = new_conversation(client)
    events = []
    with client.stream(
        "POST", f"/api/conversations/{conversation}/messages/stream", json={"message": "Who owns the OTA server?"}
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        for block in response.read().decode().split("\n\n"):
            if block.strip():
                name, data = block.split("\n", 1)
                events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    names = [name for name, _ in events]
    assert names[-1] == "turn" and set(names[:-1]) == {"delta"} and len(names) > 2
    turn = events[-1][1]
    assert "".join(data["text"] for _, data in events[:-1]).strip() == turn["answer"]
    assert turn["cited"] == [1] and len(turn["sources"]) == 10 and turn["index"] == 0
    assert len(client.get(f"/api/conversations/{conversation}").json()["turns"]) == 1


def test_explanations_counterfactual_combination_and_permutation(client):
    conversation = new_conversation(client)
    turn = ask(client, conversation, "Who owns the OTA server?")
    url = f"/api/conversations/{conversation}/turns/0/explain"
    counterfactual = client.post(url, json={"method": "counterfactual"}).json()
    shares = counterfactual["shares"]
    assert counterfactual["method"] == "counterfactual" and counterfactual["complete"]
    clusters = counterfactual["clusters"]
    assert len(shares) == len(turn["sources"]) and abs(sum(c["share"] for c in clusters) - 1) < 1e-6
    # every evidence has its own share (near-duplicates split theirs), and the evidences' shares sum to 1
    assert sorted(e for c in clusters for e in c["evidences"]) == [s["evidence"] for s in shares]
    assert abs(sum(s["share"] for s in shares) - 1) < 1e-6
    top = max(shares, key=lambda s: s["share"])
    assert top["evidence"] == 1 and top["cited"] and "Attributed" in counterfactual["text"]
    claims = counterfactual["claims"]  # per claim of the answer: where it stands and its evidences' shares
    assert claims and all(turn["answer"][c["start"] : c["end"]] == c["text"] for c in claims)
    assert claims[0]["top"] == 1 and abs(sum(claims[0]["shares"]) - 1) < 1e-6
    kept = client.get(f"/api/conversations/{conversation}").json()["turns"][0]["explanations"]
    assert kept == {"counterfactual": counterfactual}  # kept with the turn, shown again on reopening
    for method in ("combination", "permutation"):
        rage = client.post(url, json={"method": method}).json()
        assert rage["method"] == method and rage["answer_distribution"] and rage["text"]
        assert abs(sum(a["share"] for a in rage["answer_distribution"]) - 1) < 1e-6
        assert {"rules", "groupings", "counterfactuals", "explanation"} <= set(rage)
        assert sum(g["count"] for g in rage["groupings"]) == rage["perturbations"]
    combination = client.post(url, json={"method": "combination"}).json()
    removed = combination["explanation"]["removed"]
    # the cited evidence alone is the smallest removal that changes the answer: its neighbours quote it
    # in their Before/After lines, but a removed evidence is withheld from those too
    assert removed == [1] and combination["tried"][0]["removed"] == [1] and combination["tried"][0]["changed"]
    assert combination["counterfactuals"][0]["changed"] and combination["counterfactuals"][0]["removed"] == removed
    assert client.post(url, json={"method": "astrology"}).status_code == 422
    assert client.post(f"/api/conversations/{conversation}/turns/7/explain", json={}).status_code == 404


def test_feedback_is_stored_with_the_turn(client):
    conversation = new_conversation(client)
    ask(client, conversation, "Who owns the OTA server?")
    given = client.post(f"/api/conversations/{conversation}/turns/0/feedback", json={"rating": 1, "comment": "good"})
    assert given.status_code == 201 and given.json()["rating"] == 1
    assert client.get(f"/api/conversations/{conversation}").json()["turns"][0]["feedback"] == 1
    assert client.post(f"/api/conversations/{conversation}/turns/0/feedback", json={"rating": 5}).status_code == 422


def test_settings_change_top_k_fusion_completion_and_domain(client):
    conversation = new_conversation(client)
    url = f"/api/conversations/{conversation}/settings"
    settings = client.put(url, json={"top_k": 3, "complete_questions": False}).json()
    assert settings["top_k"] == 3 and settings["complete_questions"] is False and settings["fusion"] == "rrf"
    turn = ask(client, conversation, "Who owns the OTA server?")
    assert len(turn["sources"]) == 3
    follow = ask(client, conversation, "And where are its settings?")
    assert follow["completed_question"] == "And where are its settings?"  # completion off
    assert client.put(url, json={"fusion": "rerank"}).json()["kind"] == "input"  # no reranker loaded
    assert client.put(url, json={"top_k": 50}).status_code == 422
    assert client.put(url, json={"domain": "nowhere"}).status_code == 422
    assert client.put(url, json={"domain": "onboarding", "fusion": "rrf"}).json()["domain"] == "onboarding"
    switched = ask(client, conversation, "Who grants access to the build server?")
    assert switched["sources"] and all(s["url"].endswith("onboarding.html") for s in switched["sources"])
    assert "Dana" in switched["answer"]


def test_a_german_turn_and_an_out_of_scope_turn(client):
    conversation = new_conversation(client)
    german = ask(client, conversation, "Welche Firmware hat das Lenovo T14 in Aurora 2.0?")
    assert german["language"] == "de" and "1.32" in german["answer"] and german["cited"]
    other = new_conversation(client)
    out = ask(client, other, "What is the boiling point of liquid nitrogen?")
    assert out["out_of_scope"] and out["cited"] == []
    assert "cannot be found" in out["answer"]
    refused = client.post(f"/api/conversations/{other}/turns/0/explain", json={"method": "counterfactual"})
    assert refused.status_code in (400, 422) and OUT_OF_SCOPE_ANSWER in refused.text  # `ragonite chat` says it too


def switch_after_aurora(client, opening: str, switch: str) -> dict:
    conversation = new_conversation(client)
    ask(client, conversation, opening)
    return ask(client, conversation, switch)


def test_a_self_contained_topic_switch_is_shown_and_answered_as_asked(client):
    """Issue 45's trial case through the API: after an Aurora turn, a turn on another subject is its own."""
    switch = "Who grants access to the build server?"
    turn = switch_after_aurora(client, "Which platform failed the UEFI OTA upgrade in Aurora 2.0?", switch)
    assert turn["completed_question"] == switch
    assert "Dana" in turn["answer"] and not turn["out_of_scope"], turn["answer"]


@pytest.mark.xfail(
    reason="issue 45, not met yet: the German turn is shown as asked, but retrieval ranks the access table "
    "fifth and the calibrated score answers it out of scope",
    strict=True,
)
def test_a_german_topic_switch_is_answered_as_asked(client):
    switch = "Wer vergibt den Zugang zum Build-Server?"
    turn = switch_after_aurora(client, "Welche Plattform ist in Aurora 2.0 beim UEFI-OTA-Upgrade gescheitert?", switch)
    assert turn["completed_question"] == switch  # holds already
    assert "Dana" in turn["answer"] and not turn["out_of_scope"], turn["answer"]


@pytest.mark.fault(
    "LLM fails during a turn (HTTP 500 after the client's retries)",
    "502 kind llm (an error event when streamed); the question is not stored; the next turn works",
)
def test_an_llm_failure_is_502_and_the_conversation_goes_on(client, stub):
    conversation = new_conversation(client)
    client.put(f"/api/conversations/{conversation}/settings", json={"llm": "stub"})
    stub.script(*[server_error() for _ in range(12)])
    try:
        failed = client.post(
            f"/api/conversations/{conversation}/messages", json={"message": "Who owns the OTA server?"}
        )
        assert failed.status_code == 502 and failed.json()["kind"] == "llm", failed.text
        with client.stream(
            "POST", f"/api/conversations/{conversation}/messages/stream", json={"message": "Who owns it?"}
        ) as response:
            body = response.read().decode()
        assert "event: error" in body and '"kind": "llm"' in body
    finally:
        stub.clear_script()
    assert client.get(f"/api/conversations/{conversation}").json()["turns"] == []
    client.put(f"/api/conversations/{conversation}/settings", json={"llm": "extractive"})
    turn = ask(client, conversation, "Who owns the OTA server?")
    assert turn["index"] == 0 and "Bob" in turn["answer"]
    stub_turn = client.put(f"/api/conversations/{conversation}/settings", json={"llm": "stub"})
    assert stub_turn.status_code == 200
    echoed = ask(client, conversation, "Who owns the OTA server?")  # the stub answers again (echo)
    assert echoed["index"] == 1 and echoed["llm"] == "stub"


def test_input_limits(client):
    conversation = new_conversation(client)
    url = f"/api/conversations/{conversation}/messages"
    too_long = client.post(url, json={"message": "x" * (MAX_MESSAGE_CHARS + 1)})
    assert too_long.status_code == 422 and too_long.json()["kind"] == "input"
    assert client.post(url, json={"message": ""}).status_code == 422
    assert client.post(url, json={"message": " \n "}).json()["kind"] == "input"
    assert client.post(url, content=b"{not json", headers={"content-type": "application/json"}).status_code == 422


def test_the_row_that_answered_has_the_largest_share_alone(client):
    conversation = new_conversation(client)
    turn = ask(client, conversation, "Which firmware does the Lenovo T14 run?")
    # the 1.9 and 2.0 release pages state the row with other firmware: the answer quotes one, cites the other
    assert "Lenovo T14: Firmware 1." in turn["answer"] and len(turn["cited"]) == 2
    url = f"/api/conversations/{conversation}/turns/0/explain"
    shares = client.post(url, json={"method": "counterfactual"}).json()["shares"]
    best = max(s["share"] for s in shares)
    assert [s["evidence"] for s in shares if s["share"] == best] == turn["cited"][:1]  # alone, and the quoted row
    assert abs(sum(s["share"] for s in shares) - 1) < 1e-6


@pytest.mark.fault(
    "Explain request with hostile options (a cost beyond bounds, an unknown field, a wrong type, a long text)",
    "400/422 naming the option before any LLM call; only the options the panel lists, within their bounds, run",
)
def test_every_method_with_its_options_and_bounds(client):
    schema = client.get("/api/explain/options").json()
    assert set(schema) == {"counterfactual", "naive", "surrogate", "combination", "permutation"}
    assert schema["combination"]["mode"] == {
        **schema["combination"]["mode"],
        "kind": "choice",
        "choices": ["top-down", "bottom-up"],
        "default": "top-down",
    }
    assert schema["counterfactual"]["rounds"]["max"] == 5
    assert schema["combination"]["relevance"]["choices"] == ["retrieval", "none"]
    assert schema["permutation"]["distribution_size"]["max"] == 2  # the default: a request may not grow it
    conversation = new_conversation(client)
    ask(client, conversation, "Who owns the OTA server?")
    url = f"/api/conversations/{conversation}/turns/0/explain"
    for method in ("naive", "surrogate"):
        result = client.post(url, json={"method": method}).json()
        assert result["method"] == method and abs(sum(s["share"] for s in result["shares"]) - 1) < 1e-6
    inherit = client.post(url, json={"method": "counterfactual", "options": {"spread": "inherit"}}).json()
    assert inherit["options"] == {"spread": "inherit"} and inherit["spread"] == "inherit"  # the chart labels by it
    assert client.post(url, json={"method": "counterfactual"}).json()["spread"] == "split"
    bottom_up = client.post(url, json={"method": "combination", "options": {"mode": "bottom-up"}}).json()
    top_down = client.post(url, json={"method": "combination"}).json()
    assert bottom_up["mode"] == "bottom-up" and top_down["mode"] == "top-down"
    stored = client.get(f"/api/conversations/{conversation}").json()["turns"][0]["explanations"]
    assert stored["combination"]["options"] == {} and stored["naive"]["method"] == "naive"  # the latest per method
    for bad in (
        {"method": "counterfactual", "options": {"rounds": 50}},  # over the server's bound: cost
        {"method": "counterfactual", "options": {"eps": 0.1}},  # not an option the panel may set
        {"method": "permutation", "options": {"strategy": "all"}},  # not one of the explainer's choices
        {"method": "combination", "options": {"target": "x" * 501}},
        {"method": "permutation", "options": {"distribution_size": 4}},  # thousands of calls on 20 evidences
        {"method": "combination", "options": {"relevance": "attention"}},  # needs a local Transformers LLM
        {"method": "telepathy"},
    ):
        refused = client.post(url, json=bad)
        assert refused.status_code in (400, 422), (bad, refused.text)


@pytest.mark.fault(
    "Page view of a source number out of range, or of another conversation's turn",
    "404 kind not_found; a page is reached only through a source of a turn the caller owns",
)
def test_a_source_opens_its_page_as_the_parser_read_it_with_the_evidence_marked(client):
    conversation = new_conversation(client)
    turn = ask(client, conversation, "Which firmware does the Lenovo T14 run?")
    cited = turn["cited"][0]
    source = turn["sources"][cited - 1]
    view = client.get(f"/api/conversations/{conversation}/turns/0/sources/{cited}/page").json()
    assert view["title"] == source["title"] and view["url"] == source["url"] and view["current"]
    kinds = [b["kind"] for b in view["blocks"]]
    assert "heading" in kinds and "table" in kinds and "row" not in kinds  # rows shown inside their table
    (marked,) = [b for b in view["blocks"] if b["marked"]]
    assert marked["kind"] == "table" and marked["table"][marked["marked_row"]] == source["table"][1]  # its row
    missing = client.get(f"/api/conversations/{conversation}/turns/0/sources/99/page")
    assert missing.status_code == 404
    other = client.get(f"/api/conversations/{new_conversation(client)}/turns/0/sources/1/page")
    assert other.status_code == 404  # no such turn there
