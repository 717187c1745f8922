"""Page-level retrieval metrics (pure functions).

ConfQuestions gold answers name pages by URL, and 88 gold URL mentions lost their
punctuation, so pages are matched on the numeric Confluence page id in ``/pages/<id>/``
(falling back to the whole URL when there is none).
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence, Set

_PAGE_ID = re.compile(r"/pages/(\d+)")


def page_key(url: str) -> str:
    """Stable key of a wiki page: its Confluence page id, else the stripped URL."""
    match = _PAGE_ID.search(url or "")
    return match.group(1) if match else (url or "").strip().rstrip("/")


def gold_keys(urls: Iterable[str]) -> Set[str]:
    return {page_key(u) for u in urls if u}


def first_hit_rank(ranked_urls: Sequence[str], gold: Set[str], k: int = 10) -> Optional[int]:
    """1-based rank of the first retrieved evidence whose page is gold (None if not in the top k)."""
    for rank, url in enumerate(ranked_urls[:k], start=1):
        if page_key(url) in gold:
            return rank
    return None


def precision_at_1(ranked_urls: Sequence[str], gold: Set[str]) -> float:
    return float(first_hit_rank(ranked_urls, gold, 1) == 1)


def mrr_at_k(ranked_urls: Sequence[str], gold: Set[str], k: int = 10) -> float:
    rank = first_hit_rank(ranked_urls, gold, k)
    return 1.0 / rank if rank else 0.0


def recall_at_k(ranked_urls: Sequence[str], gold: Set[str], k: int = 10) -> float:
    """Share of gold pages that appear among the top-k evidences' pages."""
    if not gold:
        return 0.0
    found = {page_key(u) for u in ranked_urls[:k]} & gold
    return len(found) / len(gold)


def mean(values: List[float]) -> float:
    return sum(values) / len(values) if values else float("nan")
