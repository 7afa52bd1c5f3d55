"""Nothing a user types deletes what is not a recovery job (issue 51): a job id is one directory
name at every entry point (``python -m fullwindow.recovery``, ``fullwindow.recovery.status`` /
``verify`` / ``job_events`` / ``cleanup``, the session settings), and ``cleanup`` deletes only a
directory that holds a recovery job's layout. Each case runs against a real directory tree with
sibling files and directories around the recovery directory, checked intact afterwards.

The job directories here are made by recovery's own code (a lease taken and released, an event
store written and closed), the layout a driver leaves; tests/test_recovery_status.py cleans up
the directory of a job a real driver ran. The same cleanup cases on HDFS and S3 are in
tests/test_recovery_hdfs.py and tests/test_recovery_s3.py (``job_tree`` and ``bad_ids`` below)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import fullwindow
from pyspark.sql import SparkSession
from fullwindow.errors import ConfigurationError, FullWindowError
from fullwindow.recovery import _fs, lease
from fullwindow.recovery.eventstore import EventStore
from helpers import ROOT, fast_jvm

#: job ids that are not one directory name, and what each would have meant as a path
BAD_IDS = ["..", "x/../..", ".", "", "  ", "a/b", "/", "../rec", "a\\b", "x\x00y"]


def make_job(fs, job_dir: str) -> None:
    """A finished job's directory, as a driver leaves it: a released lease, a segment of
    events, an operator's, a kept shuffle's (scope=job) and the write records' (empty)
    directories."""
    fs.makedirs(job_dir)
    held = lease.Lease(fs, job_dir, 30.0, "app-made-by-the-test",
                       mode="mtime" if isinstance(fs, _fs.LocalFS) else
                       fs.storage(job_dir)["lease"])
    held.acquire("test")
    store = EventStore(_fs.join(job_dir, "events"), 1 << 20, 0.1, fs,
                       objects=fs.storage(job_dir)["events"] == "objects")
    store.append({"type": "vertexInitialized", "fingerprint": "f0", "numPartitions": 1})
    store.close()
    held.release()
    fs.makedirs(_fs.join(job_dir, "operators", "f0"))
    fs.makedirs(_fs.join(job_dir, "shuffles", "s0"))
    fs.makedirs(_fs.join(job_dir, "writes"))


def job_tree(fs, base: str) -> dict:
    """Under ``base``: a sibling file and directory of the recovery directory ``rec``, which
    holds a file of its own, a directory that is no job (``photos``, with a file), an empty
    directory, and the job ``nightly``. Returns the paths."""
    rec = _fs.join(base, "rec")
    paths = {"base": base, "rec": rec, "sibling": _fs.join(base, "sibling.txt"),
             "sibling_dir": _fs.join(base, "other", "keep.txt"),
             "rec_file": _fs.join(rec, "notes.txt"), "photos": _fs.join(rec, "photos"),
             "photo": _fs.join(rec, "photos", "a.jpg"), "empty": _fs.join(rec, "empty"),
             "job": _fs.join(rec, "nightly")}
    for key in ("sibling", "sibling_dir", "rec_file", "photo"):
        fs.makedirs(paths[key].rsplit("/", 1)[0])
        assert fs.create_with(paths[key], f"{key}\n".encode())
    fs.makedirs(paths["empty"])
    make_job(fs, paths["job"])
    return paths


def intact(fs, paths: dict, job: bool = True) -> None:
    for key in ("sibling", "sibling_dir", "rec_file", "photo"):
        assert fs.read(paths[key]) == f"{key}\n".encode(), key
    assert fs.is_dir(paths["empty"])
    if job:
        assert fs.exists(_fs.join(paths["job"], "lease")) and \
            fs.exists(_fs.join(paths["job"], "events"))


def cleanup_cases_on(fs, spark, base: str) -> None:
    """The cleanup cases on a Hadoop file system (HDFS, S3), through
    ``fullwindow.recovery.cleanup`` with ``spark``'s Hadoop settings: every bad id and every
    directory that is not a job refused, nothing deleted; then the job deleted, alone."""
    p = job_tree(fs, base)
    for bad in BAD_IDS:
        with pytest.raises(ConfigurationError, match="^recovery.cleanup: job_id "):
            fullwindow.recovery.cleanup(spark, bad, p["rec"])
    intact(fs, p)
    for name, why in (("photos", "it holds 'a.jpg', which recovery never writes"),
                      ("empty", "it holds neither a job's lease"),
                      ("notes.txt", "it is a file")):
        with pytest.raises(ConfigurationError, match="is not a recovery job's directory") as err:
            fullwindow.recovery.cleanup(spark, name, p["rec"])
        assert why in str(err.value) and "Nothing was deleted" in str(err.value)
        intact(fs, p)
    assert fullwindow.recovery.cleanup(spark, "nightly", p["rec"]) is True
    assert not fs.exists(p["job"])
    intact(fs, p, job=False)
    assert fullwindow.recovery.cleanup(spark, "nightly", p["rec"]) is False


def _cli(*args, timeout=120):
    env = fast_jvm(dict(os.environ))  # a command that starts a JVM (a Hadoop file system's)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "fullwindow.recovery", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture()
def tree(tmp_path):
    fs = _fs.LocalFS()
    return fs, job_tree(fs, str(tmp_path))


#: the issue's cases, run as a user runs them (a process of its own: its exit code)
ISSUE_IDS = ["..", "x/../..", ".", ""]


def test_the_command_line_refuses_the_issues_ids(tree):
    fs, p = tree
    for bad in ISSUE_IDS:
        r = _cli("cleanup", "--dir", p["rec"], "--job-id", bad)
        assert r.returncode == 2, (bad, r.stdout, r.stderr)
        assert "usage:" in r.stderr and "--job-id" in r.stderr, (bad, r.stderr)
        assert "a job id names one directory" in r.stderr and "Traceback" not in r.stderr
        assert r.stdout == ""
        intact(fs, p)


@pytest.mark.parametrize("command", ["cleanup", "status", "verify"])
def test_every_command_refuses_every_id_that_is_not_one_name(tree, command, capsys):
    """The same entry point in this process (``main`` of ``python -m fullwindow.recovery``):
    argparse's usage error, exit 2."""
    from fullwindow.recovery._status import main

    fs, p = tree
    for bad in BAD_IDS:
        with pytest.raises(SystemExit) as exit_:
            main([command, "--dir", p["rec"], "--job-id", bad])
        out, err = capsys.readouterr()
        assert exit_.value.code == 2, (bad, out, err)
        assert "usage:" in err and "--job-id" in err and "a job id names one directory" in err
        assert out == ""
        intact(fs, p)
    for bad in ("", "  "):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--dir", bad, "--job-id", "nightly"])
        out, err = capsys.readouterr()
        assert exit_.value.code == 2 and "--dir" in err and "usage:" in err, err
        intact(fs, p)


