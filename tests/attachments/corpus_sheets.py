"""The spreadsheets of the corpus: a workbook (openpyxl) with a German price list and an English order sheet
holding formulas, and two CSV files (comma-separated UTF-8, and German style: ';', decimal commas, a BOM).

openpyxl writes formulas without cached values, so a reader with ``data_only=True`` would see None; after
saving we put the cached values (computed here with Decimal) into the formula cells' ``<v>`` elements, as
Excel would have left them.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import zipfile
from decimal import Decimal
from pathlib import Path

import openpyxl
from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.worksheet import Worksheet

from .corpus import FileSpec, Table

PRICES = [  # article, number, net (German text), gross (German text), VAT, valid from
    ("Palettenregal Standard", "PR-1000", "1.234,56", "1.469,13", Decimal("0.19"), dt.date(2024, 4, 1)),
    ("Gitterbox verzinkt", "GB-220", "189,00", "224,91", Decimal("0.19"), dt.date(2024, 4, 1)),
    ("Fachbuch Lagerlogistik", "FB-007", "49,90", "53,39", Decimal("0.07"), dt.date(2024, 1, 15)),
    ("Hubwagen Ergo", "HW-310", "2.450,00", "2.915,50", Decimal("0.19"), dt.date(2024, 7, 1)),
    ("Wartungsvertrag Basis", "WV-100", "980,00", "1.166,20", Decimal("0.19"), dt.date(2024, 1, 1)),
]
ORDERS = [  # order, customer, date, quantity, unit price, discount
    ("SO-24017", "Hansen Bau AG", dt.date(2024, 3, 4), 12, Decimal("189.00"), Decimal("0.05")),
    ("SO-24018", "Lindholm Shipping AS", dt.date(2024, 3, 6), 4, Decimal("2450.00"), Decimal("0.10")),
    ("SO-24021", "Brandt Logistik GmbH", dt.date(2024, 3, 11), 30, Decimal("49.90"), Decimal("0")),
    ("SO-24025", "Vesterhav Foods A/S", dt.date(2024, 3, 19), 8, Decimal("980.00"), Decimal("0.03")),
]
HEADCOUNT = [
    ["Department", "Location", "Headcount", "Open positions", "Manager"],
    ["Warehouse operations", "Hamburg-Billbrook", "142", "6", "Stefan Kowalski"],
    ["Sales, North", "Hamburg", "23", "2", "Mira Lindqvist"],
    ["Customer service", "Bremen", "31", "0", "Karin Vogt"],
    ["IT", "Hamburg", "18", "3", "Jonas Weber"],
    ["Finance", "Hamburg", "15", "1", "Petra Holm"],
]
KOSTENSTELLEN = [
    ["Kostenstelle", "Bezeichnung", "Budget 2024 (EUR)", "Verantwortlich", "Standort"],
    ["4100", "Geschäftsführung", "1.250.000,00", "Dr. Sabine Krohn", "Hamburg"],
    ["4210", "Lager Süd", "845.300,50", "Tobias Reiter", "München"],
    ["4220", "Lager Nord", "912.750,00", "Jana Petersen", "Hamburg"],
    ["4300", "Fuhrpark", "356.000,00", "Jörg Maßmann", "Bremen"],
    ["4400", "Personalentwicklung", "98.450,25", "Aylin Demir", "Hamburg"],
    ["4500", "IT-Infrastruktur", "1.012.000,00", "Jonas Weber", "Hamburg"],
]


def _raw(value: Decimal) -> list[str]:
    """The stored number as a reader that ignores the number format may print it ("2268.0", "2268")."""
    raw = float(value)
    return [str(raw)] + ([str(int(raw))] if raw == int(raw) else [])


def _number(value: Decimal, places: int, alternatives: dict[str, list[str]]) -> str:
    """The cell as its number format shows it; the raw number's renderings are acceptable too."""
    shown = f"{value:.{places}f}"
    alternatives[shown] = [o for o in dict.fromkeys(_raw(value)) if o != shown]
    return shown


def _percent(value: Decimal, alternatives: dict[str, list[str]]) -> str:
    shown = f"{int(value * 100)}%"
    alternatives[shown] = [f"{int(value * 100)} %", *_raw(value)]
    return shown


def _date(value: dt.date, shown: str, alternatives: dict[str, list[str]]) -> str:
    alternatives[shown] = [o for o in (value.isoformat(), f"{value.isoformat()} 00:00:00") if o != shown]
    return shown


def _price_sheet(sheet: Worksheet) -> Table:
    sheet.title = "Preisliste"
    header = [
        ["Artikel", "Art.-Nr.", "Preis (EUR)", "Preis (EUR)", "MwSt.", "Gültig ab"],
        ["Artikel", "Art.-Nr.", "netto", "brutto", "MwSt.", "Gültig ab"],
    ]
    for ref, text in (
        ("A1", "Artikel"),
        ("B1", "Art.-Nr."),
        ("C1", "Preis (EUR)"),
        ("E1", "MwSt."),
        ("F1", "Gültig ab"),
    ):
        sheet[ref] = text
    sheet["C2"], sheet["D2"] = "netto", "brutto"
    for span in ("A1:A2", "B1:B2", "C1:D1", "E1:E2", "F1:F2"):
        sheet.merge_cells(span)
    for row in sheet.iter_rows(min_row=1, max_row=2):
        for cell in row:
            cell.font, cell.alignment = Font(bold=True), Alignment(horizontal="center")
    alternatives: dict[str, list[str]] = {}
    body = []
    for r, (article, number, net, gross, vat, valid) in enumerate(PRICES, start=3):
        for c, text in enumerate((article, number, net, gross), start=1):
            sheet.cell(r, c, text)
        sheet.cell(r, 5, float(vat)).number_format = "0%"
        sheet.cell(r, 6, valid).number_format = "DD.MM.YYYY"
        body.append(
            [
                article,
                number,
                net,
                gross,
                _percent(vat, alternatives),
                _date(valid, valid.strftime("%d.%m.%Y"), alternatives),
            ]
        )
    return Table(
        "preisliste", header, body, location=1, sheet="Preisliste",
        merges=[[0, 0, 2, 1], [0, 1, 2, 1], [0, 2, 1, 2], [0, 4, 2, 1], [0, 5, 2, 1]],
        alternatives=alternatives, language="de",
    )  # fmt: skip


