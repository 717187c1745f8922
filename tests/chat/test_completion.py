import asyncio
from typing import Any, List

import pytest
from fakes import collected_events
from llama_index.core.llms import ChatMessage, CompletionResponse, CustomLLM, LLMMetadata, MessageRole
from llama_index.core.llms.callbacks import llm_completion_callback

from llama_index_ragonite import LLMQuestionCompleter, OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.chat.completion import carried_terms, clean_completion, content_terms
from llama_index_ragonite.chat.conversation_retrieval import TOPIC_KEY
from llama_index_ragonite.events import QuestionCompletedEvent
from llama_index_ragonite.text import refers_back


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


EN = [
    user("Which hypervisor version does the Falcon 3 build server run?"),
    assistant("Falcon 3 runs Xen 4.14 [Source 1]."),
    user("And the kernel?"),
    assistant("Linux 5.10 [Source 2]."),
]
DE = [
    user("Welche Hypervisor-Version läuft auf dem Falcon 3 Buildserver?"),
    assistant("Xen 4.14 [Source 1]."),
]


class RecordingLLM(CustomLLM):
    """Answers with a fixed text and remembers the prompts it was given."""

    reply: str = "What does the Falcon 3 build server log?"
    prompts: List[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.reply)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError


def strict() -> OfflineQuestionCompleter:
    """The completer that completes only the turns that need it (not the default: see its docstring)."""
    return OfflineQuestionCompleter(every_turn=False)


@pytest.fixture
def events():
    with collected_events() as collected:
        yield collected


# ---------------------------------------------------------------- offline


def test_first_turn_is_returned_unchanged():
    completer = strict()
    message = "Which hypervisor version does the Falcon 3 build server run?"
    assert completer.complete([], message) == message
    # Assistant messages alone are not a conversation to complete from.
    assert completer.complete([assistant("Hello! Ask me about the wiki.")], message) == message


def carried(completed: str, message: str) -> list:
    """The words the completer put in front of the (verbatim) new turn."""
    assert completed.endswith(" " + message)
    return completed[: -len(message)].split()


def test_a_turn_that_points_back_gets_the_previous_turn_s_page_after_the_word_that_points():
    history = [ChatMessage(role=MessageRole.USER, content=EN[0].content, additional_kwargs={TOPIC_KEY: "Falcon 3"})]
    assert strict().complete(history, "Where are its logs stored?") == "Where are its (Falcon 3) logs stored?"
    # no page recorded (a history from elsewhere): the previous turn's content words
    assert strict().complete(EN[:1], "Who maintains it?") == (
        "Who maintains it (hypervisor version Falcon 3 build server run)?"
    )


def test_a_german_turn_that_points_back_gets_its_referent_too():
    history = [ChatMessage(role=MessageRole.USER, content=DE[0].content, additional_kwargs={TOPIC_KEY: "Buildserver"})]
    assert (
        strict().complete(history, "Wo liegen dort die Logdateien?") == "Wo liegen dort (Buildserver) die Logdateien?"
    )


def test_an_ellipsis_gets_the_previous_question_without_the_numbers_it_brings_its_own_of():
    history = [user("Which platform failed the UEFI OTA upgrade in Aurora 2.0?")]
    assert strict().complete(history, "And in Aurora 1.9?") == (
        "And in Aurora 1.9? (Which platform failed the UEFI OTA upgrade in Aurora)"
    )
    assert strict().complete(history, "And the BIOS?") == (
        "And the BIOS? (Which platform failed the UEFI OTA upgrade in Aurora 2.0?)"
    )
    # a previous turn that pointed back itself brings its page along
    titled = [ChatMessage(role=MessageRole.USER, content="Who owns it?", additional_kwargs={TOPIC_KEY: "OTA server"})]
    assert strict().complete(titled, "And the backup?") == "And the backup? (Who owns it? – OTA server)"


