"""Permissions read from Confluence fail closed (issue 58): a restriction, an ancestor's restriction or a space
permission that a proxy answered trimmed (not expanded) or that Confluence cut short (paginated) makes its pages
readable by nobody, named in ``SyncReport.unreadable`` with the fix; ``ragonite index confluence`` exits 1
(``--allow-unreadable``: 0, the pages still printed). Positive control: the same pages answered whole are readable
by exactly their users again, at the next sync.

The stub Confluence and the pages, spaces and users are ``test_confluence_permissions``'s.
"""

from __future__ import annotations

import re

import pytest
from confluence_stub import ConfluenceStub
from fakes import HashingEmbedding
from test_confluence_permissions import READS, SPACES, seen_by, stub_pages, sync

from llama_index_ragonite import EvidenceStore
from llama_index_ragonite.index.confluence_sync import ConfluenceSync
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader
from llama_index_ragonite.parsing.confluence.permissions import Readers

ALL = {"11", "12", "13", "21", "22", "31"}
RESTRICTED = {"12", "13", "22"}  # 13 inherits 12's restriction


def trimmed_user(stub):
    stub.trimmed = {"user"}


def trimmed_group(stub):
    stub.trimmed = {"group"}


def trimmed_parts(stub):
    stub.trimmed = {"parts"}


def trimmed_ancestor(stub):
    stub.trimmed, stub.trimmed_pages = {"user"}, {"12"}


def trimmed_ancestors(stub):
    stub.trimmed = {"ancestors"}  # no ancestors: 13 would inherit nothing from 12


def trimmed_space(stub):
    stub.trimmed = {"space"}


def paginated(stub):
    stub.restriction_limit = 1  # 22's two groups: one listed, `_links.next`; 12's one user fills the limit


CASES = [  # (how the answers are trimmed, which pages are then readable by nobody, what the reason says)
    pytest.param(
        trimmed_user,
        ALL,
        "user lists no results",
        marks=pytest.mark.fault(
            "a page's read restriction answered with its user part not expanded (a proxy trimmed `expand`)",
            "every page whose restriction is not whole is readable by nobody, named in the sync report with the fix;"
            " `ragonite index confluence` exits 1 (0 with --allow-unreadable, still printing them)",
            area="access",
        ),
        id="user part",
    ),
    pytest.param(
        trimmed_group,
        ALL,
        "group lists no results",
        marks=pytest.mark.fault(
            "a page's read restriction answered with its group part not expanded",
            "every page whose restriction is not whole is readable by nobody, named in the sync report; exit 1",
            area="access",
        ),
        id="group part",
    ),
    pytest.param(
        trimmed_parts,
        ALL,
        "restrictions.user is missing",
        marks=pytest.mark.fault(
            "a page's read restriction answered without its user and group parts (named in `_expandable` only)",
            "every page whose restriction is not whole is readable by nobody, named in the sync report; exit 1",
            area="access",
        ),
        id="both parts",
    ),
    pytest.param(
        trimmed_ancestor,
        {"12", "13"},
        "user lists no results",
        marks=pytest.mark.fault(
            "an ancestor's read restriction answered trimmed (its descendants inherit it)",
            "the ancestor and every page under it are readable by nobody, named in the sync report; exit 1",
            area="access",
        ),
        id="ancestor",
    ),
    pytest.param(
        trimmed_ancestors,
        ALL,
        "holds no ancestors",
        marks=pytest.mark.fault(
            "a listing without the pages' ancestors (their inherited restrictions unknown)",
            "every page is readable by nobody, named in the sync report; never 'inherits nothing'; exit 1",
            area="access",
        ),
        id="ancestors left out",
    ),
    pytest.param(
        trimmed_space,
        ALL,
        "subjects.user is missing.*--space-readers",
        marks=pytest.mark.fault(
            "a space's view permissions answered with their subjects not expanded",
            "the space's pages are readable by nobody, named with the fix (--space-readers); exit 1",
            area="access",
        ),
        id="space permissions",
    ),
    pytest.param(
        paginated,
        RESTRICTED,
        "maybe not all",
        marks=pytest.mark.fault(
            "a page's read restriction paginated beyond what the answer holds (`_links.next`, a full `limit`)",
            "the page and its descendants are readable by nobody, named in the sync report; exit 1",
            area="access",
        ),
        id="paginated",
    ),
]


@pytest.fixture
def stub():
    with ConfluenceStub(space_readers=dict(SPACES)) as server:
        server.add_pages(stub_pages())
        server.pages["22"].readers = ((), ("hr-leads", "payroll"))  # two groups: a cut list has a `next`
        yield server