def _order_sheet(sheet: Worksheet, cached: dict[str, str]) -> Table:
    header = ["Order", "Customer", "Order date", "Quantity", "Unit price (EUR)", "Total (EUR)", "Discount", "Net (EUR)"]
    sheet.append(header)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    alternatives: dict[str, list[str]] = {}
    body = []
    count, gross_sum, net_sum = 0, Decimal(0), Decimal(0)
    for r, (order, customer, date, quantity, price, discount) in enumerate(ORDERS, start=2):
        total = price * quantity
        net = (total * (1 - discount)).quantize(Decimal("0.01"))
        count, gross_sum, net_sum = count + quantity, gross_sum + total, net_sum + net
        sheet.append([order, customer, date, quantity, float(price), f"=D{r}*E{r}", float(discount), f"=F{r}*(1-G{r})"])
        sheet[f"C{r}"].number_format = "YYYY-MM-DD"
        for ref in (f"E{r}", f"F{r}", f"H{r}"):
            sheet[ref].number_format = "0.00"
        sheet[f"G{r}"].number_format = "0%"
        cached[f"F{r}"], cached[f"H{r}"] = str(float(total)), str(float(net))
        body.append(
            [
                order, customer, _date(date, date.isoformat(), alternatives), str(quantity),
                _number(price, 2, alternatives), _number(total, 2, alternatives),
                _percent(discount, alternatives), _number(net, 2, alternatives),
            ]
        )  # fmt: skip
    last = len(ORDERS) + 1
    sheet.append(["Total", None, None, f"=SUM(D2:D{last})", None, f"=SUM(F2:F{last})", None, f"=SUM(H2:H{last})"])
    total_row = last + 1
    for ref in (f"F{total_row}", f"H{total_row}"):
        sheet[ref].number_format = "0.00"
    cached[f"D{total_row}"] = str(count)
    cached[f"F{total_row}"], cached[f"H{total_row}"] = str(float(gross_sum)), str(float(net_sum))
    alternatives[str(count)] = [f"{count}.0"]
    body.append(
        ["Total", "", "", str(count), "", _number(gross_sum, 2, alternatives), "",
         _number(net_sum, 2, alternatives)]
    )  # fmt: skip
    return Table("orders", [header], body, location=2, sheet="Orders", alternatives=alternatives)


def _put_cached_values(path: Path, member: str, cached: dict[str, str]) -> None:
    """Give every formula cell in ``member`` its cached value, as Excel saves it (openpyxl leaves <v> empty)."""
    with zipfile.ZipFile(path) as archive:
        contents = {info: archive.read(info.filename) for info in archive.infolist()}
    for info in contents:
        if info.filename != member:
            continue
        xml = contents[info].decode("utf-8")
        for ref, value in cached.items():
            pattern = re.compile(rf'(<c r="{ref}"[^>]*><f>[^<]*</f>)(?:<v\s*/>|<v></v>)')
            xml, count = pattern.subn(rf"\g<1><v>{value}</v>", xml)
            if count != 1:
                raise RuntimeError(f"formula cell {ref} not found in {member}")
        contents[info] = xml.encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in contents.items():
            archive.writestr(info, data)


def _workbook(directory: Path) -> FileSpec:
    workbook = openpyxl.Workbook()
    prices = _price_sheet(workbook.active)
    cached: dict[str, str] = {}
    orders = _order_sheet(workbook.create_sheet("Orders"), cached)
    name = "preisliste_2024.xlsx"
    workbook.save(directory / name)
    _put_cached_values(directory / name, "xl/worksheets/sheet2.xml", cached)
    notes = [
        "sheet 1 'Preisliste' (German): two header rows with merged cells (A1:A2, B1:B2, C1:D1, E1:E2, F1:F2); "
        "prices are text in German style ('1.234,56'), VAT a percentage, 'Gültig ab' real dates",
        "sheet 2 'Orders' (English): one header row; Total and Net are formulas with cached values, "
        "the last row sums them",
    ]
    return FileSpec(name, "xlsx", "de", "sheet", 2, [], [prices, orders], notes=notes)


def _csv(directory: Path, name: str, rows: list[list[str]], delimiter: str, encoding: str, language: str) -> FileSpec:
    with open(directory / name, "w", encoding=encoding, newline="") as handle:
        csv.writer(handle, delimiter=delimiter).writerows(rows)
    table = Table(Path(name).stem, [rows[0]], rows[1:], language=language)
    note = f"delimiter {delimiter!r}, encoding {encoding}, header in the first row"
    return FileSpec(name, "csv", language, None, None, [], [table], encoding=encoding, notes=[note])


def write_sheet_files(directory: Path) -> list[FileSpec]:
    return [
        _workbook(directory),
        _csv(directory, "headcount.csv", HEADCOUNT, ",", "utf-8", "en"),
        _csv(directory, "kostenstellen.csv", KOSTENSTELLEN, ";", "utf-8-sig", "de"),
    ]
