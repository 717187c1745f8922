"""The web app in a real browser: every demo feature a user meets, against the real server.

Each test opens a fresh tab (a fresh user cookie, so an empty history) on the server of
conftest.py: domains ``wiki`` (sample wiki + a page with markup in its text) and ``other``
(German pages); LLMs ``extractive`` (default) and ``stub`` (HTTP 500 on every request).
Screenshots of the main views go to docs/screenshots/ under fixed names.
"""

from __future__ import annotations

import re

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture skips (or, under CI, fails) every test with the reason
    expect = None

ANSWER_MS = 30_000  # one answer on the embedded default takes about a second
EXPLAIN_MS = 40_000

UEFI = "Which platform failed the UEFI OTA upgrade in Aurora 2.0?"
FOLLOW_UP = "Which firmware does it run?"
GERMAN = "Wer vergibt den Zugang zum Build-Server?"
GERMAN_YOU = "Sie"  # the user label of the German UI
OUT_OF_SCOPE = "What is the weather in Paris?"
SCRIPT_MARKUP = "<script>window.__xss=1</script>"
IMG_MARKUP = '<img src=x onerror="window.__xss=2">'

FINISHED = '[data-testid="turn"]:not(.pending)'
ERRORS = '[data-testid="error"]'


def ask(app, question: str, *, expect_error: bool = False):
    """Type ``question``, press Enter, wait for the finished turn (or the error); return it."""
    page = app.page
    turns, errors = page.locator(FINISHED).count(), page.locator(ERRORS).count()
    box = page.get_by_test_id("message-input")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function(
        """([turns, errors, finished, failed]) =>
             document.querySelectorAll(finished).length > turns || document.querySelectorAll(failed).length > errors""",
        arg=[turns, errors, FINISHED, ERRORS],
        timeout=ANSWER_MS,
    )
    expect(page.get_by_test_id("busy")).to_be_hidden(timeout=ANSWER_MS)
    if page.locator(ERRORS).count() > errors:
        message = page.locator(ERRORS).last.inner_text()
        if not expect_error:
            pytest.fail(f"asking {question!r} showed an error: {message}")
        return page.locator(ERRORS).last
    if expect_error:
        pytest.fail(f"asking {question!r} gave an answer, not an error: {page.locator(FINISHED).last.inner_text()}")
    turn = page.locator(FINISHED).nth(turns)
    expect(turn.get_by_test_id("answer")).not_to_be_empty()
    return turn


def current_conversation(app) -> dict:
    """The open conversation, read through the API as this tab's user."""
    item = app.page.locator('[data-testid="conversation-item"][aria-current="true"]')
    expect(item).to_have_count(1)
    response = app.api("GET", f"/api/conversations/{item.get_attribute('data-id')}")
    assert response.status == 200, response.text()
    return response.json()


def assert_inert(app) -> None:
    """No markup from the data ran: no flag set, no dialog, no script or image element in the log."""
    page = app.page
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert app.dialogs == []
    assert page.locator("#log script, #log img, #conversation-list script, #conversation-list img").count() == 0
    assert not [e for e in app.page_errors if "__xss" in e]


# -- ask, follow-up, sources ---------------------------------------------------------------------


