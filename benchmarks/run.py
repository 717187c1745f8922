"""Run one benchmark experiment: ``python benchmarks/run.py EXPERIMENT [options]`` (``--help`` lists them).

The runner is ``benchmarks/harness/runner.py``; the experiments are the modules of ``benchmarks/experiments/``.
"""

import sys

from harness.runner import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
