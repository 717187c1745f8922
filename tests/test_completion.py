import asyncio
from typing import Any, List

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import ChatMessage, CompletionResponse, CustomLLM, LLMMetadata, MessageRole
from llama_index.core.llms.callbacks import llm_completion_callback

from llama_index_ragonite import LLMQuestionCompleter, OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.completion import carried_terms, clean_completion, content_terms, idf_table
from llama_index_ragonite.events import QuestionCompletedEvent


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


class Collect(BaseEventHandler):
    events: list = []

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event, **kwargs) -> None:
        self.events.append(event)


@pytest.fixture
def events():
    handler = Collect(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    yield handler.events
    root.event_handlers.remove(handler)


# ---------------------------------------------------------------- offline


def test_first_turn_is_returned_unchanged():
    completer = OfflineQuestionCompleter()
    message = "Which hypervisor version does the Falcon 3 build server run?"
    assert completer.complete([], message) == message
    # Assistant messages alone are not a conversation to complete from.
    assert completer.complete([assistant("Hello! Ask me about the wiki.")], message) == message


def test_pronoun_follow_up_gets_the_topic_en():
    completed = OfflineQuestionCompleter().complete(EN, "Where are its logs stored?")
    assert completed.endswith("Where are its logs stored?")
    for term in ("Falcon", "build", "server", "hypervisor"):
        assert term in completed
    # Question words and function words are not carried over.
    for word in ("Which", "does", "the", "And"):
        assert word not in completed.split()[:-5]


def test_pronoun_follow_up_gets_the_topic_de():
    completed = OfflineQuestionCompleter().complete(DE, "Wo liegen dort die Logdateien?")
    assert completed.endswith("Wo liegen dort die Logdateien?")
    assert "Falcon" in completed and "Buildserver" in completed and "Hypervisor-Version" in completed
    for word in ("Welche", "auf", "dem"):
        assert word not in completed.split()[:-5]


def test_ellipsis_carries_first_and_previous_turn():
    history = [user("Which BIOS version did the Dell Optiplex 7040 use in the OpenXT 9.0 tests?"), user("And TPM?")]
    completed = OfflineQuestionCompleter().complete(history, "und für 9.0.2?")
    assert completed.endswith("und für 9.0.2?")
    for term in ("Dell", "Optiplex", "7040", "OpenXT", "TPM", "BIOS"):
        assert term in completed.split()
    assert completed.split().count("Dell") == 1  # each term once


def test_self_contained_turn_stays_intact_and_gains_little():
    history = [user("Who maintains the Falcon build server?")]
    message = "Which ports does the Falcon build server open?"
    completed = OfflineQuestionCompleter().complete(history, message)
    # Every topic term is already there: only "maintains" is new.
    assert completed == f"maintains {message}"
    # A turn that names all its terms is never rewritten, only prefixed, and the prefix is capped.
    long_history = [user(" ".join(f"term{i}" for i in range(50)))]
    capped = OfflineQuestionCompleter(max_terms=5).complete(long_history, message)
    assert capped == "term0 term1 term2 term3 term4 " + message


def test_offline_is_deterministic_and_configurable():
    a = OfflineQuestionCompleter().complete(EN, "What about the firmware?")
    b = OfflineQuestionCompleter().complete(EN, "What about the firmware?")
    assert a == b
    after = OfflineQuestionCompleter(context_first=False).complete(EN, "What about the firmware?")
    assert after.startswith("What about the firmware?")
    assert sorted(after.split()) == sorted(a.split())
    without = OfflineQuestionCompleter(extra_stopwords=["falcon"]).complete(EN, "What about the firmware?")
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


def test_idf_table_filters_common_terms():
    idf = idf_table(["openxt build server", "openxt falcon", "openxt tpm", "openxt kernel"])
    assert idf["openxt"] < idf["falcon"]
    turns = ["Which OpenXT build server runs Falcon?"]
    assert carried_terms(turns, "Where?", idf=idf, min_idf=0.0) == ["OpenXT", "build", "server", "runs", "Falcon"]
    assert "OpenXT" not in carried_terms(turns, "Where?", idf=idf, min_idf=0.5)
    completer = OfflineQuestionCompleter.from_corpus(["openxt build server", "openxt falcon"], min_idf=0.5)
    assert "OpenXT" not in completer.complete([user("Which OpenXT build server runs Falcon?")], "Where?")


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
    LLMQuestionCompleter(llm=llm, max_history_turns=2).complete(EN, "Where?")
    assert "hypervisor" not in llm.prompts[0] and "User: And the kernel?" in llm.prompts[0]


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
    llm = RecordingLLM(prompts=[])
    completed = asyncio.run(LLMQuestionCompleter(llm=llm).acomplete(DE, "Wo liegen dort die Logs?"))
    assert completed == "What does the Falcon 3 build server log?"
    assert "User: Welche Hypervisor-Version läuft auf dem Falcon 3 Buildserver?" in llm.prompts[0]


# ---------------------------------------------------------------- base class and events


def test_events_carry_message_and_completion(events):
    offline = OfflineQuestionCompleter()
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
