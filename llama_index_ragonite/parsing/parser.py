"""``HTMLEvidenceParser``: a LlamaIndex ``NodeParser`` from wiki HTML to evidence nodes."""

from __future__ import annotations

import itertools
import uuid
from typing import Any, Callable, Dict, List, Literal, Sequence, Tuple

from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, Document, NodeRelationship, ObjectType, RelatedNodeInfo, TextNode
from llama_index.core.utils import get_tqdm_iterable

from llama_index_ragonite.events import EvidencesParsedEvent
from llama_index_ragonite.parsing.extraction import Evidence, extract_page
from llama_index_ragonite.parsing.linearize import LINEARIZERS
from llama_index_ragonite.parsing.structure import (
    ATTACHMENT_KEYS,
    CELLS,
    COMMENT_KEYS,
    EVIDENCE_KIND,
    HEADERS,
    HEADINGS,
    MODIFIED,
    MODIFIED_SOURCE,
    PAGE_ID,
    PARSER_KEYS,
    TABLE_ID,
    as_list,
    declared_modified,
)

dispatcher = get_dispatcher(__name__)

_ID_NAMESPACE = uuid.UUID("5d1f3c1e-6a8b-4d0e-9a51-7c2f0b8e4a11")

# Structural metadata: useful for filters and display, noise for embeddings and prompts.
STRUCTURAL_KEYS = (
    "evidence_type",
    "position",
    "table_index",
    "row_index",
    "column_headers",
    "url",
    *PARSER_KEYS,
    *ATTACHMENT_KEYS,
    *COMMENT_KEYS,
)


