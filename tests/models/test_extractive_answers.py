"""Issue 16's answer rules: the asked cells of a row, a second unit only as a further item, context
text for what a row lacks, out of scope when the question names what no source holds."""

from __future__ import annotations

from llama_index_ragonite import ExtractiveAnswerer
from llama_index_ragonite.models.extractive.answer_types import asked_type, holds_type
from llama_index_ragonite.models.extractive.cells import answer_cells, row_cells
from llama_index_ragonite.models.extractive.compose import drop_echo, row_answer
from llama_index_ragonite.models.extractive.scope import ScopeModel
from llama_index_ragonite.models.extractive.scoring import (
    asked_part,
    is_yes_no,
    quote_keys,
    quote_word_keys,
    word_keys,
)
from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE, cited_sources

ROW_T14 = (
    "Row 1 in Table 1: Platform is Lenovo T14, and Firmware is 1.32, and Legacy boot is Pass, and UEFI boot is Fail"
)
ROW_7070 = "Row 2 in Table 1: Platform is Dell OptiPlex 7070, and Firmware is 2.1.0, and Legacy boot is Not supported"
ROW_7070_OLD = "Row 2 in Table 1: Platform is Dell OptiPlex 7070, and Firmware is 2.0.4, and Legacy boot is Pass"
ABOVE = "The tests below ran with QEMU 1.4 on every machine."


def source(page: str, text: str, before: str = "") -> str:
    head = f"Page: {page}\n" + (f"Before: {before}\n" if before else "")
    return f"{head}\n{text}"


def prompt(question: str, *sources: str) -> str:
    blocks = "\n\n".join(f"### Source {i} ###\n{s}" for i, s in enumerate(sources, 1))
    return ANSWER_PROMPT.format(sources=blocks, history="", question=question)


def test_a_row_is_answered_with_the_asked_cell_and_its_key_cell():
    assert [c.header for c in row_cells(ROW_T14)] == ["Platform", "Firmware", "Legacy boot", "UEFI boot"]
    assert (
        row_answer(ROW_T14, "Which firmware does the Lenovo T14 run?") == "Platform is Lenovo T14, and Firmware is 1.32"
    )
    answer = ExtractiveAnswerer().complete(
        prompt("Which firmware does the Lenovo T14 run?", source("Release testing: Aurora 2.0", ROW_T14))
    )
    assert answer.text.endswith("Lenovo T14: Firmware 1.32 [Source 1]")  # the page's cells, no glue (issue 60)


MATRIX_T14 = (
    "Row 1 in Table 1: Platform is Lenovo T14, and Firmware is 1.32, and Legacy boot / OTA upgrade is Pass, "
    "and UEFI boot / Install is Pass, and UEFI boot / OTA upgrade is Fail AUR-311"
)
MATRIX_7070 = (
    "Row 2 in Table 1: Platform is Dell OptiPlex 7070, and Firmware is 2.1.0, and Legacy boot / OTA upgrade is Pass, "
    "and UEFI boot / Install is Pass, and UEFI boot / OTA upgrade is Pass"
)


def test_a_condition_the_question_states_is_quoted_and_its_sibling_columns_are_not():
    question = "Which platform failed the UEFI OTA upgrade in Aurora 2.0?"
    assert row_answer(MATRIX_T14, question, "Release testing: Aurora 2.0") == (
        "Platform is Lenovo T14, and UEFI boot / OTA upgrade is Fail AUR-311"
    )
    page = "Release testing: Aurora 2.0"
    answer = ExtractiveAnswerer().complete(prompt(question, source(page, MATRIX_T14), source(page, MATRIX_7070)))
    assert "Lenovo T14" in answer.text and "7070" not in answer.text  # the 7070 row meets no condition ("failed")


def test_a_completed_follow_up_asks_with_its_own_words_and_the_key_cell_names_the_row():
    completed = "platform failed UEFI OTA upgrade Aurora 2.0 Which firmware does it run?"
    assert asked_part(completed) == "Which firmware does it run?"
    assert asked_part("Which firmware does the Lenovo T14 run?") == "Which firmware does the Lenovo T14 run?"
    assert (
        row_answer(MATRIX_T14, completed, "Release testing: Aurora 2.0")
        == "Platform is Lenovo T14, and Firmware is 1.32"
    )


def test_a_one_letter_value_of_an_asked_column_is_quoted():
    row = "Row 3 in Table 1: Patch Name is microcode-info.patch, and State is applies, and Decision is D"
    assert row_answer(row, "What was the decision for the microcode-info.patch patch?") == (
        "Patch Name is microcode-info.patch, and Decision is D"
    )


def test_of_columns_told_apart_by_an_identifier_only_the_named_one_is_asked():
    row = (
        "Row 4 in Table 2: Machine is HP 8300, and Card is AMD Firepro W600, and AUR-101 Repro is Yes, "
        "and AUR-102 Repro is No, and AUR-103 Repro is Yes"
    )
    question = "Did the HP 8300 with the AMD Firepro W600 pass the AUR-102 Repro test?"
    assert row_answer(row, question) == "Card is AMD Firepro W600, and AUR-102 Repro is No"
    # no column named by its identifier: every Repro column is asked
    assert row_answer(row, "Which Repro tests did the HP 8300 pass?").count("Repro is") == 3


