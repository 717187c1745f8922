"""The PDFs of the corpus (fpdf2): a German travel policy of four pages (a ruled table, a page of two-column
text, a borderless table, and a ruled table split across pages 3 and 4 with its header drawn again on page 4)
and an English price sheet of two pages (a ruled and a borderless table).

Text is set in DejaVu Sans when the machine has it (embedded, with a ToUnicode map), else in fpdf2's core
Helvetica (latin-1: ä ö ü ß work, so the text avoids the euro sign). Page breaks are placed by this code, not
by fpdf2 (auto page break is off), so the page of every item is known; an item that would not fit raises.
"""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos

from .corpus import FileSpec, Outline, Table

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
LEFT, WIDTH, BOTTOM = 20.0, 170.0, 297.0 - 20.0
LINE, ROW = 5.5, 7.0

STANDORTE = ["Hamburg", "Bremen", "Hannover", "Berlin", "Leipzig", "Dresden", "Köln", "Düsseldorf", "Frankfurt",
             "Mannheim", "Stuttgart", "Nürnberg", "München", "Augsburg"]  # fmt: skip
FIRST = ["Anna", "Bernd", "Clara", "Dirk", "Elif", "Frank", "Greta", "Hauke", "Ines", "Jörn", "Katrin", "Lars",
         "Maren", "Nils"]  # fmt: skip
LAST = ["Albers", "Brückner", "Claasen", "Dörfler", "Eßer", "Fuchs", "Grünwald", "Hoffmann", "Iversen", "Jäger",
        "Köhler", "Lorenz", "Meißner", "Nowak"]  # fmt: skip
LEFT_COLUMN = [
    "Fahrtkosten werden in Höhe der tatsächlich entstandenen Kosten erstattet. Bahnfahrten bis 600 km buchen Sie in "
    "der zweiten Klasse; ab vier Stunden Fahrzeit ist die erste Klasse erlaubt.",
    "Flüge sind nur zulässig, wenn die Bahnfahrt länger als sechs Stunden dauern würde. Gebucht wird grundsätzlich "
    "die günstigste Economy-Klasse mit Gepäck.",
    "Mietwagen werden über den Rahmenvertrag mit dem Autohaus Seeblick gebucht. Eine Vollkaskoversicherung ohne "
    "Selbstbeteiligung ist dabei eingeschlossen.",
]
RIGHT_COLUMN = [
    "Übernachtungen buchen Sie über das Reiseportal. Das Frühstück ist meist im Zimmerpreis enthalten und wird dann "
    "von der Tagespauschale abgezogen.",
    "Bewirtungen von Geschäftspartnern sind vorab mit der Führungskraft abzustimmen. Auf dem Beleg müssen Anlass und "
    "Teilnehmende vermerkt sein.",
    "Trinkgelder bis zu zehn Prozent des Rechnungsbetrags werden erstattet. Für Taxifahrten über 50 Euro ist eine "
    "Quittung mit Fahrtstrecke nötig; Fußwege zählen nicht als Reisezeit.",
]


