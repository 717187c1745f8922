"""The Word files of the corpus: an English travel policy and a German process description (python-docx)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import docx
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from .corpus import FileSpec, Outline, Table

TRAVEL_INTRO = (
    "This policy applies to all employees of Nordwind Logistics GmbH who travel on company business. "
    "The executive board approved it on 12 February 2024; it replaces the version of March 2021."
)
PER_DIEM = Table(
    name="per_diem_rates",
    header_rows=[["Country", "City", "Per diem (EUR)", "Hotel limit (EUR)"]],
    body_rows=[
        ["Germany", "Berlin", "28", "150"],
        ["Germany", "Munich", "28", "180"],
        ["France", "Paris", "45", "210"],
        ["United Kingdom", "London", "52", "240"],
        ["Switzerland", "Zurich", "58", "260"],
    ],
    ruled=True,
)
COORDINATORS = Table(
    name="travel_coordinators",
    header_rows=[["Region", "Office", "Travel coordinator", "Phone"]],
    body_rows=[
        ["DACH", "Hamburg", "Jana Petersen", "+49 40 5551 2301"],
        ["DACH", "Munich", "Tobias Reiter", "+49 89 5551 7702"],
        ["DACH", "Vienna", "Lena Gruber", "+43 1 5551 440"],
        ["Nordics", "Oslo", "Henrik Aas", "+47 21 55 51 80"],
        ["All other regions", "All other regions", "Central travel desk", "+49 40 5551 2000"],
    ],
    ruled=True,
    merges=[[1, 0, 3, 1], [5, 0, 1, 2]],  # "DACH" down three rows; "All other regions" across two columns
)
MILEAGE = Table(
    name="mileage_allowance",
    header_rows=[
        ["Vehicle", "Rate per km (EUR)", "Rate per km (EUR)", "Maximum per trip (km)"],
        ["Vehicle", "up to 300 km", "above 300 km", "Maximum per trip (km)"],
    ],
    body_rows=[
        ["Private car", "0.30", "0.20", "1000"],
        ["Electric car", "0.35", "0.25", "1200"],
        ["Motorcycle", "0.20", "0.15", "600"],
        ["Bicycle", "0.10", "0.10", "100"],
    ],
    ruled=False,
    merges=[[0, 0, 2, 1], [0, 1, 1, 2], [0, 3, 2, 1]],
)
ZUSTAENDIGKEITEN = Table(
    name="zustaendigkeiten",
    header_rows=[["Schritt", "Verantwortlich", "Frist"]],
    body_rows=[
        ["Eingang erfassen", "Poststelle (Birgit Sommer)", "am Eingangstag"],
        ["Sachliche Prüfung", "Bestellende Fachabteilung", "5 Arbeitstage"],
        ["Rechnerische Prüfung", "Kreditorenbuchhaltung", "3 Arbeitstage"],
        ["Freigabe", "Kostenstellenverantwortliche", "2 Arbeitstage"],
        ["Zahlung", "Treasury (Oliver Brandt)", "zum nächsten Zahllauf"],
    ],
    ruled=True,
    language="de",
)


def _repeat_as_header(row: Any) -> None:
    """Mark a Word table row as a header row (w:tblHeader), as Word's "Repeat as header row" does."""
    properties = row._tr.get_or_add_trPr()
    flag = OxmlElement("w:tblHeader")
    flag.set(qn("w:val"), "true")
    properties.append(flag)


def _write_table(document: Any, table: Table, mark_header: bool) -> None:
    grid = table.header_rows + table.body_rows
    written = document.add_table(rows=len(grid), cols=len(grid[0]))
    if table.ruled:
        written.style = document.styles["Table Grid"]
    covered = set()
    for r, c, rowspan, colspan in table.merges:
        merged = written.cell(r, c).merge(written.cell(r + rowspan - 1, c + colspan - 1))
        merged.text = grid[r][c]
        covered |= {(r + i, c + j) for i in range(rowspan) for j in range(colspan)}
    for r, row in enumerate(grid):
        for c, text in enumerate(row):
            if (r, c) not in covered:
                written.cell(r, c).text = text
    for r in range(len(table.header_rows)):
        for cell in written.rows[r].cells:
            for paragraph in cell.paragraphs:
                for run in paragraph.runs:
                    run.bold = True
        if mark_header:
            _repeat_as_header(written.rows[r])


