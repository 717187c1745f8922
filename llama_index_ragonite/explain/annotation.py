"""Where an attribution goes on a LlamaIndex response: its metadata and copies of its source nodes.

``response.metadata["attribution"]`` holds the ``Attribution`` itself, which is also the read-only
mapping of its JSON form (``results.AttachedAttribution``: ``json.dumps(response.metadata)`` works,
and ``["evidences"]`` reads as before); each source node gets
``attribution_share`` and ``attribution_cluster`` metadata, hidden from the LLM and embedding
views. Source nodes are copied before they are annotated, so the index's own node objects
never change. Source nodes beyond the attributed ones (a synthesizer's
``additional_source_nodes``) get ``None``: they were not in the answer's context.
"""

from __future__ import annotations

from typing import Any, Dict

from llama_index_ragonite.explain.results import AttachedAttribution, Attribution

SHARE_KEY, CLUSTER_KEY = "attribution_share", "attribution_cluster"


def attach_attribution(response: Any, attribution: Attribution) -> AttachedAttribution:
    """Put ``attribution`` into the response's metadata and onto copies of its source nodes; returns
    what the metadata now holds (the attribution, also its JSON mapping)."""
    attached = AttachedAttribution.attach(attribution)
    response.metadata = dict(getattr(response, "metadata", None) or {})
    response.metadata["attribution"] = attached
    cluster_of: Dict[int, int] = {m: k + 1 for k, c in enumerate(attribution.clusters) for m in c.members}
    annotated = []
    for i, hit in enumerate(response.source_nodes):
        node = hit.node.model_copy(deep=False)
        share = attribution.evidence_shares[i] if i < len(attribution.evidence_shares) else None
        node.metadata = {**hit.node.metadata, SHARE_KEY: share, CLUSTER_KEY: cluster_of.get(i)}
        node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, SHARE_KEY, CLUSTER_KEY]
        node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, SHARE_KEY, CLUSTER_KEY]
        annotated.append(hit.model_copy(update={"node": node}))
    response.source_nodes[:] = annotated
    return attached
