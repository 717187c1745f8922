"""The plain files of the corpus: an English IT handbook in Markdown (headings, lists, a pipe table) and a
German emergency contact note as plain UTF-8 text (paragraphs separated by blank lines, no headings)."""

from __future__ import annotations

import copy
from pathlib import Path

from .corpus import FileSpec, Outline, Table

PASSWORD_RULES = Table(
    name="password_rules",
    header_rows=[["Account type", "Minimum length", "Change interval", "Second factor"]],
    body_rows=[
        ["Standard user", "12 characters", "never, unless compromised", "Authenticator app"],
        ["Administrator", "16 characters", "every 180 days", "Hardware key"],
        ["Service account", "32 characters", "every 365 days", "not applicable"],
    ],
)
NOTFALL = [
    "Notfallkontakte Standort Hamburg-Billbrook",
    "Bei Feuer, Unfall oder Verletzung wählen Sie zuerst den Notruf 112 und informieren danach den Pförtner "
    "unter der Durchwahl 2999.",
    "Ersthelfer im Lager sind Uwe Thießen (Halle 1) und Derya Öztürk (Halle 3). Der Verbandkasten hängt neben "
    "dem Rolltor an der Außenwand.",
    "Bei einem Stromausfall schaltet sich die Notbeleuchtung selbsttätig ein. Die Sammelstelle ist der Parkplatz "
    "an der Billstraße 112 gegenüber dem Haupteingang.",
    "IT-Störungen außerhalb der Geschäftszeiten meldet die Schichtleitung an die Rufbereitschaft: +49 40 5551 2888.",
]


def _handbook(directory: Path) -> FileSpec:
    out = Outline("en")
    lines: list[str] = []

    def heading(text: str, level: int) -> None:
        lines.extend(["#" * level + " " + text, ""])
        out.heading(text, level)

    def paragraph(text: str) -> None:
        lines.extend([text, ""])
        out.paragraph(text)

    def items(texts: list[str], ordered: bool) -> None:
        for n, text in enumerate(texts, start=1):
            lines.append((f"{n}. " if ordered else "- ") + text)
            out.list_item(text, ordered)
        lines.append("")

    heading("IT Handbook", 1)
    paragraph("This handbook explains how accounts, passwords and support work at Nordwind Logistics.")
    heading("Accounts", 2)
    paragraph("Every employee gets one personal account on the first working day.")
    items(
        [
            "The account name is the first name, a dot and the last name.",
            "Shared accounts are not allowed, except for warehouse scanners.",
            "Accounts of leavers are disabled on their last working day at 18:00.",
        ],
        ordered=False,
    )
    heading("Passwords", 2)
    paragraph("To reset a forgotten password:")
    items(
        [
            "Open the self-service portal at https://password.nordwind-logistik.example.",
            "Confirm your identity with the authenticator app.",
            "Choose a new password that follows the rules below.",
        ],
        ordered=True,
    )
    heading("Password rules", 3)
    table = copy.deepcopy(PASSWORD_RULES)
    table.heading_path = list(out.path)
    grid = table.header_rows + table.body_rows
    lines.append("| " + " | ".join(grid[0]) + " |")
    lines.append("|" + "|".join("---" for _ in grid[0]) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in grid[1:])
    lines.append("")
    heading("Support hours", 2)
    paragraph("The service desk answers calls on extension 2200 from Monday to Friday, 7:30 to 18:00.")
    name = "it_handbook.md"
    (directory / name).write_text("\n".join(lines), encoding="utf-8")
    notes = ["ATX headings (#, ##, ###), '-' and '1.' lists, one GitHub pipe table (header row, then rows)"]
    return FileSpec(name, "md", "en", None, None, out.items, [table], notes=notes)


def _notfall(directory: Path) -> FileSpec:
    out = Outline("de")
    for text in NOTFALL:
        out.paragraph(text)
    name = "notfallkontakte.txt"
    (directory / name).write_text("\n\n".join(NOTFALL) + "\n", encoding="utf-8")
    return FileSpec(
        name, "txt", "de", None, None, out.items, [], notes=["UTF-8 without BOM; paragraphs by blank lines"]
    )


def write_text_files(directory: Path) -> list[FileSpec]:
    return [_handbook(directory), _notfall(directory)]