def _travel_policy(directory: Path) -> FileSpec:
    document = docx.Document()
    out = Outline("en")
    tables = []

    def heading(text: str, level: int) -> None:
        document.add_heading(text, level)
        out.heading(text, level)

    def paragraph(text: str) -> None:
        document.add_paragraph(text)
        out.paragraph(text)

    def items(texts: list[str], ordered: bool) -> None:
        for text in texts:
            document.add_paragraph(text, style="List Number" if ordered else "List Bullet")
            out.list_item(text, ordered)

    def table(spec: Table, mark_header: bool) -> None:
        spec = copy.deepcopy(spec)
        _write_table(document, spec, mark_header)
        spec.heading_path = list(out.path)
        tables.append(spec)

    heading("Travel Policy 2024", 1)
    paragraph(TRAVEL_INTRO)
    heading("Booking", 2)
    paragraph("All trips are booked through the travel portal TravelDesk at least 14 days before departure.")
    items(
        [
            "Rail is preferred for trips under 600 km.",
            "Economy class is booked for flights shorter than 6 hours.",
            "Hotel rooms must not exceed the hotel limit of the destination city.",
        ],
        ordered=False,
    )
    heading("Approvals", 3)
    paragraph("Every trip needs an approval before anything is booked.")
    items(
        [
            "The traveller submits the request in TravelDesk.",
            "The line manager approves it within 3 working days.",
            "Trips above EUR 5,000 also need the approval of Controlling (Petra Holm).",
        ],
        ordered=True,
    )
    heading("Per diem rates", 2)
    paragraph(
        "Per diem allowances are paid per calendar day of travel; breakfast included in the hotel rate is deducted."
    )
    table(PER_DIEM, mark_header=True)
    heading("Travel coordinators", 2)
    paragraph("Questions about a booking go to the travel coordinator of your office.")
    table(COORDINATORS, mark_header=False)
    heading("Mileage allowance", 2)
    paragraph("Trips with a private vehicle are reimbursed per kilometre driven, up to the maximum per trip.")
    table(MILEAGE, mark_header=True)
    heading("Exceptions", 3)
    paragraph("Exceptions to this policy need written approval by the Head of Finance, Dr. Sabine Krohn.")
    name = "travel_policy.docx"
    document.save(directory / name)
    notes = [
        "headings use Word's Heading 1-3 styles; lists the List Bullet and List Number styles",
        "per_diem_rates and mileage_allowance mark their header rows as Word header rows (w:tblHeader); "
        "travel_coordinators has a bold first row only",
        "mileage_allowance has no cell borders (the default table style)",
    ]
    return FileSpec(name, "docx", "en", None, None, out.items, tables, notes=notes)


def _invoice_process(directory: Path) -> FileSpec:
    document = docx.Document()
    out = Outline("de")
    title = "Prozessbeschreibung Rechnungsprüfung"
    document.add_heading(title, 1)
    out.heading(title, 1)
    intro = (
        "Diese Prozessbeschreibung regelt die Prüfung und Freigabe von Eingangsrechnungen. "
        "Sie gilt für alle Gesellschaften der Nordwind-Gruppe ab dem 1. Januar 2024."
    )
    document.add_paragraph(intro)
    out.paragraph(intro)
    document.add_heading("Ablauf", 2)
    out.heading("Ablauf", 2)
    steps = [
        "Die Poststelle scannt jede Papierrechnung am Eingangstag ein.",
        "Die Fachabteilung bestätigt, dass Ware oder Leistung vollständig geliefert wurde.",
        "Die Kreditorenbuchhaltung gleicht Rechnung, Bestellung und Wareneingang ab.",
        "Nach der Freigabe wird die Rechnung im nächsten Zahllauf bezahlt.",
    ]
    for text in steps:
        document.add_paragraph(text, style="List Number")
        out.list_item(text, ordered=True)
    document.add_heading("Zuständigkeiten", 2)
    out.heading("Zuständigkeiten", 2)
    duties = copy.deepcopy(ZUSTAENDIGKEITEN)
    duties.heading_path = list(out.path)
    _write_table(document, duties, mark_header=True)
    document.add_heading("Freigabegrenzen", 3)
    out.heading("Freigabegrenzen", 3)
    limits = [
        "Bis 2.500 € gibt die Teamleitung frei.",
        "Bis 25.000 € gibt die Abteilungsleitung frei.",
        "Darüber hinaus ist die Geschäftsführung zuständig; größere Beträge prüft zusätzlich das Controlling.",
    ]
    for text in limits:
        document.add_paragraph(text, style="List Bullet")
        out.list_item(text)
    document.add_heading("Eskalation", 2)
    out.heading("Eskalation", 2)
    escalation = "Ist eine Rechnung nach 14 Tagen nicht freigegeben, erinnert die Buchhaltung per E-Mail an die Frist."
    document.add_paragraph(escalation)
    out.paragraph(escalation)
    name = "prozess_rechnungspruefung.docx"
    document.save(directory / name)
    return FileSpec(name, "docx", "de", None, None, out.items, [duties], notes=["German, with € and ß"])


def write_docx_files(directory: Path) -> list[FileSpec]:
    return [_travel_policy(directory), _invoice_process(directory)]
