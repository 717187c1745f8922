"""``EvidenceContextualizer``: page title, heading and neighbouring evidence for every node.

Why the context lives in one metadata key and not in the node text: the raw
evidence must stay addressable for display, citations and counterfactual
attribution, and LlamaIndex already renders metadata into exactly the views
that need context. So ``node.text`` stays the raw evidence (what Chroma stores,
``get_content()``), while ``metadata["context"]`` carries the header and every
other metadata key is hidden from the EMBED and LLM views: embeddings, BM25
(which tokenizes the EMBED view) and answer prompts see ``context + evidence``.
The embedding view leaves the neighbours out by default (``embed_neighbours``):
on ConfQuestions, multilingual-e5-small ranks pages better from title, section and
evidence alone (dense P@1 0.790 vs 0.728 with neighbours, 128-token cut), while BM25
(which reads the LLM view) and the LLM still profit from them. So the header lives in
two keys: ``context`` (the full header, LLM view) and ``embed_context`` (EMBED view).
The header is short by construction (a neighbour contributes one line — its
nearest row or item — cut to ``neighbour_words``), so it neither bloats
relationship snapshots nor repeats a whole table into each row.

Table rows (``row_context``): with ``"table"`` (the default, the paper's Figure 3) every row takes
the evidence before its table (the text that introduces it) and the evidence after it (its footer),
so a fact stated above a table, such as the QEMU version of a test matrix, reaches each row and not
only the first; ``"neighbours"`` gives a row the rows around it. On ConfQuestions the two retrieve
alike (hybrid + ALL P@1 0.863 vs 0.862; benchmarks/results/retrieval_confquestions.md), so the
paper's choice, which also hands the answer step the table's context, is the default.

Where the After line goes (``after_position``): ``"header"`` (the default) puts it in the header
with the others, before the evidence; ``"end"`` puts it after the evidence, as the paper's ALL
reads (title + heading + before + evidence + after). LlamaIndex renders metadata before a node's
text only, so ``"end"`` writes the line into the node's ``text_template``, which every view with a
header uses: the embedded text then holds the After line too, whatever ``embed_neighbours`` says
(as in the paper, which embeds the whole contextualized text), unless its header is empty (no title
or heading), where LlamaIndex shows the bare text. Measured in docs/parsing.md.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, cast

from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TextNode, TransformComponent

from llama_index_ragonite.events import EvidencesContextualizedEvent
from llama_index_ragonite.parsing.context_settings import SETTINGS  # the paper's ablation settings
from llama_index_ragonite.parsing.rendering import NEIGHBOUR_LABELS, context_lines, is_after_line
from llama_index_ragonite.parsing.structure import AFTER_ID, AFTER_TEXT, BEFORE_ID, BEFORE_TEXT

dispatcher = get_dispatcher(__name__)

__all__ = [
    "NEIGHBOUR_LABELS",
    "TEXT_TEMPLATE",
    "EvidenceContextualizer",
    "after_template",
    "is_table_row",
    "nearest_line",
    "shown_context",
    "template_after",
    "trailing_after",
]


def nearest_line(text: str, side: str, max_words: int) -> str:
    """The line of ``text`` nearest to a neighbour (``side`` = "first" or "last"), cut to ``max_words``."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines or max_words <= 0:
        return ""
    words = (lines[0] if side == "first" else lines[-1]).split()
    return " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")