def test_ask_shows_a_cited_answer_with_sources_and_a_table(app):
    turn = ask(app, UEFI)
    expect(turn.get_by_test_id("question")).to_have_text(UEFI)
    expect(turn.get_by_test_id("answer")).to_contain_text("Extractive answer")
    expect(turn.get_by_test_id("citation").first).to_be_visible()

    sources = turn.get_by_test_id("source")
    assert sources.count() >= 3
    expect(sources.first.get_by_test_id("source-title")).to_contain_text(re.compile(r"\S"))
    expect(sources.first.get_by_test_id("source-score")).to_contain_text(re.compile(r"\d\.\d{3}"))
    titles = " | ".join(turn.get_by_test_id("source-title").all_inner_texts())
    assert "Release testing" in titles, titles
    assert sources.first.get_by_test_id("source-id").text_content().strip() not in ("", "–")
    expect(sources.first.locator(".source-url")).to_contain_text("release-testing")  # file: URLs are not links

    cited = turn.get_by_test_id("citation").first  # a citation highlights its evidence ...
    cited.click()
    number = cited.get_attribute("data-source")
    expect(turn.locator(f'[data-testid="source"][data-source="{number}"]')).to_have_class(re.compile("highlighted"))
    page_view = turn.get_by_test_id("page-view")  # ... and opens its page, the evidence marked and in view
    expect(page_view).to_be_visible()
    source_text = turn.locator(f'[data-testid="source"][data-source="{number}"]').inner_text()
    marked = page_view.get_by_test_id("page-marked")
    expect(marked).to_have_count(1)
    expect(marked).to_be_in_viewport()
    assert page_view.get_by_test_id("page-block").count() >= 1  # the rest of the page around it
    assert marked.inner_text().split()[0] in source_text
    page_view.get_by_test_id("page-close").click()
    expect(page_view).to_have_count(0)
    turn.locator('[data-testid="source"]').nth(1).get_by_test_id("source-page").click()  # a card's button too
    expect(turn.get_by_test_id("page-view").get_by_test_id("page-marked")).to_have_count(1)
    app.screenshot("answer-sources")

    tables = turn.locator('[data-testid="source"][data-kind="table"]')  # the test matrices
    assert tables.count() >= 1
    for i in range(tables.count()):  # every table evidence is shown as a table, header first
        source = tables.nth(i)
        table = source.get_by_test_id("source-table")
        assert table.count() == 1, (
            f"table evidence {source.get_attribute('data-source')} is shown as text: {source.inner_text()[:300]}"
        )
        expect(table).to_be_visible()
        assert table.evaluate("t => t.tagName") == "TABLE"
        assert table.locator("tr").count() >= 3 and table.locator("th").count() >= 2
        expect(table).to_contain_text("UEFI")


def test_follow_up_shows_the_completed_question(app):
    app.page.set_viewport_size({"width": 1280, "height": 700})
    ask(app, UEFI)
    turn = ask(app, FOLLOW_UP)
    # the new answer stays in view, not scrolled past to the bottom of its evidence cards
    expect(turn.get_by_test_id("answer")).to_be_in_viewport()
    expect(turn.get_by_test_id("question")).to_have_text(FOLLOW_UP)
    completed = turn.get_by_test_id("completed-question")
    expect(completed).to_be_visible()
    expect(completed).to_contain_text(re.compile("UEFI|Aurora", re.I))
    assert "firmware" in completed.inner_text().lower()
    assert len(current_conversation(app)["turns"]) == 2


def test_follow_up_suggestion_chip_asks_it(app):
    turn = ask(app, "Who owns the OTA server?")
    chips = turn.get_by_test_id("follow-up")
    expect(chips.first).to_be_visible()  # (12) follow-up suggestions
    suggestion = chips.first.inner_text()
    chips.first.click()
    expect(app.page.locator(FINISHED)).to_have_count(2, timeout=ANSWER_MS)
    expect(app.page.locator(FINISHED).nth(1).get_by_test_id("question")).to_have_text(suggestion)


# -- explanations and trace ----------------------------------------------------------------------