def test_the_most_specific_header_the_question_names_is_asked_not_one_named_by_fewer_of_its_words():
    row = "Row 2 in Table 1: Platform is Dell Latitude 7490, and Host Boot is UEFI, and OS Boot is Legacy"
    assert row_answer(row, "Which host boot did the Dell Latitude 7490 use?") == (
        "Platform is Dell Latitude 7490, and Host Boot is UEFI"
    )
    assert row_answer(row, "Which boot modes did the Dell Latitude 7490 use?").count("Boot is") == 2


def test_a_row_without_an_asked_cell_stays_whole():
    assert answer_cells(ROW_T14, quote_keys("Lenovo T14"), frozenset({"t14"})) is None


def test_a_second_unit_is_another_row_of_the_same_table_never_another_version_of_the_page():
    rows = [
        source(
            "GPU tests", "Row 1 in Table 1: Machine is HP 8300, and Card is AMD Radeon HD 7750, and Stubdomain is Yes"
        ),
        source(
            "GPU tests", "Row 2 in Table 1: Machine is HP 8300, and Card is AMD Firepro W600, and Stubdomain is Yes"
        ),
    ]
    both = ExtractiveAnswerer().complete(prompt("Which AMD card was checked with the HP 8300?", *rows)).text
    assert "7750" in both and "W600" in both and cited_sources(both, 2) == [1, 2]
    assert both.count("Machine is HP 8300") == 1  # the shared condition is stated once, by the first row
    versions = [source("Release testing: Aurora 2.0", ROW_7070), source("Release testing: Aurora 1.9", ROW_7070_OLD)]
    one = ExtractiveAnswerer().complete(
        prompt("Which firmware does the Dell OptiPlex 7070 have in Aurora 2.0?", *versions)
    )
    assert "2.1.0" in one.text and "2.0.4" not in one.text


def test_context_text_answers_what_the_row_lacks():
    rows = source("GPU tests", "Row 1 in Table 1: Machine is HP 8300, and Card is AMD Firepro W600", before=ABOVE)
    answer = ExtractiveAnswerer().complete(prompt("Which QEMU version ran in the GPU tests with the HP 8300?", rows))
    assert "QEMU 1.4" in answer.text and cited_sources(answer.text, 1) == [1]


def test_a_german_question_over_english_pages_is_judged_by_meaning_not_by_name_rules():
    ota = source("OTA Upgrades", "Bob owns the OTA server. Devices poll the OTA server every six hours for upgrades.")
    answerer = ExtractiveAnswerer()  # the embedded multilingual model, its calibrated scope
    assert answerer.complete(prompt("Wie backe ich einen Schokoladenkuchen?", ota)).text == OUT_OF_SCOPE
    assert answerer.complete(prompt("What is the capital of France?", ota)).text == OUT_OF_SCOPE
    assert "six hours" in answerer.complete(prompt("Wie oft fragen die Geräte ihn (OTA Upgrades) ab?", ota)).text
    assert "six hours" in answerer.complete(prompt("How often do devices poll the OTA server?", ota)).text


def test_a_clause_that_only_restates_the_question_is_left_out_of_the_quote():
    sentence = "We use a 32-bit installation of Debian Squeeze, which is the recommended configuration for builds."
    question = "What is the recommended configuration for builds?"
    assert drop_echo(sentence, question) == "We use a 32-bit installation of Debian Squeeze."
    answer = ExtractiveAnswerer().complete(prompt(question, source("Building", sentence))).text
    assert answer.endswith("We use a 32-bit installation of Debian Squeeze [Source 1].")
    # Label and value: the label the question names goes, the value stays.
    assert drop_echo("Dial-in number: 857-216-2410", "What was the dial-in number?") == "857-216-2410"
    # Nothing is cut from a clause that adds a word, or from a sentence that is all echo.
    kept = "Guest hibernation is not supported, which can break Windows boots."
    assert drop_echo(kept, "What breaks boots?") == kept
    assert drop_echo("Boots break; boots break.", "What breaks boots?") == "Boots break; boots break."


def test_a_subject_that_restates_the_question_is_left_out_before_a_noun_phrase_but_not_before_a_verb():
    assert drop_echo(
        "The main build script in the repo is do_build.sh.", "What is the main build script in the repo?"
    ) == ("do_build.sh.")
    assert drop_echo("The default is to use the COM1 port.", "What is the default port?").startswith("The default is")
    located = "The SELinux rules are located in the selinux-policy repository."
    assert drop_echo(located, "Where are the SELinux rules located?") == located
    assert drop_echo("Once a ticket is open, its status is Open.", "What is a ticket's status?").startswith("Once")
    assert drop_echo("The board is not elected.", "Is the board elected?") == "The board is not elected."