def test_self_contained_turn_is_left_unchanged():
    history = [user("Who maintains the Falcon build server?")]
    message = "Which ports does the Falcon build server open?"
    assert strict().complete(history, message) == message  # names its subject
    assert (
        strict().complete(EN, "Is it possible to run Xen 4.14 on OpenXT?")
        == "Is it possible to run Xen 4.14 on OpenXT?"
    )
    for message in (
        "Which packages does a Debian Wheezy build machine need?",
        "Welche Pakete braucht OpenXT 9?",
        "Who grants access to the build server?",  # names nothing the old word rules knew: still its own
        "Wer vergibt den Zugang zum Build-Server?",
        "What is the recommended configuration?",  # conversation retrieval finds the page; the words stay
    ):
        assert strict().complete(EN, message) == message
    assert not OfflineQuestionCompleter().every_turn
    assert OfflineQuestionCompleter(every_turn=True).complete(history, message).endswith(" " + message)
    # every_turn prefixes a follow-up, never rewrites it, and caps the prefix
    long_history = [user(" ".join(f"term{i}" for i in range(50)))]
    capped = OfflineQuestionCompleter(max_terms=5, every_turn=True).complete(long_history, "Where is it?")
    assert capped == "term0 term1 term2 term3 term4 Where is it?"


def test_a_question_that_opens_with_a_preposition_before_its_question_word_is_no_fragment():
    history = [user("Which organisation holds the copyright of the SELinux Installer page?")]
    for message in ("Auf was basiert die SELinux-Policy-Sprache?", "On which language is SELinux-Policy based?"):
        assert strict().complete(history, message) == message  # names its subject: asked as is
    for fragment in ("For TPM?", "Von SELinux-Policy?"):  # a preposition and a name: still a fragment
        assert strict().complete(history, fragment) != fragment


def test_off_topic_question_after_an_ota_conversation_is_unchanged():
    ota = [
        user("Who owns the OTA server?"),
        assistant("Bob owns the service [Source 1]."),
        user("Wer ist für den OTA-Server zuständig?"),
    ]
    for message in ("What is the capital of France?", "Was ist die Hauptstadt von Frankreich?"):
        assert strict().complete(ota, message) == message
    # the stray turn does not poison the next one: a follow-up points back to it, not to OTA
    history = ota + [user("What is the capital of France?")]
    assert strict().complete(history, "And its population?") == "And its (capital France) population?"


@pytest.mark.parametrize(
    "message",
    ["Und die Firmware?", "Und was ist mit TPM?", "Wofür steht das?",
     "Was war der Grund dafür?", "Welche QEMU Version wurde für diese Tests genutzt?", "Wie lautet dessen Version?"],
)  # fmt: skip
def test_german_ellipsis_and_pronouns_are_completed(message):
    history = [user("Welche AMD Grafikkarte wurde mit dem HP 8300 in den GPU Passthrough Tests geprüft?")]
    assert "HP 8300" in strict().complete(history, message)


def test_german_sein_points_back_only_before_its_noun():
    assert refers_back("Wie alt ist sein Treiber?")  # the possessive: whose driver?
    assert not refers_back("Wie heiß muss der Ofen für Pizza sein?")  # the verb, ending the clause
    assert not refers_back("Wie groß darf die Partition sein, wenn ich verschlüssele?")
    assert not refers_back("Wie heiß muss der Ofen sein und wie lange?")  # a conjunction goes on
    assert refers_back("Wie heißt sein 2. Laptop?")  # a number or a quote opens its noun


def test_it_of_how_long_does_it_take_to_points_back_only_without_its_subject():
    # the "it" of "does it take to/for …" stands for what follows, as in "is it possible to …"
    assert not refers_back("How long does it take to learn to swim?")
    assert not refers_back("Does it take long to install?")
    assert not refers_back("how long does it take for a typical run until an oxt dir is created?")
    assert refers_back("How long does it take?")  # what takes long: the conversation's subject
    assert refers_back("How long does it take to build it?")  # the second "it" points back
    assert refers_back("Which steps does it take?")
    assert not refers_back("Does it take a long time to install?")  # a span of time, then what takes it
    for idiom in ("When does it take effect for new VMs?", "Does it take priority for USB devices?"):
        assert refers_back(idiom)  # "it" is the conversation's subject
    assert refers_back("How long does it take them to fix?")  # a pronoun is no span of time


