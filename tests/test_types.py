"""Types: mypy (pinned in requirements-dev.txt, configured in pyproject.toml) passes over
python/fullwindow, the package ships py.typed, and fullwindow's mypy plugin gives the DataFrame
methods added at import their types in a user's program."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

# the line venvs (dev/venvs) carry no dev tools: the types are checked on the default line
pytest.importorskip("mypy", reason="mypy is not installed (dev/setup installs it in .venv)")

PACKAGE = os.path.join(ROOT, "python", "fullwindow")
# a user's configuration: the plugin on (the same text in every test, so they share a cache)
USER_CONFIG = ("[mypy]\nplugins = fullwindow.mypy_plugin\n"
               "[mypy-pyarrow.*]\nignore_missing_imports = True\n"
               "[mypy-pandas.*]\nignore_missing_imports = True\n")


def mypy(*args: str, cwd: str = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_the_package_type_checks():
    out = mypy()  # files, plugin and strictness from pyproject.toml
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """One mypy cache for the user-program checks: pyspark is analyzed once."""
    return str(tmp_path_factory.mktemp("mypy-cache"))


def test_py_typed_is_shipped():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        assert '"py.typed"' in f.read()


def test_dataframe_methods_are_typed_for_users(tmp_path, cache):
    (tmp_path / "mypy.ini").write_text(USER_CONFIG)
    (tmp_path / "job.py").write_text(textwrap.dedent("""
        import fullwindow
        from pyspark.sql import functions as F

        spark = fullwindow.session()
        df = spark.range(3)
        reveal_type(df.fullWindowPartition())
        reveal_type(df.keyBy("id"))
        reveal_type(df.keyBy("id").fullWindowPartition().aggregate(F.sum("id")))
        df.keyBy(1)
        df.fullWindowPartition().sortPartition("id", 3.5)
    """))
    out = mypy("--config-file", "mypy.ini", "--cache-dir", cache, "job.py",
               cwd=str(tmp_path))
    lines = out.stdout.splitlines()
    assert 'job.py:7: note: Revealed type is "fullwindow.partition.PartitionWindowedDataFrame"' in lines
    assert 'job.py:8: note: Revealed type is "fullwindow.keyed.KeyedDataFrame"' in lines
    assert 'job.py:9: note: Revealed type is "pyspark.sql.dataframe.DataFrame"' in lines
    assert any(line.startswith("job.py:10: error: Argument 1 to \"keyBy\" has incompatible type "
                               "\"int\"") for line in lines), out.stdout
    assert any(line.startswith("job.py:11: error: Argument 2 to \"sortPartition\"")
               for line in lines), out.stdout
    assert out.returncode == 1


def test_without_the_plugin_mypy_sees_a_column_lookup(tmp_path, cache):
    """Why the plugin exists: pyspark's DataFrame.__getattr__ makes the methods look like
    columns to mypy."""
    (tmp_path / "job.py").write_text("import fullwindow\n"
                                     "df = fullwindow.session().range(3)\n"
                                     "df.fullWindowPartition()\n")
    out = mypy("--config-file", os.devnull, "--cache-dir", cache, "job.py",
               cwd=str(tmp_path))
    assert 'job.py:3: error: "Column" not callable' in out.stdout, out.stdout


def test_the_documentation_examples_type_check(tmp_path, cache):
    """Every run python block of docs/*.md, as a user's program, passes mypy with the plugin:
    the annotations fit the way the documentation uses the API. Each page becomes one module
    whose line numbers are the page's."""
    from test_docs import pages, python_blocks

    checked = []
    for page in pages():
        with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as f:
            text = f.read()
        blocks = [(line, code) for line, code, run in python_blocks(text) if run]
        if not blocks:
            continue
        lines = [""] * (len(text.splitlines()) + 1)
        lines[0] = "from pyspark.sql import SparkSession; spark: SparkSession"  # predefined
        for line, code in blocks:
            for i, source in enumerate(code.splitlines()):
                lines[line - 1 + i] = source
        name = "docs_" + page[:-3].replace("-", "_") + ".py"
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        checked.append(name)
    (tmp_path / "mypy.ini").write_text(USER_CONFIG)
    out = mypy("--config-file", "mypy.ini", "--cache-dir", cache, *checked,
               cwd=str(tmp_path))
    assert len(checked) >= 8
    assert out.returncode == 0, out.stdout + out.stderr
