"""A long-lived store reader for test_reader_reload.py: opens one retriever, answers queries from stdin.

Each stdin line is a query; each answer is one JSON line ``{"ids": [...], "texts": [...]}`` or
``{"error": "TypeName: message"}``. Run with the store folder as the only argument.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for fakes

from fakes import HashingEmbedding  # noqa: E402

from llama_index_ragonite.retrieval.retriever import HybridRetriever  # noqa: E402


def main() -> None:
    retriever = HybridRetriever.from_store(sys.argv[1], embed_model=HashingEmbedding(), top_n=10)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            hits = retriever.retrieve(line.strip())
            answer = {"ids": [h.node.node_id for h in hits], "texts": [h.node.text for h in hits]}
        except Exception as err:  # reported to the test, the reader goes on
            answer = {"error": f"{type(err).__name__}: {err}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
