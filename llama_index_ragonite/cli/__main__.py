"""``python -m llama_index_ragonite.cli``: the ``ragonite`` command."""

import sys

from llama_index_ragonite.cli import main

if __name__ == "__main__":
    sys.exit(main())
