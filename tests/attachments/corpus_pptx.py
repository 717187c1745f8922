"""The slide deck of the corpus: an onboarding deck (python-pptx), five slides, one holding a table, the last
in German. Each slide's title is a ``title`` item; its bullets are list items under that title."""

from __future__ import annotations

import copy
from pathlib import Path

from pptx import Presentation
from pptx.util import Cm

from .corpus import FileSpec, Outline, Table

TITLE, TITLE_AND_CONTENT, TITLE_ONLY = 0, 1, 5  # layouts of python-pptx's default template
BULLET_SLIDES = {  # slide number: (title, [(level, bullet)], language)
    2: (
        "Your first day",
        [
            (1, "Pick up your badge at reception in building A at 8:30."),
            (1, "IT equipment handover at the service desk in room A.104."),
            (2, "Laptop, headset and mobile phone are prepared before you arrive."),
            (1, "Lunch with your onboarding buddy in the staff canteen."),
        ],
        "en",
    ),
    3: (
        "Tools you will use",
        [
            (1, "Confluence for documentation and team spaces."),
            (1, "TravelDesk for trips and expense reports."),
            (1, "Jira for tickets; your team lead requests your access."),
            (2, "Access requests are usually granted within two working days."),
        ],
        "en",
    ),
    5: (
        "Wichtige Kontakte",
        [
            (1, "Personalabteilung: Aylin Demir, Durchwahl 2140."),
            (1, "IT-Service-Desk: Montag bis Freitag von 7:30 bis 18:00 Uhr."),
            (1, "Betriebsrat: Sprechstunde donnerstags in Raum B.012, Ansprechpartnerin Gülşen Yılmaz."),
            (2, "Termine für die Sprechstunde vereinbaren Sie über das Sekretariat."),
        ],
        "de",
    ),
}
SCHEDULE = Table(
    name="first_week_schedule",
    header_rows=[["Day", "Time", "Session", "Host"]],
    body_rows=[
        ["Monday", "09:00", "Welcome and company overview", "Mira Lindqvist"],
        ["Monday", "13:30", "IT security training", "Jonas Weber"],
        ["Tuesday", "10:00", "Warehouse tour Hamburg-Billbrook", "Stefan Kowalski"],
        ["Wednesday", "14:00", "HR and payroll basics", "Aylin Demir"],
        ["Friday", "11:00", "Feedback round", "Your line manager"],
    ],
    location=4,
    ruled=True,
    heading_path=["First week schedule"],
)


def write_pptx_files(directory: Path) -> list[FileSpec]:
    deck = Presentation()
    out = Outline("en")
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE])
    slide.shapes.title.text = "Welcome to Nordwind Logistics"
    slide.placeholders[1].text = "Onboarding for new colleagues, April 2024 cohort"
    out.path = ["Welcome to Nordwind Logistics"]
    out.add("title", "Welcome to Nordwind Logistics", 1)
    out.paragraph("Onboarding for new colleagues, April 2024 cohort", 1)
    for number in (2, 3, 4, 5):
        if number == 4:
            slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
            slide.shapes.title.text = SCHEDULE.heading_path[0]
            out.path = list(SCHEDULE.heading_path)
            out.add("title", SCHEDULE.heading_path[0], 4)
            grid = SCHEDULE.header_rows + SCHEDULE.body_rows
            shape = slide.shapes.add_table(len(grid), len(grid[0]), Cm(1.5), Cm(4.5), Cm(22), Cm(9))
            for r, row in enumerate(grid):
                for c, text in enumerate(row):
                    shape.table.cell(r, c).text = text
            continue
        title, bullets, language = BULLET_SLIDES[number]
        slide = deck.slides.add_slide(deck.slide_layouts[TITLE_AND_CONTENT])
        slide.shapes.title.text = title
        out.language, out.path = language, [title]
        out.add("title", title, number)
        body = slide.placeholders[1].text_frame
        for i, (level, text) in enumerate(bullets):
            paragraph = body.paragraphs[0] if i == 0 else body.add_paragraph()
            paragraph.text, paragraph.level = text, level - 1
            out.list_item(text, level=level, location=number)
    name = "onboarding_deck.pptx"
    deck.save(directory / name)
    notes = [
        "slide 1 is a title slide (title and subtitle); slides 2, 3 and 5 hold bullets in the body placeholder "
        "(level 2 = indented once); slide 4 a title and a table whose first row is the header (python-pptx's "
        "default table style marks the first row)",
        "slide 5 is in German",
    ]
    return [FileSpec(name, "pptx", "en", "slide", 5, out.items, [copy.deepcopy(SCHEDULE)], notes=notes)]
