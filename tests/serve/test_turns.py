"""The table cells the page shows are read back from verbalized rows, whatever headers each row names."""

from llama_index_ragonite.serve.turns import table_cells


def test_rows_naming_different_headers_share_one_header_row():
    text = "\n".join(
        [
            "Row 1 in Table 1: Device is Lenovo T14, and Firmware is 1.32, and Result is pass",
            "Row 2 in Table 1: Device is Dell 7040, and Result is fail",  # empty firmware cell left out
            "Row 3 in Table 1: Device is HP 8300, and GPU / AMD is W600, and Result is pass",  # a merged header
        ]
    )
    assert table_cells(text, "table") == [
        ["Device", "Firmware", "Result", "GPU / AMD"],
        ["Lenovo T14", "1.32", "pass", ""],
        ["Dell 7040", "", "fail", ""],
        ["HP 8300", "", "pass", "W600"],
    ]


def test_text_in_another_form_has_no_cells():
    assert table_cells("Device | Firmware\nLenovo | 1.32", "table") is None
    assert table_cells("Row 1 in Table 1: Device is Lenovo", "passage") is None
