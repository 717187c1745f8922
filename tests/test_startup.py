"""Cold start (issue 49): ``import llama_index_ragonite``, ``ragonite --help``, every subcommand's help and
an argument error load no heavy third-party package; each command imports its stage when it runs.

The budget is pinned by the modules a fresh interpreter has loaded, not by timing (timings vary with the
machine's load). Every package below is avoided: none is loaded to build the parser or to describe an
option, since the constants the help texts quote live in light modules (``parsing.context_settings``,
``parsing.linearize``, ``bench.config``, ``bench.attribution``, ``models.specs``, ``serve.config``).
"""

from __future__ import annotations

import pytest
from fakes import REPO
from processes import loaded_packages

HEAVY = (
    "chromadb", "onnxruntime", "numpy", "scipy", "sklearn", "matplotlib", "fastapi", "uvicorn", "starlette",
    "httpx", "openai", "llama_index", "bm25s", "torch", "transformers", "tiktoken", "sqlalchemy", "lxml",
    "selectolax", "PIL", "bs4", "pydantic", "requests", "tqdm", "nltk", "pandas",
)  # fmt: skip

EVERY_HELP = """
import argparse
from llama_index_ragonite.cli import build_arg_parser

def helps(parser):
    parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                helps(sub)

helps(build_arg_parser())
"""

ARGUMENT_ERRORS = """
import contextlib, io
from llama_index_ragonite.cli import main

for argv in (["ask"], ["index", "pages", "--store", "s", "--context", "SOME"], ["bench", "--out", "o", "--preset", "x"],
             ["--help"], ["serve", "--help"], ["users", "sync-groups", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exit:
            assert exit.code in (0, 2), (argv, exit.code)
        else:
            raise AssertionError(f"{argv}: no argument error")
"""


@pytest.mark.parametrize(
    "code",
    ["import llama_index_ragonite", EVERY_HELP, ARGUMENT_ERRORS],
    ids=["import", "every-help", "argument-errors"],
)
def test_nothing_heavy_loads_before_a_command_runs(code):
    heavy = sorted(set(loaded_packages(code)) & set(HEAVY))
    assert not heavy, f"loaded before any command ran: {heavy}"


def test_a_command_still_imports_its_stage_when_it_runs():
    """The probe sees heavy imports: ``ragonite parse`` loads the parser (LlamaIndex, the HTML parsers)."""
    page = REPO / "examples" / "sample_wiki" / "release-testing.html"
    run = "import contextlib, io\nfrom llama_index_ragonite.cli import main\n"
    run += f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['parse', {str(page)!r}]) == 0"
    assert {"llama_index", "selectolax", "bs4"} <= set(loaded_packages(run))