def test_completion_follows_the_topic_the_conversation_moved_to():
    history = [
        user("Which BIOS version did the Dell Optiplex 7040 use in the OpenXT 9.0 tests?"),
        user("Which XenMou PCI vendor ID is assigned?"),  # self-contained: a new topic
    ]
    assert strict().complete(history, "And its device class?") == (
        "And its (XenMou PCI vendor ID assigned) device class?"  # not the BIOS turn's words
    )


def test_offline_is_deterministic_and_configurable():
    a = strict().complete(EN, "What about the firmware?")
    assert a == strict().complete(EN, "What about the firmware?") and a.startswith("What about the firmware? (")
    every = OfflineQuestionCompleter(every_turn=True)
    after = OfflineQuestionCompleter(every_turn=True, context_first=False).complete(EN, "What about the firmware?")
    assert after.startswith("What about the firmware? ")
    assert sorted(after.split()) == sorted(every.complete(EN, "What about the firmware?").split())
    without = OfflineQuestionCompleter(every_turn=True, extra_stopwords=["falcon"]).complete(EN, "What about it?")
    assert "Falcon" not in without
    assert OfflineQuestionCompleter().to_dict()["class_name"] == "OfflineQuestionCompleter"


def test_content_terms_keep_identifiers_and_drop_stopwords():
    assert content_terms("Did the OXT-243 Repro test pass on 9.0.2 with DISTRO_FEATURE?") == [
        "OXT-243",
        "Repro",
        "test",
        "pass",
        "9.0.2",
        "DISTRO_FEATURE",
    ]
    assert content_terms("Was ist mit dem TPM dafür?") == ["TPM"]


def test_carried_terms_topic_first_then_previous_turn_skipping_known_terms():
    turns = ["Which kernel runs on Falcon?", "What about the bootloader?", "And the firmware of Falcon?"]
    assert carried_terms(turns, "Is the kernel signed?") == ["runs", "Falcon", "firmware"]  # not turn 2
    assert carried_terms(turns, "Is it signed?", max_terms=2) == ["kernel", "runs"]
    assert carried_terms(turns[:1], "Where?") == ["kernel", "runs", "Falcon"]


# ---------------------------------------------------------------- LLM


def test_llm_prompt_has_history_new_turn_and_instruction():
    llm = RecordingLLM(prompts=[])
    completed = LLMQuestionCompleter(llm=llm).complete(EN, "Where are its logs stored?")
    assert completed == "What does the Falcon 3 build server log?"
    (prompt,) = llm.prompts
    assert "User: Which hypervisor version does the Falcon 3 build server run?" in prompt
    assert "Assistant: Falcon 3 runs Xen 4.14 [Source 1]." in prompt
    assert "User: And the kernel?" in prompt
    assert "User: Where are its logs stored?" in prompt
    assert "Rephrase the user's last statement into an independent question or statement." in prompt
    assert prompt.index("User: And the kernel?") < prompt.index("User: Where are its logs stored?")


def test_llm_history_is_cut_to_max_turns():
    llm = RecordingLLM(prompts=[])
    history = EN + [user("And the bootloader?"), assistant("GRUB 2 [Source 3].")]
    LLMQuestionCompleter(llm=llm, max_history_turns=1).complete(history, "Where?")
    assert "kernel" not in llm.prompts[0]  # the middle turn is cut, the first (the topic) and the last stay
    assert (
        "User: Which hypervisor version does the Falcon 3 build server run?\n"
        "Assistant: Falcon 3 runs Xen 4.14 [Source 1].\n"
        "User: And the bootloader?\nAssistant: GRUB 2 [Source 3].\n"
    ) in llm.prompts[0]


def test_llm_first_turn_skips_the_llm():
    llm = RecordingLLM(prompts=[])
    assert LLMQuestionCompleter(llm=llm).complete([], "Where?") == "Where?"
    assert llm.prompts == []


@pytest.mark.parametrize(
    "raw, clean",
    [
        ('"Where are the Falcon 3 logs stored?"', "Where are the Falcon 3 logs stored?"),
        ("Question: Where are the Falcon 3 logs stored?", "Where are the Falcon 3 logs stored?"),
        ("  Rephrased question: „Wo liegen die Logs?“ ", "Wo liegen die Logs?"),
        ("Frage: Wo liegen die Logs?", "Wo liegen die Logs?"),
        ("Umformulierte Frage: 'Wo liegen die Logs?'", "Wo liegen die Logs?"),
        ("Which question: is it?", "Which question: is it?"),
        ("", ""),
    ],
)
def test_clean_completion(raw, clean):
    assert clean_completion(raw) == clean


