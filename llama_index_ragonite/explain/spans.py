"""Span attribution: for each claim of an answer, which evidences it rests on, from the counterfactuals.

Why: an answer with two claims from two sources gets one attribution for the whole answer; a user
wants to know where *this* sentence came from. ContextCite attributes any span of the answer with
ablations; here the ablations are the ones the counterfactual attributor already ran (one answer
regenerated without each cluster), so span attribution costs no LLM call, only embeddings of the
claims and of the distinct claims of the counterfactual answers, for any LLM and offline alike.

A claim is what ends with its own run of citation markers ("Bob owns it [Source 2]; the port is
8443 [Source 1]." is two claims; so are two quotes joined by a space after the first's marker), and
within that, a sentence. A claim *survives* a
counterfactual answer as much as the claim there that stands for it resembles it: each claim of
the counterfactual answer stands for the answer's claim it is closest to (cosine of the
embeddings, citation markers stripped; the same text first), so a claim replaced by its
neighbour's is gone, however alike the two read. Its contribution from cluster c is
1 − mean survival over c's rounds, and its shares are the softmax of those (the attributor's
temperature), split among a cluster's members like the answer's shares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from llama_index_ragonite.explain.assertions import agreement, asserted, weighed
from llama_index_ragonite.explain.math import cosine_matrix, held_softmax
from llama_index_ragonite.languages import every
from llama_index_ragonite.models.extractive.answerer import DEFAULT_LABEL
from llama_index_ragonite.prompts import OUT_OF_SCOPE, citation_ends, cited_sources, strip_citations

__all__ = ["ClaimAttribution", "answer_claims", "claim_attributions"]

# a sentence end (not before a citation marker: the markers after a sentence still belong to it)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z0-9ÄÖÜ])")
# a full stop that ends no sentence: an abbreviation ("z.B.", "Nr."), a letter ("z. B.") or an ordinal ("3. Stock")
_NO_END = re.compile(
    r"(?:^|\s)(?:\w|\d{1,2}|" + "|".join(re.escape(a[:-1]) for a in every("abbreviations")) + r")\.$", re.I
)
_WORD = re.compile(r"\w")


@dataclass
class ClaimAttribution:
    """One claim of the answer: where it stands, which sources it cites, and each evidence's share."""

    text: str  # as written, citation markers kept
    start: int  # character offsets in the answer
    end: int
    cited: List[int]  # 0-based evidence positions its markers name
    shares: List[Optional[float]] = field(default_factory=list)  # per evidence, like Attribution.evidence_shares

    @property
    def top(self) -> Optional[int]:
        """The evidence with the largest share (``None`` when none has one or two tie at the top)."""
        known = [(s, i) for i, s in enumerate(self.shares) if s is not None]
        if not known:
            return None
        best = max(known)
        return None if sum(abs(s - best[0]) <= 1e-12 for s, _ in known) > 1 else best[1]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "cited": [i + 1 for i in self.cited],
            "shares": self.shares,
            "top": None if self.top is None else self.top + 1,
        }


def answer_claims(answer: str, n_sources: int) -> List[ClaimAttribution]:
    """The claims of ``answer`` (see the module doc), with their offsets and cited sources; empty
    claims (markers or punctuation only) are left out."""
    bounds = sorted({0, len(answer), *citation_ends(answer)})
    pieces: List[Any] = []
    for start, end in zip(bounds, bounds[1:]):
        ends = (m for m in _SENTENCE_END.finditer(answer, start, end) if not _NO_END.search(answer[start : m.start()]))
        cuts = [start, *(m.end() for m in ends), end]
        pieces.extend(zip(cuts, cuts[1:]))
    claims = []
    for start, end in pieces:
        piece = answer[start:end]
        stripped = piece.strip().removesuffix(";").rstrip()  # a ";" joins claims, it ends none
        if len(_WORD.findall(strip_citations(stripped))) >= 2:  # not a leftover ")." or a lone marker
            left = start + len(piece) - len(piece.lstrip())
            claims.append(
                ClaimAttribution(
                    text=stripped,
                    start=left,
                    end=left + len(stripped),
                    cited=[i - 1 for i in cited_sources(stripped, n_sources)],
                )
            )
    return claims


def _plain(text: str) -> str:
    """What a claim says: no citation markers, no offline answer label (the same on every answer)."""
    return strip_citations(text).removeprefix(DEFAULT_LABEL.strip()).strip(" .;,:!?…")


async def claim_attributions(
    embed_model: Any,
    answer: str,
    n_evidences: int,
    clusters: Sequence[Any],
    temperature: float,
    spread: str = "split",
    values: Optional[AbstractSet[str]] = None,
) -> List[ClaimAttribution]:
    """Each claim of ``answer`` with its evidences' shares, from ``clusters`` (``ClusterAttribution``s
    whose ``counterfactual_answers`` are filled; failed ones give their members ``None``). ``values``:
    the retrieved cells (``assertions.evidence_values``); a claim that keeps its text but not its
    values ("Firmware 2.0.4" against "Firmware 1.9.2") survives less as far as the values disagree
    (``assertions.weighed``)."""
    claims = answer_claims(answer, n_evidences)
    if not claims or not clusters:
        return claims
    texts = [_plain(c.text) for c in claims]
    parts: Dict[Tuple[int, int], List[str]] = {}  # (cluster, round) -> the claims of that answer
    for k, cluster in enumerate(clusters):
        for r, alternative in enumerate(cluster.counterfactual_answers):
            if alternative is not None:  # the out-of-scope sentence claims nothing: every claim is gone
                out = _plain(alternative) == _plain(OUT_OF_SCOPE)
                parts[(k, r)] = [] if out else [_plain(c.text) for c in answer_claims(alternative, n_evidences)]
    distinct = list(dict.fromkeys([*texts, *(p for ps in parts.values() for p in ps)]))
    vectors = dict(zip(distinct, await embed_model.aget_text_embedding_batch(distinct))) if distinct else {}

    def survivals(alternative: List[str]) -> List[float]:
        """Per claim of the answer, how well it survives in ``alternative`` (its claims): each
        alternative claim counts for the answer's claim it is closest to (the same text first), and a
        claim survives as much as the closest alternative claim counted for it resembles it; a claim
        none counts for is gone. So "Click Download" is gone when what remains is the answer's other
        claim "Click Check for Update", however alike the two read."""
        out = [0.0] * len(texts)
        if not alternative:
            return out
        sims = cosine_matrix(np.asarray([vectors[t] for t in texts]), np.asarray([vectors[a] for a in alternative]))
        for j, other in enumerate(alternative):
            i = texts.index(other) if other in texts else int(sims[:, j].argmax())
            same = 1.0 if other == texts[i] else float(sims[i, j])
            if values is not None and other != texts[i]:
                same = weighed(same, agreement(asserted(texts[i], values), asserted(other, values)))
            out[i] = max(out[i], same)
        return out

    live = [k for k, c in enumerate(clusters) if not c.failed]
    held = len(clusters) - len(live)
    kept = {key: survivals(alternative) for key, alternative in parts.items()}
    for c, claim in enumerate(claims):
        contributions = []
        for k in live:
            rounds = [kept[(k, r)][c] for r in range(len(clusters[k].counterfactual_answers)) if (k, r) in kept]
            contributions.append(1.0 - sum(rounds) / max(len(rounds), 1))
        shares: List[Optional[float]] = [None] * n_evidences
        for k, share in zip(live, held_softmax(contributions, held, temperature)):
            members = clusters[k].members
            for m in members:
                shares[m] = float(share) if spread == "inherit" else float(share) / len(members)
        claim.shares = shares
    return claims