def test_explain_draws_the_attribution_bar_chart(app):
    app.page.set_viewport_size({"width": 1280, "height": 1300})
    turn = ask(app, "Who owns the OTA server?")
    turn.get_by_test_id("explain-button").click()
    chart = turn.get_by_test_id("attribution-chart")
    expect(chart).to_be_visible(timeout=EXPLAIN_MS)
    bars = chart.get_by_test_id("attribution-bar")
    assert bars.count() == turn.get_by_test_id("source").count()
    shares = [bars.nth(i).get_attribute("data-share") for i in range(bars.count())]
    assert any(s not in (None, "") for s in shares), shares
    assert sum(float(s) for s in shares if s) > 0, shares
    turn.get_by_test_id("answer").scroll_into_view_if_needed()
    app.screenshot("answer-explanation")

    bars.first.click()  # a bar highlights its evidence
    number = bars.first.get_attribute("data-evidence")
    expect(turn.locator(f'[data-testid="source"][data-source="{number}"]')).to_have_class(re.compile("highlighted"))

    claim = turn.get_by_test_id("claim").first  # a claim of the answer: hovering it highlights its evidence
    expect(claim).to_be_visible()
    top = claim.get_attribute("data-top")
    assert top, "the claim has a top evidence"
    expect(claim.get_by_test_id("claim-shares")).to_contain_text("%")
    claim.hover()
    expect(claim).to_have_class(re.compile("active"))
    expect(turn.locator(f'[data-testid="source"][data-source="{top}"]')).to_have_class(re.compile("highlighted"))

    app.page.reload()  # a reopened conversation shows its explanation again, kept with the turn
    app.page.get_by_test_id("open-conversation").first.click()
    reopened = app.page.locator(FINISHED).first
    expect(reopened.get_by_test_id("attribution-chart")).to_be_visible()
    expect(reopened.get_by_test_id("attribution-bar")).to_have_count(bars.count())


@pytest.mark.parametrize(
    "question, quoted, cited",
    [
        ("Which firmware does the Lenovo T14 run?", "Lenovo T14: Firmware 1.", 2),
        ("How much does a cat cost?", "80 EUR", 1),
    ],
    ids=["firmware", "fee-table"],
)
def test_the_chart_gives_the_quoted_row_the_largest_share_alone(app, question, quoted, cited):
    """Issue 46: a table and its rows were one cluster and every bar showed 100%. The firmware answer also cites
    the other release page, whose row states another firmware (issue 60): the quoted row is the first citation."""
    turn = ask(app, question)
    expect(turn.get_by_test_id("answer")).to_contain_text(quoted)
    citations = turn.get_by_test_id("answer").get_by_test_id("citation")
    expect(citations).to_have_count(cited)
    row = citations.first.get_attribute("data-source")
    turn.get_by_test_id("explain-button").click()
    bars = turn.get_by_test_id("attribution-chart").get_by_test_id("attribution-bar")
    expect(bars.first).to_be_visible(timeout=EXPLAIN_MS)
    shares = {
        bars.nth(i).get_attribute("data-evidence"): float(bars.nth(i).get_attribute("data-share"))
        for i in range(bars.count())
    }
    top = max(shares.values())
    assert [e for e, share in shares.items() if share == top] == [row], shares
    assert abs(sum(shares.values()) - 1) < 1e-6, shares
    stored = current_conversation(app)["turns"][-1]["explanations"]["counterfactual"]  # what the API computed
    assert {str(s["evidence"]): s["share"] for s in stored["shares"]} == pytest.approx(shares)


def test_the_explain_panel_offers_every_method_and_its_options_as_the_api_computes_them(app):
    turn = ask(app, "Who owns the OTA server?")
    turn.get_by_test_id("explain-combination").click()  # top-down, the default
    section = turn.get_by_test_id("explanation-combination")
    expect(section.get_by_test_id("rage-explanation")).not_to_be_empty(timeout=EXPLAIN_MS)
    top_down = section.get_by_test_id("rage-explanation").inner_text()

    panel = turn.get_by_test_id("explain-panel")
    panel.locator("summary").click()
    methods = panel.get_by_test_id("explain-method")
    expect(methods.locator("option")).to_have_count(5)  # counterfactual, naive, surrogate, combination, permutation
    methods.select_option("combination")
    panel.locator('[data-option="mode"]').select_option("bottom-up")
    panel.get_by_test_id("explain-run").click()
    expect(section.get_by_test_id("rage-explanation")).not_to_have_text(top_down, timeout=EXPLAIN_MS)
    bottom_up = section.get_by_test_id("rage-explanation").inner_text()
    conversation = current_conversation(app)
    api = app.api(
        "POST",
        f"/api/conversations/{conversation['id']}/turns/0/explain",
        data={"method": "combination", "options": {"mode": "bottom-up"}},
    ).json()
    assert api["mode"] == "bottom-up" and api["explanation"]["description"] in bottom_up, (
        api["explanation"],
        bottom_up,
    )

    methods.select_option("naive")  # the other attributions draw the same chart
    panel.get_by_test_id("explain-run").click()
    expect(turn.get_by_test_id("explanation-naive").get_by_test_id("attribution-chart")).to_be_visible(
        timeout=EXPLAIN_MS
    )


