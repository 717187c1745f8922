"""Parse and contextualize a folder of wiki pages with a stock LlamaIndex IngestionPipeline.

    python examples/ingest_wiki.py [FOLDER]     (default: examples/sample_wiki)

Prints what your embedding model, BM25 index and LLM prompt will see for each evidence.
"""

import sys
from pathlib import Path

from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import MetadataMode

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "sample_wiki"
documents = load_pages(folder)

pipeline = IngestionPipeline(
    transformations=[
        HTMLEvidenceParser(table_granularity="both", linearizer="verbalized"),
        EvidenceContextualizer(title=True, heading=True, before=True, after=True, neighbour_words=40),
    ]
)
nodes = pipeline.run(documents=documents)

for node in nodes:
    print(f"--- {node.metadata['evidence_type']} {node.node_id[:8]} (raw text: {len(node.text)} chars)")
    print(node.get_content(MetadataMode.EMBED))
print(f"\n{len(documents)} page(s), {len(nodes)} evidence nodes")