def whole(stub):
    stub.trimmed, stub.trimmed_pages, stub.restriction_limit = set(), None, 100


@pytest.mark.parametrize("trim, nobody, reason", CASES)
def test_permissions_not_answered_whole_make_pages_readable_by_nobody(stub, tmp_path, trim, nobody, reason):
    trim(stub)
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store).run()
    assert set(report.unreadable) == {f"confluence-{i}" for i in nobody}, report.unreadable
    assert all(re.search(reason, why) for why in report.unreadable.values()), report.unreadable
    assert "readable by nobody" in str(report)
    for principal, readable in READS.items():
        assert seen_by(store, principal) == readable - nobody, principal  # nothing more than the rest
    assert nobody & RESTRICTED  # every case hides a restricted page that leaked before

    whole(stub)  # positive control: the same pages answered whole, at the next sync
    again = sync(stub, store).run()
    moved = {"confluence-13"} if trim is trimmed_ancestors else set()  # its breadcrumb is back: fetched again
    assert not again.unreadable and set(again.fetched) == moved
    for principal, readable in READS.items():
        assert seen_by(store, principal) == readable, principal


@pytest.mark.parametrize("trim, nobody, reason", CASES)
def test_the_command_exits_1_naming_the_pages_unless_allowed(stub, tmp_path, capsys, monkeypatch, trim, nobody, reason):
    from llama_index.core import Settings

    from llama_index_ragonite.cli import main

    monkeypatch.setattr(Settings, "_embed_model", HashingEmbedding())
    trim(stub)
    args = ["index", "confluence", "--url", stub.url, "--cql", "type = page", "--store", str(tmp_path / "s"), "--quiet"]
    assert main(args) == 1
    captured = capsys.readouterr()
    named = {line.split(":")[1].strip() for line in captured.out.splitlines() if line.startswith("readable by nobody:")}
    assert named == {f"confluence-{i}" for i in nobody}
    assert "--allow-unreadable" in captured.err and "Traceback" not in captured.err
    assert main([*args, "--allow-unreadable"]) == 0
    again = capsys.readouterr().out
    assert all(f"readable by nobody: confluence-{i}:" in again for i in nobody)
    whole(stub)
    assert main(args) == 0 and "readable by nobody" not in capsys.readouterr().out


@pytest.mark.fault(
    "`--space-readers` named for a space whose permissions Confluence answers (a stale or too wide setting)",
    "Confluence's answer wins and the setting is reported as not used; it applies only to a space whose"
    " permissions cannot be read whole",
    area="access",
)
def test_named_space_readers_apply_only_where_confluence_cannot_say(stub, tmp_path):
    named = {"HR": Readers(anyone=True), "ENG": Readers(groups=("eng",))}
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    run = ConfluenceSync(store, ConfluenceStorageReader(client=client, cql="type = page"), space_readers=named).run
    report = run()
    assert sorted(report.ignored_space_readers) == ["ENG", "HR"] and not report.named_spaces
    for principal, readable in READS.items():
        assert seen_by(store, principal) == readable, principal

    stub.trimmed = {"space"}  # now Confluence's answer is not whole: the named viewers apply, PUB's pages hide
    report = run()
    assert set(report.named_spaces) == {"ENG", "HR"} and not report.ignored_space_readers
    assert "subjects" in report.named_spaces["HR"]
    assert set(report.unreadable) == {"confluence-31"}  # PUB: not named
    alice, bob, carol = READS
    assert seen_by(store, alice) == {"11", "12", "13", "21"}  # HR named `*`: anyone, restrictions still apply
    assert seen_by(store, bob) == {"21"}
    assert seen_by(store, carol) == {"11", "21", "22"}


@pytest.mark.fault(
    "a restriction entry that names no one we can match (a user without an id, a group without a name)",
    "the page is readable by nobody, named in the sync report; never unrestricted",
    area="access",
)
def test_a_restriction_entry_without_an_id_is_not_dropped(stub, tmp_path):
    def anonymise(handler, status, payload):  # a listing's pages, or one page asked for alone
        pages = payload.get("results", [payload]) if isinstance(payload, dict) else []
        for page in pages:
            restriction = page.get("restrictions", {}).get("read", {}).get("restrictions", {})
            for user in restriction.get("user", {}).get("results", []):
                user.pop("accountId"), user.pop("username")
        return payload

    stub.hostile = anonymise
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store).run()
    assert set(report.unreadable) == {"confluence-12", "confluence-13"}
    assert "names no user" in report.unreadable["confluence-12"]
    assert all("12" not in seen_by(store, p) and "13" not in seen_by(store, p) for p in READS)
