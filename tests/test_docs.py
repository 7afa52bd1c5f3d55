"""The documentation runs: every ```python block of every docs/*.md page is executed, top to
bottom, one namespace per page, with ``spark`` (the shared fullwindow session of conftest.py)
predefined. A block whose fence is preceded by the line ``<!-- no-run -->`` is shown to readers
but not run. A failing block fails its page's test, naming the page and the block's line; line
numbers in tracebacks are the page's own."""
from __future__ import annotations

import os
import re
import traceback

import pytest

from conftest import ROOT
from helpers import kept_conf

DOCS = os.path.join(ROOT, "docs")
NO_RUN = "<!-- no-run -->"
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
# settings a page may change; put back after each page so that pages stay independent
_RUNTIME_KEYS = ("spark.fullwindow.runtimeMode", "spark.fullwindow.processingTime.allow",
                 "spark.fullwindow.processingTime.endOfInput",
                 "spark.fullwindow.recovery.enabled", "spark.fullwindow.recovery.dir",
                 "spark.fullwindow.recovery.jobId", "spark.sql.shuffle.partitions",
                 "spark.sql.adaptive.enabled")


def pages() -> list[str]:
    return sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line of the first code line, code, run?) for each ```python block of a Markdown page."""
    blocks: list[tuple[int, str, bool]] = []
    lines = text.splitlines()
    i = 0
    previous = ""  # the last non-blank line before the current one
    while i < len(lines):
        m = _FENCE.match(lines[i].strip())
        if not m:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        if j == len(lines):
            raise AssertionError(f"unclosed code fence at line {i + 1}")
        if lang in ("python", "py"):
            indent = len(lines[i]) - len(lines[i].lstrip())
            code = "\n".join(line[indent:] for line in lines[start:j])
            blocks.append((start + 1, code, previous != NO_RUN))
        previous = ""
        i = j + 1
    return blocks


def run_page(name: str, spark, directory: str = DOCS) -> int:
    """Runs the page's blocks in one fresh namespace; returns how many ran."""
    path = os.path.join(directory, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # a name no module has: cloudpickle then ships the page's functions and classes by value
    namespace = {"__name__": f"fullwindow_docs_{name[:-3].replace('-', '_')}", "spark": spark}
    ran = 0
    for line, code, run in python_blocks(text):
        if not run:
            continue
        # pad so that the compiled code's line numbers are the page's
        compiled = compile("\n" * (line - 1) + code, f"docs/{name}", "exec")
        try:
            exec(compiled, namespace)  # noqa: S102 - the documentation's own examples
        except Exception:  # noqa: BLE001 - reported with the page and line
            tb = traceback.format_exc()
            pytest.fail(f"docs/{name}: the python block at line {line} failed:\n{tb}",
                        pytrace=False)
        ran += 1
    return ran


def test_blocks_are_found():
    text = "x\n<!-- no-run -->\n\n```python\na = 1\n```\n```python\nb = 2\n```\n```text\nc\n```\n"
    assert python_blocks(text) == [(5, "a = 1", False), (8, "b = 2", True)]


def test_a_failing_block_names_its_page_and_line(tmp_path, spark):
    (tmp_path / "page.md").write_text(
        "# A page\n\n```python\nn = spark.range(3).count()\n```\n\nText.\n\n"
        "<!-- no-run -->\n```python\nraise SystemExit('not run')\n```\n\n"
        "```python\nassert n == 3\nassert n == 4, 'the doc lies'\n```\n")
    with pytest.raises(pytest.fail.Exception) as failed:
        run_page("page.md", spark, str(tmp_path))
    message = str(failed.value)
    assert "docs/page.md: the python block at line 15 failed" in message
    assert 'File "docs/page.md", line 16' in message and "the doc lies" in message


@pytest.mark.parametrize("page", pages())
def test_page(page, spark):
    with kept_conf(spark, _RUNTIME_KEYS):
        run_page(page, spark)


def test_site_builds_strictly_without_warnings(tmp_path):
    """``./dev/docs`` (``mkdocs build --strict``): the pages, the nav and the API reference
    generated from the docstrings build with no warning at all."""
    import subprocess

    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    out = subprocess.run([os.path.join(ROOT, "dev", "docs"), "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    assert "WARNING" not in log and "ERROR" not in log, log
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("fullwindow.PartitionWindowedDataFrame.sortPartition",
                 "fullwindow.dataframe.keyBy", "fullwindow.errors.SchemaMismatchError"):
        assert f'id="{name}"' in api, name


_EXTERNAL = re.compile(r"\]\(\s*(?:[a-z][a-z0-9+.-]*:|//)|<https?://|\bhref=\"https?:", re.I)


@pytest.mark.parametrize("path", [os.path.join("docs", p) for p in pages()] + ["README.md"])
def test_links_stay_inside_the_repository(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            assert not _EXTERNAL.search(line), f"{path}:{n}: a link outside the repository"
            assert "](../" not in line or path != "README.md", f"{path}:{n}: leaves the repository"