def test_llm_output_is_cleaned_and_empty_output_falls_back():
    quoted = RecordingLLM(prompts=[], reply='Question: "Where are the Falcon 3 logs stored?"\n')
    assert LLMQuestionCompleter(llm=quoted).complete(EN, "Where?") == "Where are the Falcon 3 logs stored?"
    empty = RecordingLLM(prompts=[], reply="  \n")
    assert LLMQuestionCompleter(llm=empty).complete(EN, "Where are its logs?") == "Where are its logs?"


def test_llm_async_path_uses_acomplete():
    llm = RecordingLLM(prompts=[], reply="Wo liegen die Logs des Falcon 3 Buildservers?")
    completed = asyncio.run(LLMQuestionCompleter(llm=llm).acomplete(DE, "Wo liegen dort die Logs?"))
    assert completed == "Wo liegen die Logs des Falcon 3 Buildservers?"
    assert "User: Welche Hypervisor-Version läuft auf dem Falcon 3 Buildserver?" in llm.prompts[0]


@pytest.mark.parametrize(
    "message, reply, why",
    [
        ("How much does it cost for dogs?", "Dogs cost 120 EUR [Source 1].", "cites sources"),
        ("How much does it cost for dogs?", "Adopting a dog costs 120 EUR.", "answers instead of asking"),
        ("Und für Katzen?", "How much does adopting a cat cost at the shelter?", "another language"),
    ],
)
@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_reply_that_is_no_rephrased_request_is_not_used(message, reply, why, path, caplog):
    completer = LLMQuestionCompleter(llm=RecordingLLM(prompts=[], reply=reply))
    if path == "sync":
        completed = completer.complete(EN, message)
    else:
        completed = asyncio.run(completer.acomplete(EN, message))
    assert completed == message and why in completed.warning and "searched as asked" in completed.warning
    assert why in caplog.text


@pytest.mark.parametrize(
    "message, reply",
    [
        ("Which firmware does it run?", "Which firmware does the Lenovo T14 run?"),
        ("Und für Katzen?", "Wie viel kostet die Adoption einer Katze?"),
        ("List its steps", "List the steps of the Falcon 3 build."),
        ("the kernel?", "What is the kernel version of the Falcon 3 build server?"),
    ],
)
def test_a_rephrased_request_is_used(message, reply):
    completed = LLMQuestionCompleter(llm=RecordingLLM(prompts=[], reply=reply)).complete(EN, message)
    assert completed == reply and getattr(completed, "warning", None) is None


# ---------------------------------------------------------------- base class and events


def test_events_carry_message_and_completion(events):
    offline = strict()
    completed = offline.complete(EN, "Where are its logs stored?")
    asyncio.run(offline.acomplete([], "First question?"))
    LLMQuestionCompleter(llm=RecordingLLM(prompts=[])).complete(EN, "Where?")
    fired = [e for e in events if isinstance(e, QuestionCompletedEvent)]
    assert [(e.message, e.completed, e.completer) for e in fired] == [
        ("Where are its logs stored?", completed, "OfflineQuestionCompleter"),
        ("First question?", "First question?", "OfflineQuestionCompleter"),
        ("Where?", "What does the Falcon 3 build server log?", "LLMQuestionCompleter"),
    ]


def test_subclass_implements_only_the_private_hook(events):
    class Shout(QuestionCompleter):
        @classmethod
        def class_name(cls) -> str:
            return "Shout"

        def _complete(self, history, message):
            return message.upper()

    assert Shout().complete(EN, "where?") == "WHERE?"
    assert asyncio.run(Shout().acomplete(EN, "where?")) == "WHERE?"  # default async: a thread
    assert [e.completer for e in events if isinstance(e, QuestionCompletedEvent)] == ["Shout", "Shout"]
    with pytest.raises(TypeError):
        QuestionCompleter()
