"""Smoke test of the benchmark harness: one case in --quick mode (tiny data, one round), run as
users run it (``python -m benchmarks`` from the repository root, in a subprocess), must print
the table with a ratio and write a RESULTS.md of its own (never benchmarks/RESULTS.md)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_benchmark_prints_a_ratio(tmp_path):
    results = tmp_path / "RESULTS.md"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--cases", "sort_one_key",
         "--rows", "50000", "--out-dir", str(tmp_path / "out"), "--results", str(results)],
        cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    row = next((line for line in proc.stdout.splitlines() if line.startswith("sort_one_key")),
               None)
    assert row is not None, proc.stdout
    assert "50,000" in row
    assert re.search(r"\d+\.\d+× \[\d+\.\d+–\d+\.\d+\]", row), row
    assert re.search(r"\b(PASS|MISS)\b", row), row

    text = results.read_text()
    assert "| sort | sort_one_key | 50,000 |" in text
    assert "-m benchmarks --quick --cases sort_one_key" in text
    stored = json.loads((tmp_path / "results.json").read_text())["cases"]["sort_one_key"]
    assert stored["quick"] is True
    assert len(stored["ratios"]) == 1 and stored["ratios"][0] > 0
    # the timed runs really executed the sort operators (checked through the Spark UI REST API)
    assert stored["metrics"]["ours"][0]["node_ran"] is True
    assert stored["metrics"]["native"][0]["node_ran"] is True
