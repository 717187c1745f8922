"""The one benchmark runner (``benchmarks/run.py``): options typed by their defaults, unknown ones refused,
an experiment's function called in a child process against a package copy, the report's header."""

from __future__ import annotations

import argparse
import types

import pytest
from harness import CHECKOUT
from harness.runner import Bench, experiment_names, options, typed


def test_every_experiment_module_has_what_the_runner_reads():
    names = experiment_names()
    assert {"out_of_scope", "retrieval", "faults", "peers", "startup"} <= set(names)
    for name in names:
        source = (CHECKOUT / "benchmarks" / "experiments" / f"{name}.py").read_text()
        assert source.startswith('"""') and "\ndef run(bench" in source, name


def test_set_values_take_the_type_of_their_default():
    assert typed(2, "4") == 4 and typed(0.5, "1.5") == 1.5 and typed(True, "no") is False
    assert typed(("a",), "x,y") == ("x", "y") and typed((1,), "3,4") == (3, 4)
    assert options({"rounds": 2, "name": "a"}, ["rounds=5"]) == {"rounds": 5, "name": "a"}
    with pytest.raises(SystemExit, match="its options: rounds"):
        options({"rounds": 2}, ["round=5"])
    with pytest.raises(SystemExit, match="not a yes/no value"):
        options({"reuse": False}, ["reuse=maybe"])


def bench_for(module: types.ModuleType, **args) -> Bench:
    defaults = dict(data=None, store=None, cache=None, base_rev="HEAD", limit=None, out=None, set=[])
    return Bench(module, argparse.Namespace(**{**defaults, **args}), ["--limit", "3"])


def test_a_function_runs_in_a_child_process_with_a_large_request():
    import experiments.startup as startup  # any real experiment: the child imports it by name

    bench = bench_for(startup)
    words = ["x" * 100_000] * 3  # together over one argument's limit (128 KiB): the request goes on stdin
    result = bench.call("timed", None, command=["true", *words], code=str(CHECKOUT))
    assert result["wall"] > 0 and result["rss"] > 0


def test_the_header_names_the_command_machine_and_commit(tmp_path):
    import experiments.out_of_scope as out_of_scope

    bench = bench_for(out_of_scope, out=tmp_path / "r.md", set=["examples=2"])
    assert bench.opts["examples"] == 2
    assert bench.finish(["body"]) == 0
    text = (tmp_path / "r.md").read_text()
    assert text.startswith("# Out-of-scope rate") and "`python benchmarks/run.py out_of_scope --limit 3`" in text
    assert "Machine: " in text and "commit " in text and text.rstrip().endswith("body")
