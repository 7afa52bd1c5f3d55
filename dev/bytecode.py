"""dev/bytecode.py [DIR...]: byte-compiles, for the interpreter running it, everything a test run
imports: its site-packages and the DIRs given, and the zip files pyspark puts first on every
Python worker's path (``pyspark/python/lib/pyspark.zip`` and py4j's), which get compiled
modules beside their sources.

Why (issue 49): pip installs the venvs with ``--no-compile``, and the test machine runs with
``PYTHONDONTWRITEBYTECODE=1``, so without this every Python process (each pyspark daemon and
worker, each crash-test driver, each pytest process) compiled pandas, pyarrow and pyspark from
source, every time, and cached nothing. Python never caches modules it imports from a zip, and
a Spark worker imports pyspark from ``pyspark.zip`` (the worker's ``PYTHONPATH`` puts it before
site-packages). Measured on the 2-core test machine: ``import pandas, pyarrow, pyspark.worker,
fullwindow._worker`` 3.3-4.4 CPU s -> 1.1-1.5; ``import pyspark.worker, pyspark.daemon`` from
the zip 1.2-1.5 CPU s, from compiled modules 0.2-0.4.

Compiled modules in a zip sit beside their sources (``pyspark/worker.pyc``: the only place
zipimport looks) and are hash-based, unchecked: zipimport uses them as they are. A zip is
rewritten once (its comment marks it); the compiled files of a directory are timestamp-based,
so a changed source is compiled again, and ``compileall`` skips the ones up to date.

The third-party packages' own test folders (a ``tests`` directory anywhere in site-packages or
an overlay given: pandas', numpy's and pyarrow's are about a third of a venv's modules, which
no run of ours imports) are left uncompiled: ~10 CPU seconds a venv on a fresh machine. The
project's own folders given (its ``tests`` among them) are compiled whole.
"""
from __future__ import annotations

import compileall
import os
import py_compile
import re
import sys
import sysconfig
import tempfile
import warnings
import zipfile

MARK = b"fullwindow: compiled modules added (dev/bytecode.py)"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_folders(top: str) -> "re.Pattern[str]":
    """compileall's ``rx`` (a pattern, which its worker processes can be sent): the files in a
    ``tests`` folder below ``top`` (a third party's test modules: skipped, see above), whatever
    the path above ``top`` is."""
    return re.compile(re.escape(os.path.abspath(top)) + r"[/\\](?:[^/\\]+[/\\])*tests[/\\]")


def ours(d: str) -> bool:
    """A folder of the project's own (python/, tests/, benchmarks/), not a venv's."""
    rel = os.path.relpath(os.path.abspath(d), ROOT)
    return not rel.startswith("..") and not rel.split(os.sep)[0].startswith(".venv")


def compile_zip(path: str) -> bool:
    """Adds an unchecked hash-based compiled module beside each source in the zip ``path``;
    False when it has them already."""
    with zipfile.ZipFile(path) as src:
        if src.comment == MARK:
            return False
        names = set(src.namelist())
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.zip")
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
                for info in src.infolist():
                    data = src.read(info)
                    dst.writestr(info, data)
                    if not info.filename.endswith(".py") or info.filename + "c" in names:
                        continue
                    source = os.path.join(tmp, "m.py")
                    with open(source, "wb") as f:
                        f.write(data)
                    try:
                        py_compile.compile(
                            source, cfile=source + "c", dfile=os.path.join(path, info.filename),
                            doraise=True,
                            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                    except py_compile.PyCompileError:
                        continue  # a file this interpreter cannot compile: imported from source
                    with open(source + "c", "rb") as f:
                        dst.writestr(zipfile.ZipInfo(info.filename + "c", info.date_time), f.read())
                dst.comment = MARK
            os.replace(out, path)
    return True


def main(dirs: list[str]) -> None:
    warnings.simplefilter("ignore")  # what a third party's source warns of when compiled
    purelib = sysconfig.get_paths()["purelib"]
    for d in [purelib, *dirs]:
        if not compileall.compile_dir(d, quiet=2, workers=0,
                                      rx=None if ours(d) else test_folders(d)):
            print(f"[bytecode] some files under {d} did not compile (imported from source)",
                  file=sys.stderr)
    lib = os.path.join(purelib, "pyspark", "python", "lib")
    if os.path.isdir(lib):
        for name in sorted(os.listdir(lib)):
            if name.endswith(".zip") and compile_zip(os.path.join(lib, name)):
                print(f"[bytecode] compiled modules added to {os.path.join(lib, name)}",
                      file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