def evidence_node_id(doc_id: str, granularity: str, position: int) -> str:
    """Stable id: the same page parsed the same way always yields the same ids."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{doc_id}\x1f{granularity}\x1f{position}"))


class _Refs(dict):
    """node id -> lean relationship (id, type, hash; no metadata copy), each hash computed once."""

    def __call__(self, node: TextNode) -> RelatedNodeInfo:
        ref = self.get(node.node_id)
        if ref is None:
            ref = self[node.node_id] = RelatedNodeInfo(
                node_id=node.node_id,
                node_type=ObjectType.TEXT,
                metadata={"evidence_type": node.metadata["evidence_type"]},
                hash=node.hash,
            )
        return ref


class HTMLEvidenceParser(NodeParser):
    """Split Confluence / HTML pages into passage, list, table and table-row nodes.

    Node text is the raw evidence (tables and rows linearized); metadata holds the
    page title, url, heading path, position and table/row indexes. Relationships:
    SOURCE to the page, PREVIOUS/NEXT in page order (a table's rows chain among
    themselves and hand over to the table's neighbours at both ends), PARENT/CHILD
    between a table and its rows. Node ids derive from document id, granularity
    and position, so re-parsing an unchanged page gives identical nodes — give
    your ``Document``s stable ids (the loaders do).
    """

    table_granularity: Literal["rows", "table", "both"] = Field(
        default="both", description="Index table rows, whole tables, or both (the paper's best)."
    )
    linearizer: str = Field(default="verbalized", description=f"Table linearization: one of {sorted(LINEARIZERS)}.")

    @field_validator("linearizer")
    @classmethod
    def _known_linearizer(cls, value: str) -> str:
        if value not in LINEARIZERS:
            raise ValueError(f"Unknown table linearizer {value!r}; choose one of {sorted(LINEARIZERS)}")
        return value

    @classmethod
    def class_name(cls) -> str:
        return "HTMLEvidenceParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        out: List[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing pages"):
            page_nodes = self._page_nodes(node)
            dispatcher.event(
                EvidencesParsedEvent(
                    document_id=node.node_id,
                    counts=_count_types(page_nodes),
                )
            )
            out.extend(page_nodes)
        return out

    def _postprocess_parsed_nodes(self, nodes: List[BaseNode], parent_doc_map: Dict[str, Document]) -> List[BaseNode]:
        # Core's version searches each node's text in the page (quadratic on huge
        # tables, never matches extracted text) and rewires PREVIOUS/NEXT across
        # rows and tables; relationships and metadata are already set here.
        return nodes

    def _page_nodes(self, page: BaseNode) -> List[TextNode]:
        extracted = extract_page(page.get_content(), self.linearizer)
        base = self._page_metadata(page, extracted.title)
        modified, modified_source = declared_modified(page.metadata, extracted.modified)
        base[PAGE_ID] = page.node_id
        if modified:
            base[MODIFIED], base[MODIFIED_SOURCE] = modified, modified_source
        source = page.as_related_node_info()
        positions = itertools.count(1)  # page order, shared by passages, lists, tables and rows

        def make(evidence: Evidence) -> TextNode:
            position = next(positions)
            node_id = evidence_node_id(page.node_id, self.table_granularity, position)
            return _evidence_node(evidence, node_id, position, base, source)

        sequence, children = self._arrange(extracted.evidences, make)
        return self._link(sequence, children)

    def _page_metadata(self, page: BaseNode, extracted_title: str) -> Dict[str, Any]:
        """What every node of the page inherits: the page's metadata, a title and a url."""
        base: Dict[str, Any] = dict(page.metadata) if self.include_metadata else {}
        if not base.get("title"):
            base["title"] = extracted_title
        base.setdefault("url", "")
        return base

    def _arrange(
        self, evidences: Sequence[Evidence], make: Callable[[Evidence], TextNode]
    ) -> Tuple[List[TextNode], Dict[str, List[TextNode]]]:
        """The page-level node order (passages, lists, tables or rows) and each table's row nodes."""
        sequence: List[TextNode] = []
        children: Dict[str, List[TextNode]] = {}  # table node id -> its row nodes
        for evidence in evidences:
            if evidence.type != "table":
                sequence.append(make(evidence))
                continue
            if self.table_granularity == "rows":
                sequence.extend(make(row) for row in evidence.rows)
                continue
            table = make(evidence)
            sequence.append(table)
            _set_hidden(table, TABLE_ID, table.node_id)
            if self.table_granularity == "both" and evidence.rows:
                children[table.node_id] = [make(row) for row in evidence.rows]
                for row in children[table.node_id]:
                    _set_hidden(row, TABLE_ID, table.node_id)
        return sequence, children

    def _link(self, sequence: List[TextNode], children: Dict[str, List[TextNode]]) -> List[TextNode]:
        """Set PREVIOUS/NEXT and PARENT/CHILD; the nodes in output order (each table followed by its rows)."""
        ref = _Refs()
        if self.include_prev_next_rel:
            _chain(sequence, ref)
        out: List[TextNode] = []
        for i, node in enumerate(sequence):
            out.append(node)
            rows = children.get(node.node_id)
            if not rows:
                continue
            if self.include_prev_next_rel:
                _chain(rows, ref)
                if i > 0:
                    rows[0].relationships[NodeRelationship.PREVIOUS] = ref(sequence[i - 1])
                if i + 1 < len(sequence):
                    rows[-1].relationships[NodeRelationship.NEXT] = ref(sequence[i + 1])
            node.relationships[NodeRelationship.CHILD] = [ref(row) for row in rows]
            for row in rows:
                row.relationships[NodeRelationship.PARENT] = ref(node)
            out.extend(rows)
        return out


def _evidence_node(
    evidence: Evidence, node_id: str, position: int, base: Dict[str, Any], source: RelatedNodeInfo
) -> TextNode:
    """One evidence as a node: its text, the page metadata plus its place in the page, SOURCE to the page."""
    metadata = {
        **base,
        "evidence_type": _evidence_type(evidence, base),
        "position": position,
        "heading_path": " > ".join(evidence.heading_path),
        "heading": evidence.heading_path[-1] if evidence.heading_path else "",
        HEADINGS: as_list(evidence.heading_path),
    }
    if evidence.table_index is not None:
        metadata["table_index"] = evidence.table_index
        metadata[HEADERS] = as_list(evidence.column_headers)
    if evidence.row_index is not None:
        metadata["row_index"] = evidence.row_index
        metadata["column_headers"] = " | ".join(evidence.column_headers)
        metadata[CELLS] = as_list(evidence.cells)
    excluded = [k for k in STRUCTURAL_KEYS if k in metadata]
    return TextNode(
        id_=node_id,
        text=evidence.text,
        metadata=metadata,
        excluded_embed_metadata_keys=list(excluded),
        excluded_llm_metadata_keys=list(excluded),
        relationships={NodeRelationship.SOURCE: source},
    )


def _evidence_type(evidence: Evidence, base: Dict[str, Any]) -> str:
    """The evidence's type: its document's own kind for passages and lists (``EVIDENCE_KIND``: a page comment's
    text is a ``comment``); tables and rows keep theirs, so table handling applies to them as anywhere."""
    kind = base.get(EVIDENCE_KIND)
    return str(kind) if kind and evidence.type in ("passage", "list") else evidence.type


def _set_hidden(node: TextNode, key: str, value: Any) -> None:
    """A structure key set after the node was made, hidden from the EMBED and LLM views like the others."""
    node.metadata[key] = value
    for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        if key not in excluded:
            excluded.append(key)


def _chain(nodes: List[TextNode], ref: _Refs) -> None:
    for prev, nxt in zip(nodes, nodes[1:]):
        nxt.relationships[NodeRelationship.PREVIOUS] = ref(prev)
        prev.relationships[NodeRelationship.NEXT] = ref(nxt)


def _count_types(nodes: Sequence[BaseNode]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for node in nodes:
        kind = node.metadata["evidence_type"]
        counts[kind] = counts.get(kind, 0) + 1
    return counts
