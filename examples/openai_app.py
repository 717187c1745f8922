"""The paper's stack: bge-m3 embeddings, bge-reranker-v2-m3, GPT-4o answers and completions.

    pip install "llama-index-ragonite[bge,openai]"
    OPENAI_API_KEY=... python examples/openai_app.py [FOLDER] [STORE_DIR]

Needs hub access for the BAAI models (or local folders: pass their paths) and an OpenAI key
(or ``api_base=`` of any OpenAI-compatible server). Not run in CI: the project's machines have
neither; the same code paths are tested offline on local models and a stub OpenAI server.
"""

import sys
from pathlib import Path

from llama_index_ragonite import (
    BGEReranker,
    EvidenceStore,
    HybridRetriever,
    RagoniteChatEngine,
    bge_m3_embedding,
    load_pages,
    openai_llm,
)
from llama_index_ragonite.cli import render_turn

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "sample_wiki"
store = EvidenceStore(sys.argv[2] if len(sys.argv) > 2 else "wiki-index-bge", embed_model=bge_m3_embedding())
print(store.ingest(load_pages(folder), show_progress=True))

retriever = HybridRetriever.from_store(
    store, fusion="rerank+rrf", reranker=BGEReranker()
)  # the paper's default ranking
chat = RagoniteChatEngine(retriever, llm=openai_llm("gpt-4o"))  # completes follow-ups with the same LLM
for message in ("Which platform failed the UEFI OTA upgrade in Aurora 2.0?", "How do I fix it?"):
    print(render_turn(chat.chat(message)), end="\n\n")