def test_a_near_copy_of_the_first_unit_from_another_source_is_left_out():
    first = "The website resides in a GitHub repository and is changed under the source code process."
    copy = "The website resides in a GitHub repository and is changed under the source code process described."
    question = "How is the website changed or contributed to?"  # "or": a comparison may quote two pages
    always = ScopeModel(weights=(0.0,) * 7, bias=10.0)  # which units are quoted, not whether to answer
    answerer = ExtractiveAnswerer(scope=always)
    answer = answerer.complete(prompt(question, source("Website", first), source("Website (copy)", copy)))
    assert cited_sources(answer.text, 2) == [1]


def test_a_yes_no_question_keeps_the_restating_clause_that_holds_its_polarity():
    sentence = "Guest hibernation is not supported within OpenXT, which can make Windows fail to boot."
    assert drop_echo(sentence, "Is guest hibernation supported within OpenXT?") == sentence
    assert is_yes_no("Is guest hibernation supported?") and is_yes_no("Wurden alle vier Generationen getestet?")
    assert not is_yes_no("Was war der Aktionspunkt für Rich?") and not is_yes_no("What was tested?")
    # A negation the question lacks is new content even where every word is the question's.
    assert drop_echo("Hibernation is not supported, which breaks boots.", "What breaks when hibernation is supported?")


def test_the_key_cell_is_a_short_value_that_names_the_row_not_a_long_description():
    row = (
        "Row 1 in Table 1: Test Desc is UIVM: test all buttons for correct functionality that are displayed, "
        "and Platform is Dell XE3, and Host Boot is UEFI"
    )
    question = "Which host boot was used when the UIVM buttons failed to shut down the guest?"
    # The long description holds the question's words, but the platform names the row.
    assert row_answer(row, question) == "Platform is Dell XE3, and Host Boot is UEFI"


def test_a_german_question_names_an_english_header_by_its_cognate():
    row = (
        "Row 4 in Table 2: Vendor is Dell, and Model is Optiplex XE2, and CPU Arch. is Haswell, "
        "and Processor(s) is Core i5-4570S, and Memory is 16G, and P/F is P"
    )
    assert quote_word_keys("Prozessor") & quote_word_keys("Processor") == {"~proces"}
    assert quote_word_keys("Plattform") & quote_word_keys("Platform")
    assert not quote_word_keys("Speicher") & quote_word_keys("Memory")  # a translation, not a cognate
    question = "Welcher Prozessor wurde für den Optiplex XE2 verwendet?"
    assert row_answer(row, question) == "Model is Optiplex XE2, and Processor(s) is Core i5-4570S"
    # The cognate keys choose what to quote, not whether to answer: scoring's keys stay as they were.
    assert not word_keys("Prozessor") & word_keys("Processor")


LEAD_IN = (
    "The feature adds a power management table to the guest. "
    "The table surfaces a number of new devices related to power management including:"
)
DEVICE_LIST = "- Two battery devices for two battery slots.\n- An AC adapter device.\n- A lid device."


def test_a_lead_in_that_ends_its_evidence_is_quoted_with_the_list_it_announces():
    question = "Which new power management devices does the table surface?"
    after = "After: - Two battery devices for two battery slots."
    lead = f"Page: Guest power management\n{after}\n\n{LEAD_IN}"
    listed = source("Guest power management", DEVICE_LIST, before=LEAD_IN)
    answer = ExtractiveAnswerer().complete(prompt(question, lead, listed)).text
    assert "An AC adapter device" in answer and "A lid device" in answer, answer
    assert cited_sources(answer, 2) == [2]  # the list holds the answer
    # the list was not retrieved: the lead-in goes on with its own After text
    alone = ExtractiveAnswerer().complete(prompt(question, lead)).text
    assert alone.rstrip(".").endswith("including: Two battery devices for two battery slots [Source 1]"), alone


def test_a_when_question_is_answered_by_the_unit_that_holds_a_date():
    question = "When was the VirtIO planning meeting held?"
    notes = (
        "The VirtIO planning meeting was held to plan the VirtIO work and was held with the VirtIO team. "
        "The meeting took place on Friday 17th July, 2020."
    )
    answer = ExtractiveAnswerer().complete(prompt(question, source("VirtIO planning", notes))).text
    assert "17th July, 2020" in answer, answer
    assert asked_type(question) == "date" and asked_type("Wann fand das Treffen statt?") == "date"
    assert asked_type("Wie lange dauert die Schulung?") == "duration" and asked_type("How many boards?") == "count"
    assert asked_type("Which firmware does it run?") == ""
    assert holds_type("a notice between one week and one day prior to the call", "date")
    assert holds_type("Devices poll every six hours.", "duration") and not holds_type("one or more domains", "count")


def test_the_asked_type_ranks_units_but_never_decides_out_of_scope():
    answerer = ExtractiveAnswerer()
    unrelated = source("Build machines", "The build machine needs 100GB of disk space since 2019.")
    for question in ("When was the office canteen renovated?", "Wann wurde die Kantine renoviert?"):
        assert answerer.complete(prompt(question, unrelated)).text == OUT_OF_SCOPE
