"""An attachment source's original file through its turn (issue 61): the owner gets the very bytes (a PDF inline,
never sniffed), at its page; a page source has none; another conversation's turn gives nothing."""

from __future__ import annotations

import pytest
from fpdf import FPDF
from processes import running_server

from llama_index_ragonite.cli import main

POLICY = "Reisekosten: Die Hotelgrenze in Kopenhagen betraegt 185 Euro pro Nacht."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("originals")
    pages = root / "pages"
    pages.mkdir()
    pdf = FPDF()
    for text in ("Reiserichtlinie 2026. Diese Richtlinie gilt fuer alle Dienstreisen.", POLICY):
        pdf.add_page()
        pdf.set_font("helvetica", size=11)
        pdf.multi_cell(0, 6, text)
    pdf.output(str(pages / "reiserichtlinie.pdf"))
    (pages / "intro.html").write_text(
        "<html><head><title>Travel</title></head><body><h1>Travel</h1><p>Book trips in the portal.</p></body></html>"
    )
    assert main(["index", str(pages), "--store", str(root / "store"), "--quiet"]) == 0
    with running_server(root, "--store", f"wiki={root / 'store'}", "--conversations", str(root / "h.sqlite")) as s:
        yield s, (pages / "reiserichtlinie.pdf").read_bytes()


def test_an_attachment_source_serves_its_original_to_the_turns_owner(server):
    running, original = server
    with running.client() as client:
        conversation = client.post("/api/conversations", json={}).json()["id"]
        turn = client.post(f"/api/conversations/{conversation}/messages", json={"message": "Hotelgrenze Kopenhagen?"})
        sources = turn.json()["sources"]
        n = next(s["n"] for s in sources if "reiserichtlinie.pdf (page 2)" == s["title"])
        base = f"/api/conversations/{conversation}/turns/0/sources"
        view = client.get(f"{base}/{n}/page").json()
        assert view["original"] is True and view["url"].endswith("reiserichtlinie.pdf#page=2")
        got = client.get(f"{base}/{n}/original")
        assert got.status_code == 200 and got.content == original
        assert got.headers["content-type"] == "application/pdf" and got.headers["x-content-type-options"] == "nosniff"
        assert "inline" in got.headers["content-disposition"] and got.headers["cache-control"] == "private"
        page = next(s["n"] for s in sources if s["title"] == "Travel")
        assert client.get(f"{base}/{page}/page").json()["original"] is False
        assert client.get(f"{base}/{page}/original").status_code == 404  # a wiki page: no file to serve
        other = client.post("/api/conversations", json={}).json()["id"]
        assert client.get(f"/api/conversations/{other}/turns/0/sources/{n}/original").status_code == 404