def test_cleanup_refuses_what_is_not_a_job_and_deletes_a_job(tree, tmp_path):
    fs, p = tree
    os.symlink(p["job"], os.path.join(p["rec"], "link"))
    for name, why in (("photos", "it holds 'a.jpg', which recovery never writes"),
                      ("empty", "it holds neither a job's lease"),
                      ("notes.txt", "it is a file"),
                      ("link", "it is a symbolic link")):
        r = _cli("cleanup", "--dir", p["rec"], "--job-id", name)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.startswith("refused: cleanup: ") and why in r.stderr, r.stderr
        assert "is not a recovery job's directory" in r.stderr and "Nothing was deleted" \
            in r.stderr
        assert r.stdout == "" and "Traceback" not in r.stderr
        intact(fs, p)
    assert os.path.islink(os.path.join(p["rec"], "link"))
    # a job's directory holding anything recovery does not write is not deleted either
    extra = _fs.join(p["job"], "mine.csv")
    assert fs.create_with(extra, b"a,b\n")
    r = _cli("cleanup", "--dir", p["rec"], "--job-id", "nightly")
    assert r.returncode == 2 and "'mine.csv'" in r.stderr, r.stderr
    os.remove(extra)
    r = _cli("cleanup", "--dir", p["rec"], "--job-id", "nightly")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"deleted {p['job']} (the recovery directory of job 'nightly'")
    assert not fs.exists(p["job"])
    intact(fs, p, job=False)
    r = _cli("cleanup", "--dir", p["rec"], "--job-id", "nightly")
    assert r.returncode == 0 and r.stdout.startswith("nothing to delete at"), r.stdout


def test_the_python_functions_refuse_every_id_that_is_not_one_name(tree, spark):
    fs, p = tree
    calls = {"status": lambda j: fullwindow.recovery.status(p["rec"], j),
             "verify": lambda j: fullwindow.recovery.verify(p["rec"], j),
             "job_events": lambda j: fullwindow.recovery.job_events(p["rec"], j),
             "cleanup": lambda j: fullwindow.recovery.cleanup(spark, j, p["rec"])}
    for name, call in calls.items():
        for bad in BAD_IDS:
            with pytest.raises(ConfigurationError, match=f"^recovery.{name}: job_id "):
                call(bad)
            intact(fs, p)
        for bad in (None, 3, b"nightly", ["nightly"]):
            if name == "cleanup" and bad is None:
                continue  # None: the session's jobId (tested below)
            with pytest.raises(TypeError, match=f"^recovery.{name}: job_id must be a string"):
                call(bad)
    for bad in ("", None, 7):
        if bad is None:
            continue
        with pytest.raises((ConfigurationError, TypeError), match="^recovery.status: directory"):
            fullwindow.recovery.status(bad, "nightly")
    for name in ("photos", "empty", "notes.txt"):
        with pytest.raises(ConfigurationError, match="is not a recovery job's directory"):
            fullwindow.recovery.cleanup(spark, name, p["rec"])
        intact(fs, p)
    # the session's own settings are refused the same way, and an empty argument is never
    # replaced by the session's job id
    spark.conf.set("spark.fullwindow.recovery.jobId", "nightly")
    spark.conf.set("spark.fullwindow.recovery.dir", p["rec"])
    try:
        with pytest.raises(ConfigurationError, match="job_id is empty"):
            fullwindow.recovery.cleanup(spark, "")
        intact(fs, p)
        spark.conf.set("spark.fullwindow.recovery.jobId", "..")
        with pytest.raises(ConfigurationError, match=r"recovery.jobId is '\.\.'"):
            fullwindow.recovery.cleanup(spark)
        intact(fs, p)
        spark.conf.set("spark.fullwindow.recovery.jobId", "nightly")
        assert fullwindow.recovery.cleanup(spark) is True
        assert not fs.exists(p["job"])
        intact(fs, p, job=False)
    finally:
        spark.conf.unset("spark.fullwindow.recovery.jobId")
        spark.conf.unset("spark.fullwindow.recovery.dir")


@pytest.mark.parametrize("bad", ["..", ".", "x/../.."])
def test_session_settings_refuse_them_too(bad, tmp_path):
    with pytest.raises(ConfigurationError, match="a job id names one directory"):
        fullwindow.configure(
            SparkSession.builder,
            {"spark.fullwindow.recovery.enabled": "true",
             "spark.fullwindow.recovery.dir": str(tmp_path),
             "spark.fullwindow.recovery.jobId": bad})
    assert os.listdir(tmp_path) == []


def test_errors_are_fullwindow_errors():
    assert issubclass(ConfigurationError, FullWindowError)