class EvidenceContextualizer(TransformComponent):
    """Attach page title, heading path and the evidences before/after to each node.

    Works after any node parser that sets PREVIOUS/NEXT relationships (ours, or
    LlamaIndex's splitters); a neighbour missing from the batch is left out.
    Idempotent: it reads raw texts only, so running it twice gives the same nodes.
    """

    title: bool = Field(default=True, description="Prepend the page title (TTL).")
    heading: bool = Field(default=True, description="Prepend the heading path (HDR).")
    before: bool = Field(default=True, description="Add the nearest line of the previous evidence (BEF).")
    after: bool = Field(default=True, description="Add the nearest line of the next evidence (AFT).")
    neighbour_words: int = Field(default=40, ge=0, description="Words kept from a neighbouring evidence.")
    embed_neighbours: bool = Field(
        default=False, description="Also put the before/after lines into the text that is embedded."
    )
    breadcrumb: bool = Field(
        default=False,
        description="Add the page's breadcrumb (its ancestors, metadata['breadcrumb'], as Confluence pages carry).",
    )
    row_context: Literal["neighbours", "table"] = Field(
        default="table",
        description="Before/After of a table row: the evidences around its table (the paper's), or the rows around it.",
    )
    after_position: Literal["header", "end"] = Field(
        default="header",
        description="Where the After line goes: in the header before the evidence, or after the evidence (the paper's).",
    )
    context_key: str = Field(default="context", description="Metadata key that holds the context header.")
    embed_context_key: str = Field(default="embed_context", description="Metadata key of the embedded header.")
    visible_metadata_keys: List[str] = Field(
        default_factory=list, description="Other metadata keys to keep visible to embeddings and the LLM."
    )

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceContextualizer"

    @classmethod
    def from_setting(cls, setting: str, **kwargs: Any) -> "EvidenceContextualizer":
        """One of the paper's settings: NONE, TTL, HDR, BEF, AFT, ALL."""
        try:
            switches: Dict[str, Any] = dict(SETTINGS[setting.upper()])
        except KeyError:
            raise ValueError(f"Unknown contextualization {setting!r}; choose one of {list(SETTINGS)}") from None
        return cls(**switches, **kwargs)

    @classmethod
    def from_recorded(cls, settings: Optional[Dict[str, Any]]) -> "EvidenceContextualizer":
        """The contextualizer a store recorded in its manifest (the default when none was).

        Stores written before ``row_context`` existed gave rows their neighbouring rows: reopened,
        they keep doing so, so their pages stay unchanged instead of all being indexed again.
        """
        if not settings:
            return cls()
        recorded = {k: v for k, v in settings.items() if k != "class_name" and k in cls.model_fields}
        return cls(**{"row_context": "neighbours", **recorded})

    def to_dict(self, **kwargs: Any) -> Dict[str, Any]:
        """``breadcrumb`` only when on, ``after_position`` only when "end": manifests written before
        these fields existed stay byte for byte (and reopen with the placement they were built with)."""
        data = super().to_dict(**kwargs)
        if not data.get("breadcrumb"):
            data.pop("breadcrumb", None)
        if data.get("after_position") == "header":
            data.pop("after_position", None)
        return data

    def fingerprint_settings(self) -> Dict[str, Any]:
        """What a store's page fingerprints hash: ``to_dict``, without ``row_context`` when it is
        "neighbours" (and ``breadcrumb`` when off, ``after_position`` when "header"), so pages indexed
        before these fields existed keep their fingerprints."""
        data = self.to_dict()
        if data.get("row_context") == "neighbours":
            del data["row_context"]
        return data

    @property
    def setting(self) -> str:
        switches = dict(title=self.title, heading=self.heading, before=self.before, after=self.after)
        extra = "+BREADCRUMB" if self.breadcrumb else ""
        for name, value in SETTINGS.items():
            if value == switches:
                return name + extra
        return "+".join(k.upper() for k, v in switches.items() if v) + extra

    def context(
        self,
        node: BaseNode,
        by_id: Dict[str, BaseNode],
        neighbours: bool = True,
        memo: Optional[Dict[Any, Any]] = None,
    ) -> str:
        """The context header of one node ("" when every switch is off); ``neighbours=False`` omits BEF/AFT.
        With ``after_position="end"`` the After line is not in it: it follows the evidence."""
        memo = {} if memo is None else memo
        found = neighbours and (self.before or self.after)
        return self._header(node, self._neighbour_fields(node, by_id, memo) if found else {})

    def _placed(self, lines: List[str]) -> Tuple[List[str], str]:
        """``(header lines, the line after the evidence)``: with ``"end"``, a last After line goes after it."""
        if self.after_position == "end" and lines and is_after_line(lines[-1]):
            return lines[:-1], lines[-1]
        return lines, ""

    def _header(self, node: BaseNode, fields: Dict[str, str]) -> str:
        return "\n".join(self._placed(self._lines(node, fields))[0])

    def _lines(self, node: BaseNode, fields: Dict[str, str]) -> List[str]:
        """The header's lines, rendered from the node's fields and its neighbours' (``fields``: none, no BEF/AFT)."""
        switches = dict(title=self.title, breadcrumb=self.breadcrumb, heading=self.heading)
        metadata = {k: v for k, v in node.metadata.items() if k not in (BEFORE_TEXT, AFTER_TEXT)}
        return context_lines({**metadata, **fields}, before=self.before, after=self.after, **switches)

    def _context_neighbour(
        self, node: BaseNode, rel: NodeRelationship, by_id: Dict[str, BaseNode], memo: Dict[Any, Any]
    ) -> Optional[BaseNode]:
        """The evidence that gives ``node`` its Before/After: its neighbour, or for a row in
        ``row_context="table"`` its table's neighbour (found past the table's rows when they have
        no parent node; ``memo`` keeps that walk linear per table)."""
        if self.row_context != "table" or not is_table_row(node):
            return self._neighbour(node, rel, by_id)
        parent = self._neighbour(node, NodeRelationship.PARENT, by_id)
        if parent is not None:
            return self._neighbour(parent, rel, by_id)
        path, current = [], node
        while (current.node_id, rel) not in memo:
            path.append(current.node_id)
            memo[current.node_id, rel] = None  # a cycle ends here
            neighbour = self._neighbour(current, rel, by_id)
            if neighbour is None or not _same_table(neighbour, node):
                memo[current.node_id, rel] = neighbour
                break
            current = neighbour
        found = memo[current.node_id, rel]
        for node_id in path:
            memo[node_id, rel] = found
        return found

    def _neighbour_fields(self, node: BaseNode, by_id: Dict[str, BaseNode], memo: Dict[Any, Any]) -> Dict[str, str]:
        """The ids and nearest lines of the evidences that give ``node`` its Before and After (whatever the
        switches say), as structure metadata; a neighbour missing from the batch is left out."""
        fields: Dict[str, str] = {}
        for rel, id_key, text_key, side in (
            (NodeRelationship.PREVIOUS, BEFORE_ID, BEFORE_TEXT, "last"),
            (NodeRelationship.NEXT, AFTER_ID, AFTER_TEXT, "first"),
        ):
            neighbour = self._context_neighbour(node, rel, by_id, memo)
            if neighbour is not None:
                fields[id_key] = neighbour.node_id
                fields[text_key] = nearest_line(neighbour.get_content(), side, self.neighbour_words)
        return fields

    @staticmethod
    def _neighbour(node: BaseNode, rel: NodeRelationship, by_id: Dict[str, BaseNode]) -> Optional[BaseNode]:
        info = node.relationships.get(rel)
        return by_id.get(info.node_id) if isinstance(info, RelatedNodeInfo) else None

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        by_id = {node.node_id: node for node in nodes}
        wanted = [
            rel for rel, on in ((NodeRelationship.PREVIOUS, self.before), (NodeRelationship.NEXT, self.after)) if on
        ]
        missing = sum(
            1
            for node in nodes
            for rel in wanted
            if isinstance(node.relationships.get(rel), RelatedNodeInfo) and self._neighbour(node, rel, by_id) is None
        )
        # read all before writing any
        memo: Dict[Any, Any] = {}
        neighbour_fields = [self._neighbour_fields(n, by_id, memo) for n in nodes]  # each found once
        placed = [
            (self._placed(self._lines(n, fields)), self._header(n, fields if self.embed_neighbours else {}))
            for n, fields in zip(nodes, neighbour_fields)
        ]
        for node, ((header, end), embed_context), fields in zip(nodes, placed, neighbour_fields):
            for key in (BEFORE_ID, BEFORE_TEXT, AFTER_ID, AFTER_TEXT):
                node.metadata.pop(key, None)
            node.metadata.update(fields)
            if end and not header:  # no header to render: LlamaIndex would drop the template, so the line heads it
                header, end = [end], ""
            node.metadata[self.context_key] = "\n".join(header)
            node.metadata[self.embed_context_key] = embed_context
            templated = cast(TextNode, node)  # the parser's nodes are TextNodes: they carry a text template
            if self.after_position == "end" or trailing_after(templated.text_template)[1]:
                templated.text_template = after_template(end)  # a user's own template is left alone otherwise
            keys = [k for k in node.metadata if k not in self.visible_metadata_keys]
            node.excluded_embed_metadata_keys = [k for k in keys if k != self.embed_context_key]
            node.excluded_llm_metadata_keys = [k for k in keys if k != self.context_key]
            node.metadata_template = "{value}"
        dispatcher.event(
            EvidencesContextualizedEvent(setting=self.setting, nodes=len(nodes), missing_neighbours=missing)
        )
        return nodes