def test_rage_views_show_the_answer_distribution_pie(app):
    turn = ask(app, "Who owns the OTA server?")
    turn.get_by_test_id("explain-combination").click()
    section = turn.get_by_test_id("explanation-combination")
    expect(section).to_be_visible(timeout=EXPLAIN_MS)
    expect(section.get_by_test_id("rage-explanation")).not_to_be_empty()
    pie = section.get_by_test_id("rage-pie")
    expect(pie).to_be_visible()
    assert pie.get_by_test_id("rage-slice").count() >= 1
    expect(section.get_by_test_id("rage-groupings")).to_be_attached()
    expect(section.get_by_test_id("rage-counterfactuals")).to_be_attached()
    cells = " ".join(section.locator("td").all_inner_texts()).split()
    assert "true" not in cells and "false" not in cells, cells  # yes/no, in the page's language
    section.scroll_into_view_if_needed()
    app.screenshot("rage-pie")

    turn.get_by_test_id("explain-permutation").click()
    permutation = turn.get_by_test_id("explanation-permutation")
    expect(permutation).to_be_visible(timeout=EXPLAIN_MS)
    expect(permutation.get_by_test_id("rage-pie")).to_be_visible()


def test_behind_the_scenes_shows_results_and_prompts(app):
    ask(app, UEFI)
    turn = ask(app, FOLLOW_UP)
    turn.get_by_test_id("trace-toggle").click()
    # offline no answer prompt is written: the trace shows the sources the answerer read instead
    expect(turn.get_by_test_id("trace-answer-prompt")).to_have_count(0)
    read = turn.get_by_test_id("trace-answer-read")
    expect(read).to_be_visible()
    assert read.locator("tr").count() == turn.get_by_test_id("source").count() + 1  # a header, one row a source
    rephraser = turn.get_by_test_id("trace-rephraser-prompt")  # only an LLM completer has a prompt
    if rephraser.count():
        expect(rephraser).to_contain_text(FOLLOW_UP)
    for name in ("trace-lexical", "trace-dense"):
        results = turn.get_by_test_id(name)
        expect(results).to_be_visible()
        assert results.locator("tr").count() >= 2, name  # a header and at least one hit
    turn.get_by_test_id("trace").scroll_into_view_if_needed()
    app.screenshot("trace")


# -- feedback and history ------------------------------------------------------------------------


def test_thumb_up_is_recorded(app):
    turn = ask(app, UEFI)
    with app.page.expect_response(lambda r: "/feedback" in r.url) as sent:
        turn.get_by_test_id("feedback-up").click()
    assert sent.value.status == 201, sent.value.text()
    expect(turn.get_by_test_id("feedback-up")).to_have_attribute("aria-pressed", "true")
    expect(turn.get_by_test_id("feedback-down")).to_have_attribute("aria-pressed", "false")
    stored = current_conversation(app)["turns"][0]
    assert stored.get("feedback") == 1, stored.get("feedback")


