"""The contextualization settings (``ragonite parse|index --context``), apart from the
contextualizer itself so that the command line can list them without loading LlamaIndex."""

from __future__ import annotations

from typing import Dict

__all__ = ["SETTINGS"]

# The paper's ablation settings (Table 2 of Saha Roy et al., WSDM 2025).
SETTINGS: Dict[str, Dict[str, bool]] = {
    "NONE": dict(title=False, heading=False, before=False, after=False),
    "TTL": dict(title=True, heading=False, before=False, after=False),
    "HDR": dict(title=False, heading=True, before=False, after=False),
    "BEF": dict(title=False, heading=False, before=True, after=False),
    "AFT": dict(title=False, heading=False, before=False, after=True),
    "ALL": dict(title=True, heading=True, before=True, after=True),
}
