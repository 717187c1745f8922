"""The part of an over-long question that asks (``models.asking``), with a word-count window."""

from llama_index_ragonite.models.asking import asking_part


def fits_words(n):
    return lambda text: len(text.split()) <= n


LOG = "\n".join(f"10:{i:02d}:01 gateway attempt {i} pending" for i in range(40))


def test_a_text_that_fits_is_kept_whole():
    assert asking_part("Why? Because.", fits_words(5)) == "Why? Because."


def test_the_question_after_a_pasted_log_asks():
    assert asking_part(LOG + "\nWhat does error 809 mean?", fits_words(20)) == "What does error 809 mean?"


def test_a_question_before_the_log_asks_too_and_questions_are_kept_from_the_last_back():
    text = "Is the VPN down? Why does the gateway hang?\n" + LOG
    assert asking_part(text, fits_words(20)) == "Is the VPN down? Why does the gateway hang?"
    assert asking_part(text, fits_words(6)) == "Why does the gateway hang?"


def test_an_ordinal_inside_the_question_stays_in_it():
    text = LOG + "\nWo steht der Drucker im 3. Stock?"
    assert asking_part(text, fits_words(10)) == "Wo steht der Drucker im 3. Stock?"


def test_without_a_question_mark_the_tail_that_fits():
    text = LOG + "\nplease explain the error code"
    assert asking_part(text, fits_words(12)) == "10:39:01 gateway attempt 39 pending please explain the error code"


def test_one_unit_longer_than_the_window_keeps_its_tail_of_words():
    words = " ".join(f"w{i}" for i in range(100)) + " which one?"
    assert asking_part(words, fits_words(4)) == "w98 w99 which one?"