def test_history_delete_and_restore_in_the_sidebar(app):
    page = app.page
    ask(app, UEFI)
    page.get_by_test_id("new-conversation").click()
    ask(app, "Who owns the OTA server?")
    items = page.get_by_test_id("conversation-item")
    expect(items).to_have_count(2)
    first = page.locator('[data-testid="conversation-item"]', has_text="UEFI")
    conversation_id = first.get_attribute("data-id")

    first.get_by_test_id("delete-conversation").click()
    expect(items).to_have_count(1)
    listed = {c["id"]: c for c in app.api("GET", "/api/conversations?include_deleted=true").json()}
    assert listed[conversation_id]["deleted"] is True

    page.get_by_test_id("show-deleted").check()
    deleted = page.locator(f'[data-testid="conversation-item"][data-id="{conversation_id}"]')
    expect(deleted).to_have_attribute("data-deleted", "true")
    expect(items).to_have_count(2)
    app.screenshot("history")

    deleted.get_by_test_id("restore-conversation").click()
    expect(deleted).to_have_attribute("data-deleted", "false")
    listed = {c["id"]: c for c in app.api("GET", "/api/conversations").json()}
    assert listed[conversation_id]["deleted"] is False

    deleted.get_by_test_id("open-conversation").click()  # the restored conversation opens with its turn
    expect(page.locator(FINISHED)).to_have_count(1)
    expect(page.locator(FINISHED).first.get_by_test_id("question")).to_have_text(UEFI)
    expect(deleted).to_have_attribute("aria-current", "true")


# -- domains, languages, scope -------------------------------------------------------------------


def test_domain_switch_answers_from_the_other_store(app):
    page = app.page
    ask(app, UEFI)
    page.get_by_test_id("domain-select").select_option("other")
    turn = ask(app, "Wann öffnet die Kantine?")
    titles = " | ".join(turn.get_by_test_id("source-title").all_inner_texts())
    assert "Kantine" in titles and "Release testing" not in titles, titles
    expect(turn.get_by_test_id("answer")).to_contain_text("11:30")
    assert current_conversation(app)["domain"] == "other"
    conversations = app.api("GET", "/api/conversations").json()
    assert sorted(c["domain"] for c in conversations) == ["other", "wiki"]


def test_one_ui_language_per_page_the_user_s_choice_and_turns_keep_their_own(app):
    page = app.page
    expect(page.get_by_test_id("send-button")).to_have_text("Send")
    turn = ask(app, GERMAN)
    expect(turn).to_have_attribute("lang", "de")  # the turn's text is marked German ...
    expect(turn.get_by_test_id("answer")).to_contain_text("Dana")
    expect(page.locator("html")).to_have_attribute("lang", "en")  # ... the labels around it stay English
    expect(page.get_by_test_id("send-button")).to_have_text("Send")
    ask(app, "Who grants access to Jira?")

    page.get_by_test_id("ui-language").select_option("de")  # the user's choice: every label, old turns too
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.get_by_test_id("send-button")).to_have_text("Senden")
    expect(page.locator("#conversations-heading")).to_have_text("Unterhaltungen")
    expect(page.locator(".message.user > .who")).to_have_text([GERMAN_YOU, GERMAN_YOU])  # the English turn's too
    page.reload()  # remembered
    expect(page.get_by_test_id("send-button")).to_have_text("Senden")
    page.get_by_test_id("ui-language").select_option("")  # back to the browser's (English here)
    expect(page.get_by_test_id("send-button")).to_have_text("Send")


def test_a_question_sent_before_the_domains_load_uses_the_default_domain(app):
    page = app.page
    release = []

    def slow_domains(route):
        release.append(route)  # answered only after the question is on its way

    page.route("**/api/domains", slow_domains)
    page.reload(wait_until="load")
    expect(page.get_by_test_id("domain-select").locator("option")).to_have_count(0)
    turn = ask(app, "Who owns the OTA server?")  # fails on an error ("Unknown domain ''")
    expect(turn.get_by_test_id("answer")).to_contain_text("Bob")
    for route in release:
        route.continue_()
    page.unroute("**/api/domains")
    assert current_conversation(app)["settings"]["domain"] == "wiki"