class _Writer:
    """Draws onto an FPDF and records every item with the page it landed on."""

    def __init__(self, language: str) -> None:
        self.pdf = FPDF(format="A4")
        self.pdf.set_auto_page_break(False)
        self.pdf.set_margins(LEFT, 20.0, 20.0)
        if (DEJAVU / "DejaVuSans.ttf").exists() and (DEJAVU / "DejaVuSans-Bold.ttf").exists():
            self.pdf.add_font("body", "", str(DEJAVU / "DejaVuSans.ttf"))
            self.pdf.add_font("body", "B", str(DEJAVU / "DejaVuSans-Bold.ttf"))
            self.font = "body"
        else:
            self.font = "helvetica"
        self.out = Outline(language)
        self.tables: list[Table] = []

    def page(self) -> None:
        self.pdf.add_page()
        self.pdf.set_xy(LEFT, 20.0)

    def _fits(self, height: float) -> None:
        if self.pdf.get_y() + height > BOTTOM:
            raise RuntimeError(f"page {self.pdf.page} overflows: move the page break")

    def heading(self, text: str, level: int) -> None:
        self.pdf.set_font(self.font, "B", 15 if level == 1 else 12.5)
        self._fits(10)
        self.pdf.cell(WIDTH, 9, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.pdf.ln(2)
        self.out.heading(text, level, self.pdf.page)

    def paragraph(self, text: str, x: float = LEFT, width: float = WIDTH, column: int | None = None) -> None:
        self.pdf.set_font(self.font, "", 10.5)
        self.pdf.set_x(x)
        lines = self.pdf.multi_cell(width, LINE, text, align="L", dry_run=True, output="LINES")
        self._fits(len(lines) * LINE)
        self.pdf.multi_cell(width, LINE, text, align="L", new_x=XPos.LEFT, new_y=YPos.NEXT)
        self.pdf.set_x(x)
        self.pdf.ln(3)
        self.out.paragraph(text, self.pdf.page, column)

    def _row(
        self, cells: list[str], widths: list[float], ruled: bool, bold: bool, right: frozenset[int] | set[int]
    ) -> None:
        self.pdf.set_font(self.font, "B" if bold else "", 10)
        self.pdf.set_x(LEFT)
        for c, (text, width) in enumerate(zip(cells, widths)):
            if self.pdf.get_string_width(text) > width - 2 * self.pdf.c_margin:
                raise RuntimeError(f"{text!r} is wider than its column")
            align = "R" if c in right and not bold else "L"
            self.pdf.cell(width, ROW, text, border=1 if ruled else 0, align=align)
        self.pdf.ln(ROW)

    def table(
        self,
        spec: Table,
        widths: list[float],
        right: frozenset[int] | set[int] = frozenset(),
        repeat_header: bool = True,
    ) -> None:
        """Draw a one-header-row table; rows that do not fit go to a new page, below the header drawn again."""
        spec.location, spec.heading_path, spec.row_pages = self.pdf.page, list(self.out.path), []
        self._fits(2 * ROW)
        for row in spec.header_rows:
            self._row(row, widths, bool(spec.ruled), True, right)
        for row in spec.body_rows:
            if self.pdf.get_y() + ROW > BOTTOM:
                self.page()
                spec.header_repeated = repeat_header
                for header in spec.header_rows if repeat_header else []:
                    self._row(header, widths, bool(spec.ruled), True, right)
            self._row(row, widths, bool(spec.ruled), False, right)
            spec.row_pages.append(self.pdf.page)
        self.pdf.ln(4)
        self.tables.append(spec)

    def save(self, path: Path, name: str, language: str, notes: list[str]) -> FileSpec:
        self.pdf.set_title(Path(name).stem)
        self.pdf.output(str(path / name))
        font = "DejaVu Sans (embedded)" if self.font == "body" else "Helvetica (core font, latin-1)"
        return FileSpec(name, "pdf", language, "page", self.pdf.page, self.out.items, self.tables,
                        notes=[f"font: {font}", *notes])  # fmt: skip


def _travel_policy_de(directory: Path) -> FileSpec:
    w = _Writer("de")
    w.page()
    w.heading("Reiserichtlinie der Nordwind Logistics GmbH", 1)
    w.paragraph(
        "Diese Richtlinie regelt Dienstreisen aller Beschäftigten. Sie gilt ab dem 1. April 2024 und ersetzt die "
        "Fassung vom März 2021. Maßgeblich ist stets die im Intranet veröffentlichte Version."
    )
    w.heading("1. Geltungsbereich", 2)
    w.paragraph(
        "Die Regeln gelten für Reisen im Inland und ins Ausland, für Fahrten zu Kunden ebenso wie für Schulungen. "
        "Für Auszubildende gelten zusätzlich die Hinweise der Personalabteilung."
    )
    w.paragraph("Tabelle 1: Tagespauschalen und Übernachtungsgrenzen je Reiseziel")
    rates = [["Deutschland", "Berlin", "28", "150"], ["Deutschland", "München", "28", "180"],
             ["Österreich", "Wien", "35", "170"], ["Schweiz", "Zürich", "58", "260"],
             ["Frankreich", "Paris", "45", "210"], ["Großbritannien", "London", "52", "240"]]  # fmt: skip
    header = [["Land", "Stadt", "Tagespauschale (EUR)", "Hotelgrenze (EUR)"]]
    w.table(Table("tagespauschalen", header, rates, ruled=True, language="de"), [36, 34, 52, 48], {2, 3})
    w.paragraph("Übersteigt der Hotelpreis die Grenze, ist eine kurze Begründung im Reiseportal erforderlich.")
    w.page()  # page 2: two columns under a heading that spans both
    w.heading("2. Reisekosten im Überblick", 2)
    top = w.pdf.get_y()
    for text in LEFT_COLUMN:
        w.paragraph(text, LEFT, 80, column=1)
    w.pdf.set_y(top)
    for text in RIGHT_COLUMN:
        w.paragraph(text, LEFT + 90, 80, column=2)
    w.page()
    w.heading("3. Kilometerpauschalen", 2)
    w.paragraph("Für Fahrten mit dem privaten Fahrzeug gelten die folgenden Sätze. Die Höchstgrenze gilt je Reise.")
    w.paragraph("Tabelle 2: Kilometerpauschalen nach Fahrzeug")
    mileage = [["Pkw", "0,30", "0,20", "1.000 km"], ["Elektroauto", "0,35", "0,25", "1.200 km"],
               ["Motorrad", "0,20", "0,15", "600 km"], ["Fahrrad", "0,10", "0,10", "100 km"]]  # fmt: skip
    header = [["Fahrzeug", "bis 300 km (EUR)", "über 300 km (EUR)", "Höchstgrenze"]]
    w.table(Table("kilometerpauschalen", header, mileage, ruled=False, language="de"), [36, 44, 44, 46], {1, 2, 3})
    w.heading("4. Ansprechpartner je Standort", 2)
    w.paragraph("Tabelle 3: Ansprechpartner der Reisestelle und der Buchhaltung")
    contacts = [
        [
            STANDORTE[i // 2],
            ("Reisestelle", "Buchhaltung")[i % 2],
            f"{FIRST[i % 14]} {LAST[i * 5 % 14]}",
            str(2300 + i * 7),
        ]
        for i in range(2 * len(STANDORTE))
    ]
    header = [["Standort", "Abteilung", "Ansprechpartner", "Durchwahl"]]
    w.table(Table("ansprechpartner", header, contacts, ruled=True, language="de"), [40, 40, 60, 30], {3})
    if w.tables[-1].row_pages is None or sorted(set(w.tables[-1].row_pages)) != [3, 4]:
        raise RuntimeError("the contact table must run from page 3 onto page 4")
    w.heading("5. Inkrafttreten", 2)
    w.paragraph(
        "Diese Richtlinie tritt am 1. April 2024 in Kraft. Fragen beantwortet die Reisestelle unter "
        "reisen@nordwind-logistik.example oder telefonisch unter der Durchwahl 2300."
    )
    notes = [
        "page 1: ruled table tagespauschalen; page 2: two columns (left x=20-100 mm, right x=110-190 mm) under a "
        "full-width heading; page 3: borderless table kilometerpauschalen (numbers right-aligned, no lines)",
        "ansprechpartner: ruled, split across pages 3 and 4, header row drawn again at the top of page 4",
        "captions ('Tabelle 1: ...') are paragraphs above their tables",
    ]
    return w.save(directory, "reiserichtlinie.pdf", "de", notes)


def _price_sheet_en(directory: Path) -> FileSpec:
    w = _Writer("en")
    w.page()
    w.heading("Service Price Sheet 2024", 1)
    w.paragraph(
        "Prices apply to contracts signed from 1 January 2024 and are quoted net of VAT. Nordwind Logistics may "
        "adjust the fuel surcharge once a month."
    )
    w.heading("Warehouse services", 2)
    w.paragraph("Table 1: Warehouse service prices")
    services = [["Pallet storage", "pallet per week", "4.20", "10 pallets"], ["Pick and pack", "order line", "0.85",
                "500 lines"], ["Inbound handling", "pallet", "6.50", "none"], ["Labelling", "carton", "0.32",
                "1,000 cartons"], ["Returns processing", "item", "1.95", "none"]]  # fmt: skip
    header = [["Service", "Unit", "Price (EUR)", "Minimum order"]]
    w.table(Table("warehouse_services", header, services, ruled=True), [50, 40, 35, 45], {2})
    w.paragraph("Storage is billed per started week; handling prices include the fees of the warehouse system.")
    w.page()
    w.heading("Volume discounts", 2)
    w.paragraph("Discounts are granted on the monthly invoice total of warehouse services.")
    discounts = [["up to 10,000", "0%", "standard terms"], ["10,001 to 50,000", "3%", "12-month contract"],
                 ["above 50,000", "5%", "24-month contract"]]  # fmt: skip
    header = [["Monthly volume (EUR)", "Discount", "Condition"]]
    w.table(Table("volume_discounts", header, discounts, ruled=False), [55, 35, 60], {1})
    w.heading("Contact", 2)
    w.paragraph("Key account manager: Mira Lindqvist, mira.lindqvist@nordwind-logistik.example, +49 40 5551 2410.")
    notes = ["page 1: ruled table warehouse_services; page 2: borderless table volume_discounts"]
    return w.save(directory, "service_price_sheet.pdf", "en", notes)


def write_pdf_files(directory: Path) -> list[FileSpec]:
    return [_travel_policy_de(directory), _price_sheet_en(directory)]
