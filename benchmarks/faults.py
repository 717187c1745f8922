"""The fault-injection table: every fault class a test reproduces, what we promise, what happened.

Usage:
    python benchmarks/faults.py [--out benchmarks/results/faults.md] [PYTEST_ARGS ...]

Runs ``pytest -m fault`` in-process (``pytest.main``) with a small plugin that reads each
test's ``@pytest.mark.fault(name, expected, area=None)`` markers (parsed by tests/conftest.py
and carried on the test reports) and its outcome. Nothing in the table is written by hand:
a fault class is a row because a test names it, and its "observed" column is that test's
result: passed, xfail (a known bug, with the reason) or failed. "No failures left" is written
only when every fault class passed. Extra arguments go to pytest (e.g. ``-k chat``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from harness import finish_report, repository

REPO = repository(__file__)
DEFAULT_OUT = REPO / "benchmarks" / "results" / "faults.md"
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
        previous = self.outcomes.get(report.nodeid, "passed")
        if SEVERITY.index(outcome) >= SEVERITY.index(previous):
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


def _function_id(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


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
            row["tests"][_function_id(nodeid)].append((_params(nodeid), outcome))
            if outcome != "passed" and collector.reasons.get(nodeid):
                reason = collector.reasons[nodeid]
                if reason not in row["reasons"]:
                    row["reasons"].append(reason)
    rows = []
    for name, row in by_name.items():
        outcomes = [o for tests in row["tests"].values() for _, o in tests]
        worst = max(outcomes, key=SEVERITY.index)
        rows.append({"name": name, **row, "observed": worst})
    rows.sort(key=lambda r: (AREAS.index(r["area"]) if r["area"] in AREAS else len(AREAS), r["name"].lower()))
    return rows


def _tests_cell(tests: Dict[str, list]) -> str:
    cells = []
    for function, runs in tests.items():
        params = [p for p, _ in runs if p is not None]
        shown = function.split("::", 1)
        text = f"`{shown[0].removeprefix('tests/')}::{shown[1]}`" if len(shown) == 2 else f"`{function}`"
        if params:
            text += f" [{', '.join(params)}]"
        cells.append(text)
    return "<br>".join(cells)


def _observed_cell(row: dict) -> str:
    observed = row["observed"]
    if observed == "passed":
        return "passed"
    reasons = "; ".join(row["reasons"])
    return f"**{observed}**: {reasons}" if reasons else f"**{observed}**"


def _machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system().lower()} {platform.release()}"
    )


def _revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if dirty else head or "unknown"


def report_lines(rows: List[dict], collector: FaultCollector, command: str, exit_code: int, seconds: float) -> list:
    counts = {o: sum(r["observed"] == o for r in rows) for o in SEVERITY}
    tests = len(collector.faults)
    lines = [
        "# Fault injection: every fault class tried, expected vs observed",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {_machine()}. Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC. "
        f"Revision: {_revision()}. Run time: {seconds:.0f} s.",
        "",
        "Generated from the tests, not written by hand: each row is a `@pytest.mark.fault(name, expected)` "
        "marker, its observed column that test's outcome (the worst one when several tests or parameters "
        "reproduce the class). Every test is bounded in time and uses loopback only.",
        "",
        "| area | fault class | expected | observed | tests |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['area']} | {_cell(row['name'])} | {_cell(' / '.join(row['expected']))} | "
            f"{_cell(_observed_cell(row))} | {_tests_cell(row['tests'])} |"
        )
    lines += [
        "",
        f"Totals: **{len(rows)} fault classes** over {tests} test runs: "
        + ", ".join(f"{counts[o]} {o}" for o in SEVERITY if counts[o] or o in ("passed", "xfail", "failed"))
        + f". pytest exit code {exit_code}.",
        "",
    ]
    if collector.collection_errors:
        lines.append(f"Collection errors: {', '.join(collector.collection_errors)}.")
        lines.append("")
    unfinished = counts["failed"] + counts["xpass"] + counts["xfail"] + counts["skipped"]
    if not unfinished and not collector.collection_errors and exit_code == 0:
        lines.append("**No failures left**: every fault class tried behaves as promised.")
    else:
        lines.append(
            f"**Not done**: {counts['failed']} failed, {counts['xpass']} unexpectedly passing (remove their xfail), "
            f"{counts['xfail']} known bugs still xfail, {counts['skipped']} skipped."
        )
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown file to write (default: %(default)s)")
    args, pytest_args = ap.parse_known_args(argv)
    command = "python benchmarks/faults.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    collector = FaultCollector()
    started = dt.datetime.now()
    out = args.out.resolve() if args.out else None  # before the chdir: relative to where it was run
    os.chdir(REPO)
    exit_code = int(
        pytest.main(["-q", "-p", "no:cacheprovider", "-m", "fault", "tests", *pytest_args], plugins=[collector])
    )
    seconds = (dt.datetime.now() - started).total_seconds()
    rows = fault_rows(collector)
    lines = report_lines(rows, collector, re.sub(r"\s+", " ", command).strip(), exit_code, seconds)
    return finish_report(lines, out, status=0 if exit_code == 0 else 1)


if __name__ == "__main__":
    sys.exit(main())