TEXT_TEMPLATE = "{metadata_str}\n\n{content}"  # LlamaIndex's, for a node with no After line at its end


def after_template(line: str) -> str:
    """A node's ``text_template`` with ``line`` after the evidence (braces escaped), or the default for ""."""
    return TEXT_TEMPLATE + ("\n\n" + line.replace("{", "{{").replace("}", "}}") if line else "")


def trailing_after(text: str) -> Tuple[str, str]:
    """``(text, after)``: a rendered view split from the After line its ``after_template`` put at its end."""
    head, sep, last = text.rpartition("\n\n")
    if sep and is_after_line(last) and "\n" not in last:
        return head, last
    return text, ""


def template_after(node: BaseNode) -> str:
    """The After line ``after_position="end"`` put into a node's ``text_template`` (braces unescaped), or ""."""
    return trailing_after(getattr(node, "text_template", "") or "")[1].replace("{{", "{").replace("}}", "}")


def shown_context(node: BaseNode, context_key: str = "context") -> str:
    """A node's whole context as the LLM reads it: its header and its After line, wherever placed."""
    return "\n".join(part for part in (node.metadata.get(context_key) or "", template_after(node)) if part)


def is_table_row(node: BaseNode) -> bool:
    """A verbalized table row (``HTMLEvidenceParser`` links it to its table as ``PARENT``)."""
    return node.metadata.get("evidence_type") == "table_row"


def _same_table(other: BaseNode, row: BaseNode) -> bool:
    """``other`` is a row of ``row``'s table (same page and table index)."""
    if not is_table_row(other) or other.metadata.get("table_index") != row.metadata.get("table_index"):
        return False
    return other.ref_doc_id == row.ref_doc_id
