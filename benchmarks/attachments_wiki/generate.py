"""Writes the attachments_wiki judge set of issue 61: an invented logistics company's wiki with its attachments.

Usage: python benchmarks/attachments_wiki/generate.py OUT [--check]

OUT receives pages/*.html, attachments/* (PDF, .docx, .xlsx, .csv, .pptx, .md, .txt) and manifest.json.
--check then verifies questions.json (next to this script) against the content written here: every gold answer
occurs in its gold attachment at its gold location (in this module's data and in the file read back; for a PDF, in
the text lines of an uncompressed rendering, so an answer broken across two lines is caught), and in no HTML page. Standalone on purpose: stdlib, python-docx, openpyxl,
python-pptx and fpdf2 only, so the set does not depend on the code it judges.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

FIXED = dt.datetime(2026, 11, 29, 9, 0, 0)
ZIP_TIME = (2026, 11, 29, 9, 0, 0)
AUTHOR = "Kessling Logistik GmbH"

# A block is ("h1"|"h2"|"p", text), ("ul"|"ol", [items]) or ("table", header, rows).
Block = tuple[Any, ...]

# ---------------------------------------------------------------------------------------------------------------
# Attachments. "parts" maps a location (PDF page, slide number, sheet name) to its content; whole-file formats have
# a single part under None.

ATTACHMENTS: list[dict[str, Any]] = [
    {
        "file": "travel-policy-2026.pdf",
        "page": "reisen-und-spesen.html",
        "lang": "en",
        "title": "Travel Policy 2026",
        "parts": {
            1: [
                ("h1", "Kessling Logistik GmbH - Travel Policy 2026"),
                ("p", "Valid from 1 February 2026. Owner: Finance department, travel office (Lena Marquardt)."),
                ("h2", "Booking"),
                (
                    "p",
                    "All business trips are booked through the travel agency Traventa Reisen, account number "
                    "KL-44817, at least ten working days before departure where possible. Bookings made privately "
                    "are reimbursed only if the agency could not offer a cheaper fare.",
                ),
                (
                    "p",
                    "The train is the default for trips under 600 km. Employees travel in second class; first class "
                    "is allowed for journeys of more than four hours one way.",
                ),
                (
                    "p",
                    "Flights need the written approval of the head of department and are booked in economy class "
                    "only. Domestic flights are allowed only if the train takes more than six hours.",
                ),
                (
                    "p",
                    "Rental cars are category C (compact) at most. The rental company of record is Movanto, "
                    "customer number 559-2031; other rental companies need the approval of the travel office.",
                ),
            ],
            2: [
                ("h2", "Daily allowances and hotel caps"),
                (
                    "p",
                    "The amounts below apply per calendar day. Breakfast included in the hotel price reduces the "
                    "daily allowance by 5.60 EUR. Hotel costs above the cap are paid only with the prior approval "
                    "of the travel office.",
                ),
                (
                    "table",
                    ["Destination", "Full day (EUR)", "Arrival or departure day (EUR)", "Hotel cap per night (EUR)"],
                    [
                        ["Germany", "28.00", "14.00", "115.00"],
                        ["Germany: Hamburg, Munich, Frankfurt", "28.00", "14.00", "145.00"],
                        ["Netherlands", "47.00", "32.00", "160.00"],
                        ["Poland: Warsaw", "33.00", "22.00", "105.00"],
                        ["Poland: other places", "29.00", "20.00", "86.00"],
                        ["Denmark", "75.00", "50.00", "185.00"],
                        ["Czech Republic", "32.00", "21.00", "97.00"],
                    ],
                ),
            ],
            3: [
                ("h2", "Mileage and expense claims"),
                (
                    "p",
                    "Employees who use their own car for a business trip receive 0.38 EUR per kilometre; each "
                    "colleague travelling along adds 0.02 EUR per kilometre.",
                ),
                (
                    "p",
                    "Expense claims are submitted in the portal SpesenPilot within 30 days of the end of the trip. "
                    "Claims submitted more than 90 days after the trip are not paid.",
                ),
                (
                    "p",
                    "Receipts are uploaded as scans; the paper originals are kept for twelve months. Questions go "
                    "to the travel office, extension 4127, travel@kessling-logistik.example.",
                ),
            ],
        },
    },
    {
        "file": "bahncard-regeln.md",
        "page": "reisen-und-spesen.html",
        "lang": "de",
        "title": "BahnCard-Regelung",
        "parts": {
            None: [
                ("h1", "BahnCard-Regelung"),
                ("p", "Stand: 15. Januar 2026. Zuständig: Reisestelle, Lena Marquardt."),
                ("h2", "Wer eine BahnCard bekommt"),
                (
                    "ul",
                    [
                        "Eine BahnCard 25 bekommt, wer mindestens vier Dienstreisen im Jahr mit der Bahn macht.",
                        "Eine BahnCard 50 (2. Klasse) gibt es ab voraussichtlichen Bahnkosten von 1.900 € im Jahr.",
                        "Eine BahnCard 100 bekommen nur die Geschäftsführung und der Vertriebsaußendienst Nord.",
                    ],
                ),
                ("h2", "Antrag"),
                (
                    "ol",
                    [
                        "Formular „BC-Antrag“ im Personalportal ausfüllen und die geplanten Reisen angeben.",
                        "Die Abteilungsleitung gibt den Antrag frei.",
                        "Die Reisestelle bestellt die Karte; die Lieferzeit beträgt etwa drei Wochen.",
                    ],
                ),
                ("h2", "Kostenstellen und Rückgabe"),
                (
                    "table",
                    ["Karte", "Klasse", "Kostenstelle", "Rückgabe beim Austritt"],
                    [
                        ["BahnCard 25", "2. Klasse", "4710", "nicht nötig"],
                        ["BahnCard 50", "2. Klasse", "4711", "nicht nötig"],
                        ["BahnCard 100", "1. Klasse", "4712", "innerhalb von 7 Tagen"],
                    ],
                ),
                ("h2", "Private Nutzung"),
                (
                    "p",
                    "Die private Nutzung ist erlaubt. Wer das Unternehmen innerhalb von sechs Monaten nach Ausgabe "
                    "einer BahnCard 50 verlässt, zahlt 120 € anteilig zurück.",
                ),
            ]
        },
    },
    {
        "file": "lagerzonen-2026.xlsx",
        "page": "warehouse-operations.html",
        "lang": "de",
        "title": "Lagerzonen 2026",
        "parts": {
            "Zonen": [
                [
                    "Zone",
                    "Bezeichnung",
                    "Temperatur",
                    "Regalplätze",
                    "Kapazität (Paletten)",
                    "Zonenleitung",
                ],
                ["A", "Schnelldreher", "Umgebung", 1240, 2480, "Marek Zielinski"],
                ["B", "Langsamdreher", "Umgebung", 2016, 4032, "Sabine Ohlendorf"],
                ["C", "Kühlware", "2 bis 8 °C", 420, 840, "Tomasz Brandl"],
                ["D", "Tiefkühlware", "-22 bis -18 °C", 265, 530, "Helga Dreesen"],
                ["E", "Gefahrstofflager", "Umgebung", 180, 180, "Kai-Uwe Möllenbeck"],
                ["F", "Retouren und Klärfälle", "Umgebung", 96, 192, "Nadine Yilmaz"],
            ],
            "Gefahrstoffe": [
                ["UN-Klasse", "Beschreibung", "Lagerplatz", "Höchstmenge je Platz", "Zusammenlagerung"],
                ["2.1", "Entzündbare Gase", "E1", "20 Flaschen", "nicht mit Klasse 5.1"],
                ["3", "Entzündbare Flüssigkeiten", "E2", "1.000 Liter", "nicht mit Klasse 5.1"],
                ["5.1", "Entzündend wirkende Stoffe", "E3", "400 kg", "getrennt von Klasse 2.1 und 3"],
                ["8", "Ätzende Stoffe", "E4", "600 Liter", "nur mit Auffangwanne"],
                ["9", "Lithiumbatterien und sonstige Gefahrgüter", "E5", "48 Kartons", "Ladezustand höchstens 30 %"],
            ],
        },
    },
    {
        "file": "forklift-licence-procedure.docx",
        "page": "warehouse-operations.html",
        "lang": "en",
        "title": "Forklift licence procedure",
        "parts": {
            None: [
                ("h1", "Forklift and industrial truck licence procedure"),
                ("p", "Version 3.2, approved by the warehouse management on 12 March 2026."),
                ("h2", "Who may drive"),
                (
                    "p",
                    "Only employees holding a valid internal driving permit may operate industrial trucks. "
                    "Temporary staff need the permit too; the agency's certificate alone is not enough. The minimum "
                    "age is 18 years.",
                ),
                ("h2", "Licence categories"),
                (
                    "table",
                    ["Category", "Vehicles", "Training", "Practical test", "Renewal"],
                    [
                        ["F1", "Electric pallet truck (walk-behind)", "4 h", "no", "every 3 years"],
                        ["F2", "Counterbalance forklift up to 3.5 t", "20 h", "yes", "every 2 years"],
                        ["F3", "Reach truck", "24 h", "yes", "every 2 years"],
                        ["F4", "High-level order picker", "16 h", "yes", "annually"],
                        ["F5", "Side loader", "32 h", "yes", "annually"],
                    ],
                ),
                ("h2", "How to get the permit"),
                (
                    "ol",
                    [
                        "Your supervisor requests the permit in the HR portal with form FS-07.",
                        "You pass the medical check G25 with the company doctor, Dr. Ilka Severin.",
                        "You attend the theory course in the training centre in Hall 3 and pass the written test "
                        "(pass mark 80 percent).",
                        "An instructor takes the practical test on the vehicle of your category.",
                        "The warehouse office issues the permit card within five working days.",
                    ],
                ),
                ("h2", "Losing the permit"),
                (
                    "p",
                    "A driver who causes two reportable incidents within twelve months loses the permit for at "
                    "least eight weeks and must repeat the practical test.",
                ),
            ]
        },
    },
    {
        "file": "inventur-2026.pptx",
        "page": "warehouse-operations.html",
        "lang": "de",
        "title": "Jahresinventur 2026",
        "parts": {
            1: [("h1", "Jahresinventur 2026 – Hub Altenwerth"), ("p", "Kick-off am 3. November 2026")],
            2: [
                ("h1", "Eckdaten"),
                (
                    "ul",
                    [
                        "Stichtag ist Samstag, der 19. Dezember 2026.",
                        "Gezählt wird in zwei Durchgängen; Abweichungen über 2 % werden ein drittes Mal gezählt.",
                        "Der Wareneingang schließt am Vortag um 14:00 Uhr.",
                        "Es stehen 64 Handscanner bereit, Ausgabe in der Leitstelle Halle 2.",
                    ],
                ),
            ],
            3: [
                ("h1", "Zählteams und Beginn"),
                (
                    "table",
                    ["Zone", "Zählteam", "Beginn", "Teamleitung"],
                    [
                        ["A", "Team 1 (12 Personen)", "06:00", "Jana Petrović"],
                        ["B", "Team 2 (16 Personen)", "06:00", "Olaf Wendt"],
                        ["C und D", "Team 3 (8 Personen)", "07:30", "Birgit Kaminski"],
                        ["E", "Team 4 (4 Personen)", "09:00", "Kai-Uwe Möllenbeck"],
                        ["F", "Team 5 (3 Personen)", "10:00", "Nadine Yilmaz"],
                    ],
                ),
            ],
            4: [
                ("h1", "Regeln am Zähltag"),
                (
                    "ul",
                    [
                        "Keine Warenbewegung ohne Freigabe der Inventurleitung.",
                        "Jede Zählerin und jeder Zähler erhält eine Inventurprämie von 40 €.",
                        "Mittagessen in der Kantine ab 11:30 Uhr ist kostenlos.",
                    ],
                ),
            ],
        },
    },
    {
        "file": "fleet-list-2026.xlsx",
        "page": "fuhrpark-und-touren.html",
        "lang": "en",
        "title": "Fleet list 2026",
        "parts": {
            "Trucks": [
                [
                    "Plate",
                    "Type",
                    "Payload (t)",
                    "Emission class",
                    "Home depot",
                    "Next inspection",
                    "Driver pool",
                ],
                ["AW-KL 101", "Mercedes Actros 1845 tractor", 18, "Euro VI", "Altenwerth", "2027-03", "Long haul"],
                ["AW-KL 102", "Mercedes Actros 1845 tractor", 18, "Euro VI", "Altenwerth", "2026-12", "Long haul"],
                ["AW-KL 214", "MAN TGL 12.250 box body", 5.2, "Euro VI", "Brümmen", "2027-05", "Regional"],
                ["AW-KL 215", "MAN TGL 12.250 box body", 5.2, "Euro VI", "Brümmen", "2027-01", "Regional"],
                ["AW-KL 330", "Volvo FE Electric", 9.8, "zero emission", "Sellhorst", "2027-08", "City"],
                ["AW-KL 331", "Volvo FE Electric", 9.8, "zero emission", "Sellhorst", "2027-02", "City"],
                ["AW-KL 407", "Scania R 450 with loading crane", 11.5, "Euro VI", "Altenwerth", "2026-10", "Building"],
            ],
            "Trailers": [
                ["Trailer", "Kind", "Length (m)", "Pallet spaces", "Tail lift", "Assigned to"],
                ["T-01", "Curtainsider", 13.6, 34, "no", "AW-KL 101"],
                ["T-02", "Curtainsider", 13.6, 34, "no", "AW-KL 102"],
                ["T-07", "Reefer", 13.4, 33, "no", "pool"],
                ["T-11", "Mega trailer", 13.62, 34, "no", "pool"],
                ["T-15", "City trailer", 10.5, 26, "yes", "pool"],
            ],
        },
    },
    {
        "file": "tourenplan-ruhezeiten.pdf",
        "page": "fuhrpark-und-touren.html",
        "lang": "de",
        "title": "Lenk- und Ruhezeiten, feste Touren",
        "parts": {
            1: [
                ("h1", "Lenk- und Ruhezeiten - Betriebsregeln 2026"),
                (
                    "p",
                    "Zusätzlich zu den gesetzlichen Regeln gilt bei Kessling Logistik: Die Disposition plant die "
                    "tägliche Lenkzeit mit höchstens neun Stunden. Eine Verlängerung auf zehn Stunden ist nur zweimal "
                    "pro Woche und nur nach Rücksprache mit der Disposition erlaubt.",
                ),
                (
                    "p",
                    "Nach vier Stunden Fahrt plant die Disposition eine Pause von 45 Minuten ein. Wartezeiten an der "
                    "Rampe gelten nicht als Pause, wenn der Fahrer am Fahrzeug bleiben muss.",
                ),
                (
                    "p",
                    "Die Fahrerkarte wird alle 21 Tage ausgelesen, der Massenspeicher des Fahrtenschreibers alle 60 "
                    "Tage. Das Auslesen übernimmt die Disposition in Brümmen.",
                ),
                (
                    "p",
                    "Verstöße gegen Lenk- und Ruhezeiten meldet die Fahrerin oder der Fahrer innerhalb von 24 Stunden "
                    "dem Fuhrparkleiter Ralf Hinrichsen. Wer einen Verstoß selbst meldet, wird nicht abgemahnt.",
                ),
            ],
            2: [
                ("h2", "Feste Touren ab Hub Altenwerth und Depot Brümmen"),
                (
                    "p",
                    "Die festen Touren fahren montags bis freitags. Änderungen der Abfahrtszeit gibt die Disposition "
                    "am Vortag bis 16:00 Uhr bekannt.",
                ),
                (
                    "table",
                    ["Tour", "Strecke", "Abfahrt", "Fahrzeug", "Stopps"],
                    [
                        ["T-N1", "Altenwerth - Bremen - Oldenburg", "05:15", "AW-KL 101", "14"],
                        ["T-N2", "Altenwerth - Cuxhaven", "05:45", "AW-KL 102", "9"],
                        ["T-R3", "Brümmen - Sellhorst - Brümmen", "06:30", "AW-KL 214", "22"],
                        ["T-R4", "Brümmen - Hollwede", "07:05", "AW-KL 215", "17"],
                        ["T-C5", "Stadtgebiet Sellhorst (elektrisch)", "08:00", "AW-KL 330", "31"],
                    ],
                ),
            ],
        },
    },
    {
        "file": "fuel-cards.txt",
        "page": "fuhrpark-und-touren.html",
        "lang": "en",
        "title": "Fuel cards",
        "parts": {
            None: [
                ("h1", "FUEL CARDS - RULES FOR DRIVERS (as of 2026-04-01)"),
                (
                    "p",
                    "Every truck has its own fuel card from the provider TankNord. The card belongs to the vehicle, "
                    "not to the driver, and stays in the cab.",
                ),
                ("p", "Daily limit: 600 litres of diesel per card. Electric trucks use a charging card with 250 kWh."),
                ("p", "AdBlue may be bought with the card, up to 40 litres per fill."),
                ("p", "The PIN is sent by letter to the depot manager. Never write it on the card."),
                (
                    "p",
                    "Lost or stolen card: call the TankNord hotline 0800 774 1930 at once (day and night, seven days a week), then "
                    "tell dispatch.",
                ),
                ("p", "Truck wash: one wash per vehicle and week, at most 45 EUR."),
                ("p", "Receipts go into the grey box in the dispatch office every Friday by 12:00."),
            ]
        },
    },
    {
        "file": "preisliste-stueckgut-2026.pdf",
        "page": "customer-rates.html",
        "lang": "de",
        "title": "Preisliste Stückgut 2026",
        "parts": {
            1: [
                ("h1", "Preisliste Stückgut 2026"),
                (
                    "p",
                    "Gültig ab 1. Januar 2026. Alle Preise netto in EUR je Sendung ab Rampe Hub Altenwerth. Die "
                    "Tarifzone ergibt sich aus den ersten zwei Ziffern der Postleitzahl des Empfängers.",
                ),
                (
                    "table",
                    ["Tarifzone", "PLZ-Bereiche", "bis 100 kg", "bis 300 kg", "bis 500 kg", "bis 1.000 kg"],
                    [
                        ["Zone 1", "26, 27, 28", "38,90", "61,40", "84,20", "132,50"],
                        ["Zone 2", "19, 21, 22, 29, 49", "44,60", "72,80", "99,10", "158,00"],
                        ["Zone 3", "20, 23, 24, 25, 30, 31, 48", "52,30", "86,90", "118,40", "189,70"],
                        ["Zone 4", "übrige Postleitzahlen in Deutschland", "61,70", "103,20", "141,60", "227,30"],
                    ],
                ),
            ],
            2: [
                ("h2", "Bedingungen"),
                (
                    "p",
                    "Sendungen über 1.000 kg werden nach Lademeter abgerechnet; das Angebot dafür erstellt der "
                    "Vertrieb.",
                ),
                ("p", "Das Zahlungsziel beträgt 21 Tage netto ab Rechnungsdatum."),
                (
                    "p",
                    "Preisänderungen kündigt der Vertrieb sechs Wochen vorher schriftlich an. Zuschläge stehen in "
                    "der gesonderten Zuschlagsliste.",
                ),
                ("p", "Ansprechpartnerin im Vertrieb: Carina Wollenweber, Durchwahl 4310."),
            ],
        },
    },
    {
        "file": "surcharges-2026.csv",
        "page": "customer-rates.html",
        "lang": "en",
        "title": "Surcharges 2026",
        "delimiter": ",",
        "encoding": "utf-8",
        "parts": {
            None: [
                ["code", "surcharge", "amount", "unit", "applies to"],
                ["FSC", "Fuel surcharge", "8.4", "% of freight", "all shipments, adjusted monthly"],
                ["AVI", "Phone notice before delivery", "6.50", "EUR per shipment", "on request"],
                ["HBB", "Tail-lift delivery", "22.00", "EUR per shipment", "packages over 30 kg"],
                ["ISL", "Delivery to North Sea islands", "48.00", "EUR per shipment", "island postcodes"],
                ["ADR", "Dangerous goods handling", "17.50", "EUR per shipment", "ADR shipments"],
                ["WTE", "Waiting time after 30 free minutes", "0.85", "EUR per minute", "all shipments"],
                ["SAT", "Saturday delivery", "65.00", "EUR per shipment", "on request"],
                ["TMP", "Temperature-controlled transport", "18.5", "% of freight", "chilled goods"],
            ]
        },
    },
    {
        "file": "sales-review-q3-2026.pptx",
        "page": "customer-rates.html",
        "lang": "en",
        "title": "Sales review Q3 2026",
        "parts": {
            1: [("h1", "Sales review Q3 2026"), ("p", "Sales team meeting, 14 October 2026")],
            2: [
                ("h1", "Highlights"),
                (
                    "ul",
                    [
                        "Revenue in Q3: 11.6 million EUR, 7 percent above Q3 2025.",
                        "Largest new customer: Hollwede Agrartechnik, 1,450 pallets a month from November.",
                        "Three accounts lost, all of them in zone 4.",
                        "The claims rate fell to 0.31 percent of shipments.",
                    ],
                ),
            ],
            3: [
                ("h1", "Revenue by region (thousand EUR)"),
                (
                    "table",
                    ["Region", "Q3 2025", "Q3 2026", "Change", "Key account manager"],
                    [
                        ["North coast", "3,120", "3,410", "+9.3%", "Jens Abendroth"],
                        ["Weser-Ems", "2,880", "3,050", "+5.9%", "Merve Aksoy"],
                        ["Hamburg metro area", "2,470", "2,690", "+8.9%", "Piet Harmsen"],
                        ["Southern Lower Saxony", "1,760", "1,840", "+4.5%", "Ulla Steinbrink"],
                        ["Export (NL, DK)", "600", "610", "+1.7%", "Jens Abendroth"],
                    ],
                ),
            ],
            4: [
                ("h1", "Goals for Q4"),
                (
                    "ul",
                    [
                        "Win two new contract logistics customers.",
                        "Raise on-time delivery from 94.2 to 96 percent.",
                        "Open the customer portal KessTrack to all accounts by 1 December 2026.",
                    ],
                ),
            ],
        },
    },
    {
        "file": "schichtzulagen-2026.docx",
        "page": "personal-und-schichten.html",
        "lang": "de",
        "title": "Schichtzulagen 2026",
        "parts": {
            None: [
                ("h1", "Schichtzulagen und Zuschläge 2026"),
                (
                    "p",
                    "Gültig ab 1. April 2026 nach der Betriebsvereinbarung BV 2026/03. Ansprechpartner in der "
                    "Personalabteilung: Frank Osterloh, Durchwahl 4520.",
                ),
                ("h2", "Zuschläge"),
                (
                    "table",
                    ["Art", "Zeitraum", "Zuschlag", "Hinweis"],
                    [
                        ["Spätschicht", "14:00 bis 22:00 Uhr", "12 %", "ab der ersten Stunde"],
                        ["Nachtschicht", "22:00 bis 06:00 Uhr", "27 %", "steuerfrei bis 25 %"],
                        ["Samstag", "ganztägig", "15 %", "nicht zusätzlich zur Spätschicht"],
                        ["Sonntag", "ganztägig", "50 %", "zusätzlich zur Nachtschicht"],
                        ["Feiertag", "ganztägig", "125 %", "24.12. und 31.12. ab 14:00 Uhr wie Feiertag"],
                        ["Rufbereitschaft", "je Woche", "180 € pauschal", "Einsatzzeit wird extra bezahlt"],
                    ],
                ),
                ("h2", "Regeln"),
                ("p", "Die Zuschläge werden mit dem Gehalt des Folgemonats ausgezahlt."),
                (
                    "p",
                    "Wer in einer Woche mehr als zwei Nachtschichten hat, bekommt innerhalb von vier Wochen einen "
                    "zusätzlichen freien Tag.",
                ),
                (
                    "p",
                    "Schichten dürfen getauscht werden, wenn die Schichtleitung mindestens 48 Stunden vorher zustimmt.",
                ),
            ]
        },
    },
    {
        "file": "onboarding-checklist.md",
        "page": "personal-und-schichten.html",
        "lang": "en",
        "title": "Onboarding checklist",
        "parts": {
            None: [
                ("h1", "Onboarding checklist for new warehouse and office staff"),
                ("p", "Owner: HR, Frank Osterloh. Last reviewed on 2026-06-02."),
                ("h2", "Before the first day"),
                (
                    "ul",
                    [
                        "The hiring manager orders safety shoes (class S3) in the portal; the budget is 95 EUR a pair.",
                        "IT creates the account; the login is the first letter of the first name plus the surname.",
                        "Reception prepares the visitor parking permit for the first week.",
                    ],
                ),
                ("h2", "The first week"),
                (
                    "table",
                    ["Day", "What", "Where", "With whom"],
                    [
                        ["Monday", "Welcome, badge photo, keys", "Reception, Building A", "Anke Tiedemann"],
                        ["Tuesday", "Safety briefing and fire escape tour", "Training room 0.12", "Holger Mertens"],
                        [
                            "Wednesday",
                            "Warehouse system LagerPro and time recording",
                            "Training room 0.14",
                            "Svenja Kohl",
                        ],
                        ["Thursday", "Working alongside the team", "Own department", "The assigned buddy"],
                        ["Friday", "Feedback talk", "Manager's office", "Hiring manager"],
                    ],
                ),
                ("h2", "Probation"),
                (
                    "p",
                    "The probation period is six months. The feedback talk after three months is mandatory and is "
                    "documented on form HR-14.",
                ),
            ]
        },
    },
    {
        "file": "urlaubsregelung.txt",
        "page": "personal-und-schichten.html",
        "lang": "de",
        "title": "Urlaubsregelung",
        "encoding": "cp1252",
        "parts": {
            None: [
                ("h1", "URLAUBSREGELUNG KESSLING LOGISTIK (Stand 01.01.2026)"),
                ("p", "Der Grundurlaub beträgt 28 Arbeitstage bei einer Fünf-Tage-Woche."),
                (
                    "p",
                    "Zusatzurlaub nach Betriebszugehörigkeit: ab 5 Jahren 1 Tag, ab 10 Jahren 2 Tage, ab 15 Jahren "
                    "3 Tage.",
                ),
                ("p", "Urlaubssperre im Lager: 1. bis 23. Dezember und die Woche der Jahresinventur."),
                (
                    "p",
                    "Urlaub in den Sommerferien wird bis zum 31. Januar im Personalportal beantragt; die Schichtleitung "
                    "entscheidet bis Ende Februar.",
                ),
                ("p", "Resturlaub verfällt am 31. März des Folgejahres."),
                ("p", "Bis zu fünf Urlaubstage im Jahr dürfen auf das Langzeitkonto übertragen werden."),
            ]
        },
    },
    {
        "file": "arbeitsschutz-unterweisung-2026.pptx",
        "page": "safety-and-quality.html",
        "lang": "de",
        "title": "Arbeitsschutz-Unterweisung 2026",
        "parts": {
            1: [("h1", "Arbeitsschutz-Unterweisung 2026"), ("p", "Holger Mertens, Fachkraft für Arbeitssicherheit")],
            2: [
                ("h1", "Unfallzahlen 2025"),
                (
                    "ul",
                    [
                        "23 meldepflichtige Unfälle (2024: 31).",
                        "Häufigste Ursache: Stolpern über Folienreste an der Rampe.",
                        "Ausfalltage insgesamt: 412.",
                    ],
                ),
            ],
            3: [
                ("h1", "Pflichtunterweisungen"),
                (
                    "table",
                    ["Thema", "Zielgruppe", "Intervall", "Dauer", "Durchführung"],
                    [
                        ["Allgemeine Unterweisung", "alle", "jährlich", "60 Minuten", "Holger Mertens"],
                        ["Flurförderzeuge", "Staplerfahrer", "jährlich", "45 Minuten", "Lagerleitung"],
                        ["Gefahrstoffe", "Zone E und Wareneingang", "halbjährlich", "90 Minuten", "Kai-Uwe Möllenbeck"],
                        ["Ladungssicherung", "Fahrer und Verlader", "jährlich", "120 Minuten", "Fuhrparkleitung"],
                        ["Erste Hilfe", "Ersthelfer", "alle 2 Jahre", "9 Unterrichtseinheiten", "Johanniter"],
                        ["Brandschutz", "Brandschutzhelfer", "alle 3 Jahre", "4 Stunden", "Feuerwehr Altenwerth"],
                    ],
                ),
            ],
            4: [
                ("h1", "Regeln an der Rampe"),
                (
                    "ul",
                    [
                        "Warnweste der Klasse 2 ist an allen Rampen Pflicht.",
                        "Höchstgeschwindigkeit auf dem Hof: 10 km/h.",
                        "Rauchen nur in der Raucherinsel hinter Halle 4.",
                    ],
                ),
            ],
        },
    },
    {
        "file": "auditplan-2027.csv",
        "page": "safety-and-quality.html",
        "lang": "de",
        "title": "Auditplan 2027",
        "delimiter": ";",
        "encoding": "utf-8-sig",
        "parts": {
            None: [
                ["Audit-Nr.", "Bereich", "Norm", "Termin", "Auditor", "Dauer (Tage)"],
                ["A-2701", "Wareneingang Hub Altenwerth", "ISO 9001", "02.02.2027", "Dr. Renate Falkenhagen", "1"],
                ["A-2702", "Gefahrstofflager Zone E", "ISO 14001", "16.03.2027", "Dr. Renate Falkenhagen", "1,5"],
                ["A-2703", "Kühllager Zonen C und D", "HACCP und GDP", "20.04.2027", "Thorsten Ebeling", "2"],
                ["A-2704", "Fuhrpark Brümmen", "ISO 39001", "08.06.2027", "Lea Brückner", "1"],
                ["A-2705", "Depot Sellhorst", "ISO 9001", "14.09.2027", "Thorsten Ebeling", "1"],
                ["A-2706", "Zertifizierungsaudit (extern)", "ISO 9001 und 14001", "09.11.2027", "Certora GmbH", "3"],
            ]
        },
    },
]

# ---------------------------------------------------------------------------------------------------------------
# Wiki pages: they introduce and link their attachments but hold none of the facts asked about.

PAGES: list[dict[str, Any]] = [
    {
        "file": "reisen-und-spesen.html",
        "lang": "de",
        "title": "Dienstreisen und Spesen",
        "body": [
            "Dienstreisen bei Kessling Logistik plant die Reisestelle in der Finanzabteilung. Sie bucht Bahn, Flug, "
            "Hotel und Mietwagen und beantwortet Fragen zur Abrechnung.",
            "Vor jeder Reise klärt die Mitarbeiterin oder der Mitarbeiter mit der Führungskraft, ob die Reise "
            "nötig ist oder ob eine Videokonferenz genügt. Reisen ins Ausland brauchen außerdem eine kurze Meldung "
            "an die Personalabteilung wegen der Sozialversicherung.",
            "Die Regeln stehen in den Anhängen dieser Seite: die englische Reiserichtlinie mit Tagegeldern, "
            "Hotelgrenzen und Kilometergeld sowie die Regelung, wer eine BahnCard bekommt.",
        ],
    },
    {
        "file": "warehouse-operations.html",
        "lang": "en",
        "title": "Warehouse operations at Hub Altenwerth",
        "body": [
            "Hub Altenwerth is our main warehouse. It handles incoming goods, storage in several zones, order "
            "picking and outgoing loads for the long-haul and regional tours.",
            "The zone plan with the hazardous goods storage rules is kept as a spreadsheet, the licence procedure for "
            "forklift drivers as a Word document, and the slides of the annual stocktake kick-off are attached too.",
            "The warehouse office is open on working days from early morning to late evening. Please report damaged "
            "racks at once; a blocked rack stays blocked until the rack inspector has released it.",
        ],
    },
    {
        "file": "fuhrpark-und-touren.html",
        "lang": "de",
        "title": "Fuhrpark und Tourenplanung",
        "body": [
            "Der Fuhrpark von Kessling Logistik besteht aus Sattelzugmaschinen für den Fernverkehr, Koffer-LKW für "
            "die Regionaltouren, elektrischen LKW für die Stadtbelieferung und einem Kran-LKW für Baustellen.",
            "Die Disposition in Brümmen plant die Touren und achtet auf Lenk- und Ruhezeiten. Die Fahrzeugliste, die "
            "Betriebsregeln zu Lenk- und Ruhezeiten mit den festen Touren und die Regeln für Tankkarten hängen an "
            "dieser Seite.",
            "Schäden am Fahrzeug meldet der Fahrer noch am selben Tag der Disposition, mit Fotos aus der Fahrer-App.",
        ],
    },
    {
        "file": "customer-rates.html",
        "lang": "en",
        "title": "Customer rates and surcharges",
        "body": [
            "This page collects what the sales and customer service teams need when they quote a price for general "
            "cargo: the price list by tariff zone and weight, the list of surcharges, and the latest sales review.",
            "Quotes for full truck loads, contract logistics and export are made by the sales team individually; "
            "the price list does not cover them.",
            "Customer service may grant a goodwill credit for a late delivery after checking the tracking history; "
            "larger credits go to the head of sales.",
        ],
    },
    {
        "file": "personal-und-schichten.html",
        "lang": "de",
        "title": "Personal, Schichten und Urlaub",
        "body": [
            "Die Personalabteilung sitzt im Gebäude A am Hub Altenwerth. Sie kümmert sich um Verträge, "
            "Gehaltsabrechnung, Schichtzulagen, Urlaub und die Einarbeitung neuer Kolleginnen und Kollegen.",
            "Im Lager wird in drei Schichten gearbeitet, im Büro in Gleitzeit. Die Schichtpläne erstellt die "
            "Schichtleitung jeweils für vier Wochen im Voraus.",
            "Angehängt sind die Übersicht der Schichtzulagen, die Checkliste für die Einarbeitung und die "
            "Urlaubsregelung.",
        ],
    },
    {
        "file": "safety-and-quality.html",
        "lang": "en",
        "title": "Safety and quality",
        "body": [
            "Occupational safety and quality management report to the managing director. Every employee takes part "
            "in the mandatory safety briefings; new staff get their first briefing in the first week.",
            "Accidents, near misses and quality complaints are reported in the incident form of the intranet. The "
            "quality team checks each report and decides on measures.",
            "The slides of this year's safety briefing and next year's audit plan are attached to this page.",
        ],
    },
]

FORMATS = {".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx", ".csv": "csv", ".pptx": "pptx", ".md": "md", ".txt": "txt"}


def fmt(att: dict[str, Any]) -> str:
    return FORMATS[Path(att["file"]).suffix]


def cell(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


# ---------------------------------------------------------------------------------------------------------------
# Text of each location, from the data above (what check compares the gold answers with).


def blocks_text(blocks: list[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        if block[0] in ("ul", "ol"):
            out.extend(block[1])
        elif block[0] == "table":
            out.extend(" | ".join(row) for row in [block[1], *block[2]])
        else:
            out.append(block[1])
    return "\n".join(out)


def location_texts(att: dict[str, Any]) -> dict[Any, str]:
    if fmt(att) in ("xlsx", "csv"):
        return {loc: "\n".join(" | ".join(cell(v) for v in row) for row in rows) for loc, rows in att["parts"].items()}
    return {loc: blocks_text(blocks) for loc, blocks in att["parts"].items()}


# ---------------------------------------------------------------------------------------------------------------
# Writers, one per format.


def write_pdf(att: dict[str, Any], path: Path | None, compress: bool = True) -> bytes:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_compression(compress)
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(True, margin=20)
    pdf.set_creation_date(FIXED.replace(tzinfo=dt.timezone.utc))
    pdf.set_title(att["title"])
    pdf.set_author(AUTHOR)
    for loc, blocks in att["parts"].items():
        pdf.add_page()
        for block in blocks:
            kind = block[0]
            if kind in ("h1", "h2"):
                pdf.set_font("Helvetica", "B", 15 if kind == "h1" else 12)
                pdf.multi_cell(0, 8, block[1], new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
            elif kind == "p":
                pdf.set_font("Helvetica", "", 10.5)
                pdf.multi_cell(0, 5.5, block[1], new_x="LMARGIN", new_y="NEXT")
                pdf.ln(3)
            elif kind == "table":
                pdf.set_font("Helvetica", "", 9)
                with pdf.table(line_height=6, first_row_as_headings=True) as table:
                    for row in [block[1], *block[2]]:
                        tr = table.row()
                        for value in row:
                            tr.cell(value)
                pdf.ln(3)
        if pdf.page != loc:
            raise SystemExit(f"{att['file']}: page {loc} overflowed onto page {pdf.page}")
    data = bytes(pdf.output())
    if path is not None:
        path.write_bytes(data)
    return data


def write_docx(att: dict[str, Any], path: Path) -> None:
    import docx

    doc = docx.Document()
    props = doc.core_properties
    props.author = props.last_modified_by = AUTHOR
    props.title = att["title"]
    props.created = props.modified = FIXED
    props.revision = 1
    for block in att["parts"][None]:
        kind = block[0]
        if kind in ("h1", "h2"):
            doc.add_heading(block[1], level=1 if kind == "h1" else 2)
        elif kind == "p":
            doc.add_paragraph(block[1])
        elif kind in ("ul", "ol"):
            for item in block[1]:
                doc.add_paragraph(item, style="List Bullet" if kind == "ul" else "List Number")
        elif kind == "table":
            rows = [block[1], *block[2]]
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = "Table Grid"
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    paragraph = table.cell(r, c).paragraphs[0]
                    paragraph.add_run(value).bold = r == 0
    doc.save(str(path))


def write_xlsx(att: dict[str, Any], path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    wb.remove(wb.active)
    wb.properties.creator = AUTHOR
    wb.properties.title = att["title"]
    wb.properties.created = FIXED
    for name, rows in att["parts"].items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
        for c in ws[1]:
            c.font = Font(bold=True)
        for col in ws.columns:
            ws.column_dimensions[col[0].column_letter].width = max(len(cell(c.value)) for c in col) + 2
        ws.freeze_panes = "A2"
    wb.save(str(path))


def write_pptx(att: dict[str, Any], path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Cm, Pt

    prs = Presentation()
    props = prs.core_properties
    props.author = props.last_modified_by = AUTHOR
    props.title = att["title"]
    props.created = props.modified = FIXED
    props.revision = 1
    for loc, blocks in att["parts"].items():
        kinds = [b[0] for b in blocks]
        if loc == 1:
            slide = prs.slides.add_slide(prs.slide_layouts[0])
            slide.shapes.title.text = blocks[0][1]
            slide.placeholders[1].text = blocks[1][1]
        elif "table" in kinds:
            slide = prs.slides.add_slide(prs.slide_layouts[5])
            slide.shapes.title.text = blocks[0][1]
            rows = [blocks[1][1], *blocks[1][2]]
            shape = slide.shapes.add_table(len(rows), len(rows[0]), Cm(1), Cm(4.5), Cm(23.4), Cm(1.0) * len(rows))
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    tc = shape.table.cell(r, c)
                    tc.text = value
                    for paragraph in tc.text_frame.paragraphs:
                        for run in paragraph.runs:
                            run.font.size = Pt(13)
        else:
            slide = prs.slides.add_slide(prs.slide_layouts[1])
            slide.shapes.title.text = blocks[0][1]
            frame = slide.placeholders[1].text_frame
            frame.text = blocks[1][1][0]
            for item in blocks[1][1][1:]:
                frame.add_paragraph().text = item
    prs.save(str(path))


def write_csv(att: dict[str, Any], path: Path) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=att["delimiter"], lineterminator="\r\n")
    writer.writerows([[cell(v) for v in row] for row in att["parts"][None]])
    path.write_bytes(buf.getvalue().encode(att["encoding"]))


def markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            out.append(f"# {block[1]}\n")
        elif kind == "h2":
            out.append(f"## {block[1]}\n")
        elif kind == "p":
            out.append(f"{block[1]}\n")
        elif kind in ("ul", "ol"):
            out.append("\n".join(f"{'-' if kind == 'ul' else f'{i}.'} {x}" for i, x in enumerate(block[1], 1)) + "\n")
        elif kind == "table":
            header, rows = block[1], block[2]
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def plain_text(blocks: list[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        out.append(block[1])
        if block[0] == "h1":
            out.append("=" * len(block[1]))
        out.append("")
    return "\r\n".join(out)


def write_text(att: dict[str, Any], path: Path) -> None:
    blocks = att["parts"][None]
    text = markdown(blocks) if fmt(att) == "md" else plain_text(blocks)
    path.write_bytes(text.encode(att.get("encoding", "utf-8")))


WRITERS = {
    "pdf": write_pdf,
    "docx": write_docx,
    "xlsx": write_xlsx,
    "pptx": write_pptx,
    "csv": write_csv,
    "md": write_text,
    "txt": write_text,
}


def normalize_zip(path: Path) -> None:
    """Rewrites an Office file with fixed entry times and core-property dates, so that output is byte-identical."""
    with zipfile.ZipFile(path) as zin:
        entries = [(info.filename, zin.read(info.filename)) for info in zin.infolist()]
    stamp = FIXED.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in entries:
            if name == "docProps/core.xml":
                data = re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(<)", rb"\g<1>" + stamp + rb"\2", data)
            zout.writestr(zipfile.ZipInfo(name, date_time=ZIP_TIME), data, zipfile.ZIP_DEFLATED)


def write_page(page: dict[str, Any], path: Path) -> None:
    atts = [a for a in ATTACHMENTS if a["page"] == page["file"]]
    heading = "Anhänge" if page["lang"] == "de" else "Attachments"
    items = "\n".join(
        f'<li><a href="../attachments/{a["file"]}">{a["file"]}</a>: {escape(a["title"])}</li>' for a in atts
    )
    body = "\n".join(f"<p>{escape(p)}</p>" for p in page["body"])
    path.write_text(
        f'<html lang="{page["lang"]}">\n<head><meta charset="utf-8"><title>{escape(page["title"])}</title></head>\n'
        f"<body>\n<h1>{escape(page['title'])}</h1>\n{body}\n<h2>{heading}</h2>\n<ul>\n{items}\n</ul>\n"
        "</body>\n</html>\n",
        encoding="utf-8",
    )


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def generate(out: Path) -> None:
    (out / "pages").mkdir(parents=True, exist_ok=True)
    (out / "attachments").mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        write_page(page, out / "pages" / page["file"])
    for att in ATTACHMENTS:
        path = out / "attachments" / att["file"]
        WRITERS[fmt(att)](att, path)
        if fmt(att) in ("docx", "xlsx", "pptx"):
            normalize_zip(path)
    manifest = {
        "pages": [{"file": p["file"], "title": p["title"], "language": p["lang"]} for p in PAGES],
        "attachments": [
            {
                "file": a["file"],
                "container_page": a["page"],
                "language": a["lang"],
                "format": fmt(a),
                "title": a["title"],
                "locations": [loc for loc in a["parts"] if loc is not None],
                **({"encoding": a["encoding"]} if "encoding" in a else {}),
            }
            for a in ATTACHMENTS
        ],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# Check: reads the written files back (except PDFs) and the data, and compares them with questions.json.


def read_back(att: dict[str, Any], path: Path) -> dict[Any, str] | None:
    kind = fmt(att)
    if kind == "docx":
        import docx

        doc = docx.Document(str(path))
        parts = [p.text for p in doc.paragraphs]
        parts += [c.text for t in doc.tables for row in t.rows for c in row.cells]
        return {None: "\n".join(parts)}
    if kind == "xlsx":
        from openpyxl import load_workbook

        wb = load_workbook(str(path))
        return {ws.title: "\n".join(cell(c.value) for row in ws.iter_rows() for c in row) for ws in wb.worksheets}
    if kind == "pptx":
        from pptx import Presentation

        texts: dict[Any, str] = {}
        for number, slide in enumerate(Presentation(str(path)).slides, 1):
            parts = []
            for shape in slide.shapes:
                if shape.has_text_frame:
                    parts.append(shape.text_frame.text)
                if shape.has_table:
                    parts += [c.text for row in shape.table.rows for c in row.cells]
            texts[number] = "\n".join(parts)
        return texts
    if kind in ("csv", "md", "txt"):
        return {None: path.read_bytes().decode(att.get("encoding", "utf-8"))}
    return pdf_lines(att)


def pdf_lines(att: dict[str, Any]) -> dict[Any, str]:
    """The text lines of each page, from an uncompressed rendering of the same PDF (no PDF reader is assumed)."""
    raw = write_pdf(att, None, compress=False)
    streams = [s for s in re.findall(rb"stream\r?\n(.*?)endstream", raw, re.S) if b" Tj" in s]
    if len(streams) != len(att["parts"]):
        raise SystemExit(f"{att['file']}: {len(streams)} content streams for {len(att['parts'])} pages")
    texts = {}
    for loc, stream in zip(att["parts"], streams):
        strings = re.findall(rb"\(((?:\\.|[^\\)])*)\) ?Tj", stream)
        texts[loc] = "\n".join(re.sub(rb"\\(.)", rb"\1", s).decode("latin-1") for s in strings)
    return texts


def html_text(path: Path) -> str:
    return re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))


def check(out: Path) -> int:
    questions = json.loads((Path(__file__).parent / "questions.json").read_text(encoding="utf-8"))
    by_file = {a["file"]: a for a in ATTACHMENTS}
    data = {a["file"]: location_texts(a) for a in ATTACHMENTS}
    files = {a["file"]: read_back(a, out / "attachments" / a["file"]) for a in ATTACHMENTS}
    pages = " ".join(html_text(out / "pages" / p["file"]) for p in PAGES).lower()
    problems: list[str] = []
    ids: set[str] = set()
    for q in questions:
        qid, gold, loc, answer = q["id"], q["gold_attachment"], q["gold_location"], q["answer"]
        if qid in ids:
            problems.append(f"{qid}: duplicate id")
        ids.add(qid)
        if gold not in by_file:
            problems.append(f"{qid}: unknown attachment {gold}")
            continue
        att = by_file[gold]
        if (loc is None) != (fmt(att) not in ("pdf", "xlsx", "pptx")):
            problems.append(f"{qid}: location {loc!r} does not fit a {fmt(att)} file")
        if loc not in data[gold]:
            problems.append(f"{qid}: no location {loc!r} in {gold}")
            continue
        if answer not in data[gold][loc]:
            problems.append(f"{qid}: {answer!r} not in {gold} at {loc!r} (data)")
        back = files[gold]
        if back is not None and answer not in back.get(loc, ""):
            problems.append(f"{qid}: {answer!r} not in {gold} at {loc!r} (file read back)")
        if answer.lower() in pages:
            problems.append(f"{qid}: {answer!r} occurs in an HTML page")
        others = [f for f, texts in data.items() if f != gold and any(answer in t for t in texts.values())]
        if others:
            problems.append(f"{qid}: {answer!r} also occurs in {', '.join(others)} (the gold would be ambiguous)")
        if q["language"] not in ("en", "de") or q["half"] not in (1, 2) or q["answer_kind"] not in ("cell", "sentence"):
            problems.append(f"{qid}: bad language, half or answer_kind")
    n = len(questions)
    golds = {q["gold_attachment"] for q in questions}
    german = sum(q["language"] == "de" for q in questions)
    cells = sum(q["answer_kind"] == "cell" for q in questions)
    cross = [q for q in questions if q["language"] != by_file[q["gold_attachment"]]["lang"]]
    en_over_de = sum(q["language"] == "en" for q in cross)
    gold_langs = {by_file[f]["lang"] for f in golds}
    halves = [sum(q["half"] == h for q in questions) for h in (1, 2)]
    print(
        f"questions {n} (half 1: {halves[0]}, half 2: {halves[1]}); attachments {len(ATTACHMENTS)}, gold {len(golds)}"
    )
    print(f"german {german} ({german / n:.0%}), english {n - german}; cell {cells}, sentence {n - cells}")
    print(f"cross-language {len(cross)} (en over de {en_over_de}, de over en {len(cross) - en_over_de})")
    for name, ok in [
        ("at least 48 questions", n >= 48),
        ("at least 10 gold attachments", len(golds) >= 10),
        ("both attachment languages", gold_langs == {"en", "de"}),
        ("at least 40% German questions", german >= 0.4 * n),
        ("at least 15 cell lookups", cells >= 15),
        ("cross-language both ways", en_over_de > 0 and len(cross) > en_over_de),
        ("halves within 10%", abs(halves[0] - halves[1]) <= 0.1 * n),
    ]:
        if not ok:
            problems.append(f"quota: {name}")
    for problem in problems:
        print("PROBLEM:", problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        sys.stderr.write(__doc__ or "")
        return 2
    out = Path(args[0])
    generate(out)
    return check(out) if "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
