"""Calibrate the attribution softmax temperature offline from a benchmark dump (the procedure:
``harness/attribution_calibration.py``).

Usage:
    python benchmarks/attribution_calibration.py DUMP.jsonl [--method counterfactual+clusters]
"""

from __future__ import annotations

import sys

from harness.attribution_calibration import main

if __name__ == "__main__":
    sys.exit(main())
