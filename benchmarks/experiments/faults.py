"""Fault injection: every fault class tried, expected vs observed.

Runs ``pytest -m fault`` in-process with a small plugin that reads each test's
``@pytest.mark.fault(name, expected, area=None)`` markers (parsed by tests/conftest.py and carried on
the test reports) and its outcome. Nothing in the table is written by hand: a fault class is a row
because a test names it, and its "observed" column is that test's result: passed, xfail (a known bug,
with the reason) or failed. "No failures left" is written only when every fault class passed. Option
``pytest_args``: more arguments for pytest (``--set pytest_args="-k chat"``).
"""

from __future__ import annotations

import os
import shlex
from collections import defaultdict
from typing import Dict, List, Optional

import pytest
from harness import CHECKOUT

OPTIONS = {"pytest_args": ""}
AREAS = ("parsing", "models", "index", "retrieval", "chat", "explain", "cli", "serve", "confluence", "access")
SEVERITY = ("passed", "skipped", "xfail", "xpass", "failed")  # a fault class shows its worst test


class FaultCollector:
    """Pytest plugin: per test, its fault markers and its outcome over setup, call and teardown."""

    def __init__(self) -> None:
        self.faults: Dict[str, List[dict]] = {}
        self.outcomes: Dict[str, str] = {}
        self.reasons: Dict[str, str] = {}
        self.collection_errors: List[str] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(report.nodeid or "(collection)")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        faults = [value for key, value in report.user_properties if key == "fault"]
        if not faults:
            return
        self.faults[report.nodeid] = faults
        outcome, reason = self._outcome(report)
        if outcome is None:
            return
        if SEVERITY.index(outcome) >= SEVERITY.index(self.outcomes.get(report.nodeid, "passed")):
            self.outcomes[report.nodeid] = outcome
            if reason:
                self.reasons[report.nodeid] = reason

    @staticmethod
    def _outcome(report: pytest.TestReport):
        xfail = getattr(report, "wasxfail", None)
        if report.failed:
            first = str(report.longrepr).strip().splitlines()
            return "failed", f"{report.when}: {first[-1] if first else 'failed'}"
        if report.skipped:
            if xfail is not None:
                return "xfail", xfail
            return "skipped", str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else "skipped"
        if report.when == "call":
            return ("xpass", xfail or "unexpectedly passed") if xfail is not None else ("passed", "")
        return None, ""


def _params(nodeid: str) -> Optional[str]:
    return nodeid.split("[", 1)[1][:-1] if "[" in nodeid else None


def _cell(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|").replace("\n", " ")


def fault_rows(collector: FaultCollector) -> List[dict]:
    """One row per fault class: its area, promise, worst observed outcome and the tests that reproduce it."""
    by_name: Dict[str, dict] = {}
    for nodeid, faults in collector.faults.items():
        outcome = collector.outcomes.get(nodeid, "failed")  # marked but never reported: count it against us
        for fault in faults:
            row = by_name.setdefault(
                fault["name"], {"area": fault["area"], "expected": [], "tests": defaultdict(list), "reasons": []}
            )
            if fault["expected"] not in row["expected"]:
                row["expected"].append(fault["expected"])
            row["tests"][nodeid.split("[", 1)[0]].append((_params(nodeid), outcome))
            reason = collector.reasons.get(nodeid) if outcome != "passed" else None
            if reason and reason not in row["reasons"]:
                row["reasons"].append(reason)
    rows = [{"name": name, **row, "observed": max((o for runs in row["tests"].values() for _, o in runs),
             key=SEVERITY.index)} for name, row in by_name.items()]  # fmt: skip
    rows.sort(key=lambda r: (AREAS.index(r["area"]) if r["area"] in AREAS else len(AREAS), r["name"].lower()))
    return rows


def _tests_cell(tests: Dict[str, list]) -> str:
    cells = []
    for function, runs in tests.items():
        params = [p for p, _ in runs if p is not None]
        shown = function.split("::", 1)
        text = f"`{shown[0].removeprefix('tests/')}::{shown[1]}`" if len(shown) == 2 else f"`{function}`"
        cells.append(text + (f" [{', '.join(params)}]" if params else ""))
    return "<br>".join(cells)


def _observed_cell(row: dict) -> str:
    if row["observed"] == "passed":
        return "passed"
    reasons = "; ".join(row["reasons"])
    return f"**{row['observed']}**: {reasons}" if reasons else f"**{row['observed']}**"


def run(bench):
    collector = FaultCollector()
    args = ["-q", "-p", "no:cacheprovider", "-m", "fault", "tests", *shlex.split(bench.opts["pytest_args"])]
    here = os.getcwd()
    os.chdir(CHECKOUT)  # pytest reads the repository's configuration; --out stays relative to where it was run
    try:
        exit_code = int(pytest.main(args, plugins=[collector]))
    finally:
        os.chdir(here)
    rows = fault_rows(collector)
    counts = {o: sum(r["observed"] == o for r in rows) for o in SEVERITY}
    lines = [
        "Generated from the tests, not written by hand: each row is a `@pytest.mark.fault(name, expected)` "
        "marker, its observed column that test's outcome (the worst one when several tests or parameters "
        "reproduce the class). Every test is bounded in time and uses loopback only.",
        "",
        "| area | fault class | expected | observed | tests |",
        "| --- | --- | --- | --- | --- |",
        *[
            f"| {row['area']} | {_cell(row['name'])} | {_cell(' / '.join(row['expected']))} | "
            f"{_cell(_observed_cell(row))} | {_tests_cell(row['tests'])} |"
            for row in rows
        ],  # fmt: skip
        "",
        f"Totals: **{len(rows)} fault classes** over {len(collector.faults)} test runs: "
        + ", ".join(f"{counts[o]} {o}" for o in SEVERITY if counts[o] or o in ("passed", "xfail", "failed"))
        + f". pytest exit code {exit_code}.",
        "",
    ]
    if collector.collection_errors:
        lines += [f"Collection errors: {', '.join(collector.collection_errors)}.", ""]
    if not (counts["failed"] + counts["xpass"] + counts["xfail"] + counts["skipped"] + len(collector.collection_errors)
            or exit_code):  # fmt: skip
        lines.append("**No failures left**: every fault class tried behaves as promised.")
    else:
        lines.append(
            f"**Not done**: {counts['failed']} failed, {counts['xpass']} unexpectedly passing (remove their xfail), "
            f"{counts['xfail']} known bugs still xfail, {counts['skipped']} skipped."
        )
    return lines, 0 if exit_code == 0 else 1
