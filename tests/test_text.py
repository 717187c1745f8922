from llama_index_ragonite.text import detect_language


def test_detects_english_and_german_questions_by_their_function_words():
    assert detect_language("Which firmware did the Lenovo T14 run in the test?") == "en"
    assert detect_language("Welche Firmware hatte das Lenovo T14 bei dem Test?") == "de"
    assert detect_language("Lenovo T14 firmware") == "en"  # no function words: the first language
    assert detect_language("Lenovo T14 firmware", languages=("de", "en")) == "de"
    assert detect_language("Quel firmware pour le Lenovo T14 ?", languages=("en", "de", "fr")) == "fr"