def test_an_out_of_scope_question_says_so(app):
    turn = ask(app, OUT_OF_SCOPE)
    expect(turn.get_by_test_id("out-of-scope")).to_be_visible()
    assert current_conversation(app)["turns"][0]["out_of_scope"] is True
    # it rests on no evidence: nothing to explain, so no Explain button
    expect(turn.get_by_test_id("explain-button")).to_have_count(0)
    ask(app, "Who owns the OTA server?")  # the conversation goes on


# -- failures and hostile content ----------------------------------------------------------------


def test_llm_failure_shows_an_error_and_the_conversation_stays_usable(app, server):
    page = app.page
    requests_before = len(server.stub.requests)
    page.get_by_test_id("settings-toggle").click()
    expect(page.get_by_test_id("settings-panel")).to_be_visible()
    page.get_by_test_id("setting-llm").select_option("stub")
    expect(page.get_by_test_id("settings-status")).not_to_be_empty()

    error = ask(app, UEFI, expect_error=True)
    expect(error).to_have_attribute("data-kind", "llm")
    expect(error).to_contain_text("language model")
    assert len(server.stub.requests) > requests_before  # the stub was asked, and failed
    expect(page.get_by_test_id("message-input")).to_have_value(UEFI)  # the question is kept for a retry
    expect(page.get_by_test_id("send-button")).to_be_enabled()

    page.get_by_test_id("setting-llm").select_option("extractive")
    expect(page.get_by_test_id("settings-status")).not_to_be_empty()
    turn = ask(app, UEFI)
    expect(turn.get_by_test_id("answer")).to_contain_text("Extractive answer")
    assert current_conversation(app)["settings"]["llm"] == "extractive"


def test_an_answer_that_broke_off_is_shown_marked_incomplete(app, server):
    from openai_stub import ending_stream

    page = app.page
    page.get_by_test_id("settings-toggle").click()
    page.get_by_test_id("setting-llm").select_option("stub")
    expect(page.get_by_test_id("settings-status")).not_to_be_empty()
    server.stub.script(ending_stream("The OTA server is owned by", "none"))  # no finish reason, no [DONE]
    try:
        turn = ask(app, "Who owns the OTA server?")
    finally:
        server.stub.clear_script()
    expect(turn.get_by_test_id("truncated")).to_be_visible()
    expect(turn.get_by_test_id("truncated")).to_contain_text("incomplete")
    expect(turn.get_by_test_id("answer")).to_have_class(re.compile(r"\btruncated\b"))
    assert current_conversation(app)["turns"][0]["truncated"] is True


def test_markup_in_evidence_shows_as_text_and_never_runs(app):
    page = app.page
    turn = ask(app, "Which footer snippet did the Zorblax legacy renderer print?")
    texts = turn.get_by_test_id("source-text").all_text_contents()
    assert any(SCRIPT_MARKUP in text for text in texts), texts
    expect(turn.get_by_test_id("answer")).to_contain_text("Zorblax")

    question = f"{IMG_MARKUP} What is the raw snippet of the Zorblax badge?"
    turn = ask(app, question)
    expect(turn.get_by_test_id("question")).to_have_text(question)
    shown = " ".join(turn.get_by_test_id("source").all_text_contents())
    assert IMG_MARKUP in shown, shown
    turn.get_by_test_id("trace-toggle").click()
    expect(turn.get_by_test_id("trace-lexical")).to_be_visible()  # offline the trace has no prompt to quote it
    turn.get_by_test_id("explain-button").click()
    expect(turn.get_by_test_id("attribution-chart")).to_be_visible(timeout=EXPLAIN_MS)

    policy = app.api("GET", "/").headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy, policy

    page.reload()  # the sidebar and a reopened conversation render the stored markup too
    page.get_by_test_id("open-conversation").first.click()
    expect(page.locator(FINISHED)).to_have_count(2)
    page.wait_for_timeout(300)  # an onerror handler would have fired by now
    assert_inert(app)
