"""Signing in to the web app, in a real browser against the real server with a users file.

What a new user met before: a server started with ``--users`` showed no place to enter a token, three
identical "Missing access token" errors and an empty Domain menu. Now the page shows one sign-in form and
calls no API before it; a good token fills the Domain menu and answers questions, a wrong one gives one
clear message, and signing out ends the session on the server (the old cookie no longer works).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest
from processes import running_server

from llama_index_ragonite.serve.identities import UsersFile, add_user
from llama_index_ragonite.serve.signin import SESSION_COOKIE

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture skips (or, under CI, fails) every test with the reason
    expect = None

REPO = Path(__file__).resolve().parents[2]
ANSWER_MS = 30_000
QUESTION = "Which platform failed the UEFI OTA upgrade in Aurora 2.0?"


class SignInServer:
    def __init__(self, url: str, token: str, users: Path) -> None:
        self.url, self.token, self.users = url, token, users


@pytest.fixture(scope="module")
def signin_server(tmp_path_factory) -> Iterator[SignInServer]:
    """``ragonite serve --users FILE`` over the sample wiki, with one user (acc-alice, group eng)."""
    from llama_index_ragonite.cli import main

    root = tmp_path_factory.mktemp("sign-in-browser")
    store = root / "store"
    assert main(["index", str(REPO / "examples" / "sample_wiki"), "--store", str(store), "--quiet"]) == 0
    token = add_user(UsersFile.load(root / "users.json"), "acc-alice", ["eng"])
    args = ["--store", f"wiki={store}", "--users", str(root / "users.json"), "--conversations", str(root / "h.sqlite")]
    with running_server(root, *args) as running:
        yield SignInServer(running.url, token, root / "users.json")


class Tab:
    """A fresh browser context on the app, with every API request it made."""

    def __init__(self, context, server: SignInServer) -> None:
        self.context, self.server = context, server
        self.page = context.new_page()
        self.api_calls: list[str] = []
        self.page_errors: list[str] = []
        self.page.on("request", self._request)
        self.page.on("pageerror", lambda error: self.page_errors.append(str(error)))

    def _request(self, request) -> None:
        if "/api/" in request.url:
            self.api_calls.append(f"{request.method} {request.url.split(self.server.url, 1)[-1]}")

    def open(self, suffix: str = "/") -> None:
        self.page.goto(self.server.url + suffix, wait_until="networkidle")

    def sign_in(self, token: str) -> None:
        self.page.get_by_test_id("sign-in-token").fill(token)
        self.page.get_by_test_id("sign-in-submit").click()

    def session_cookie(self) -> dict:
        (cookie,) = [c for c in self.context.cookies() if c["name"] == SESSION_COOKIE]
        return cookie

    def expect_signed_in(self) -> None:
        expect(self.page.locator("body")).to_have_attribute("data-sign-in", "signed-in")
        expect(self.page.get_by_test_id("domain-select").locator("option")).to_have_count(1)
        expect(self.page.get_by_test_id("domain-select")).to_have_value("wiki")
        expect(self.page.get_by_test_id("user-name")).to_have_text("Signed in as acc-alice")
        expect(self.page.get_by_test_id("sign-in")).to_be_hidden()

    def expect_sign_in_form(self) -> None:
        expect(self.page.get_by_test_id("sign-in")).to_be_visible()
        expect(self.page.get_by_test_id("sign-in-token")).to_be_focused()
        for testid in ("domain-select", "message-input", "conversation-list", "sign-out", "settings-toggle"):
            expect(self.page.get_by_test_id(testid)).to_be_hidden()


@pytest.fixture
def tab(browser, signin_server) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.set_default_timeout(20_000)
    try:
        yield Tab(context, signin_server)
    finally:
        context.close()


def ask(tab: Tab, question: str):
    box = tab.page.get_by_test_id("message-input")
    box.fill(question)
    box.press("Enter")
    turn = tab.page.locator('[data-testid="turn"]:not(.pending)').first
    expect(turn.get_by_test_id("answer")).not_to_be_empty(timeout=ANSWER_MS)
    return turn


def test_a_good_token_signs_in_and_questions_get_answers(tab, signin_server):
    tab.open()
    tab.expect_sign_in_form()
    assert tab.api_calls == []  # the page knew from the server's HTML that it must ask for a token first
    tab.sign_in(signin_server.token)
    tab.expect_signed_in()
    assert "Lenovo T14" in ask(tab, QUESTION).get_by_test_id("answer").inner_text()
    expect(tab.page.get_by_test_id("error")).to_have_count(0)
    cookie = tab.session_cookie()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    stored = tab.page.evaluate("JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])")
    assert signin_server.token not in stored and signin_server.token not in tab.page.content()
    assert tab.page.evaluate("document.cookie") == ""  # HttpOnly: no script reads the session
    assert tab.page_errors == []


def test_a_wrong_token_shows_one_clear_message(tab):
    tab.open()
    tab.sign_in("not-the-right-token-at-all")
    message = tab.page.get_by_test_id("sign-in-error")
    expect(message).to_have_text("Wrong access token: check that you pasted all of it.")
    tab.expect_sign_in_form()
    expect(tab.page.locator('[role="alert"]:visible')).to_have_count(1)
    expect(tab.page.get_by_test_id("error")).to_have_count(0)
    assert tab.api_calls == ["POST /api/session"]
    assert [c for c in tab.context.cookies() if c["name"] == SESSION_COOKIE] == []


def test_sign_out_returns_to_the_form_and_ends_the_session(tab, signin_server):
    tab.open()
    tab.sign_in(signin_server.token)
    tab.expect_signed_in()
    old = tab.session_cookie()["value"]
    headers = {"Cookie": f"{SESSION_COOKIE}={old}"}
    assert tab.page.request.get(signin_server.url + "/api/me", headers=headers).status == 200
    tab.page.get_by_test_id("sign-out").click()
    tab.expect_sign_in_form()
    assert [c for c in tab.context.cookies() if c["name"] == SESSION_COOKIE] == []
    kept = tab.page.request.get(signin_server.url + "/api/domains", headers=headers)
    assert kept.status == 401 and kept.json()["kind"] == "auth"


def test_a_token_link_signs_in_and_leaves_the_address_bar(tab, signin_server):
    tab.open(f"/#token={signin_server.token}")
    tab.expect_signed_in()
    assert signin_server.token not in tab.page.url and "#" not in tab.page.url


def test_a_user_removed_while_signed_in_is_asked_to_sign_in_again(tab, signin_server):
    tab.open()
    tab.sign_in(signin_server.token)
    tab.expect_signed_in()
    kept = signin_server.users.read_text()
    try:
        UsersFile(signin_server.users, []).save()
        tab.page.get_by_test_id("new-conversation").click()
        tab.page.get_by_test_id("message-input").fill(QUESTION)
        tab.page.get_by_test_id("message-input").press("Enter")
        tab.expect_sign_in_form()
        expect(tab.page.get_by_test_id("sign-in-error")).to_have_text(re.compile("session has ended"))
    finally:
        signin_server.users.write_text(kept)


def test_without_tokens_there_is_no_sign_in(browser, server):
    """Loopback without tokens (conftest's server): nothing to sign in to, and no sign-out either."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(server.url + "/", wait_until="networkidle")
        expect(page.locator("body")).to_have_attribute("data-sign-in", "open")
        expect(page.get_by_test_id("domain-select").locator("option")).not_to_have_count(0)
        for testid in ("sign-in", "sign-out", "user-name"):
            expect(page.get_by_test_id(testid)).to_be_hidden()
    finally:
        context.close()
