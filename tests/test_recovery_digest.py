"""The recovery fingerprint's digest of a user function follows its code, also for functions of
importable modules (which cloudpickle stores by name only), and is the same in every process."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

from fullwindow.recovery._digest import code_digest

MODULE = '''
import functools
LIMIT = {limit}

def helper(x):
    return x * {factor}

def score(rows):
    for r in rows:
        if r.k in {{"a", "b", "c"}} and r.v < LIMIT:
            yield (r.k, helper(r.v))

class Sum:
    def create_accumulator(self):
        return 0
    def add(self, row, acc):
        return acc + row.v * {factor}
    def get_result(self, acc):
        return (acc,)
    def merge(self, a, b):
        return a + b

def make_closure(n):
    def inner(rows):
        return [r for r in rows if r.v > n]
    return inner
'''


@pytest.fixture
def load(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    count = {"n": 0}

    def _load(limit=10, factor=2):
        (tmp_path / "fw_digest_mod.py").write_text(MODULE.format(limit=limit, factor=factor))
        count["n"] += 1
        # a fresh module object each time, as a new driver process would import it
        sys.modules.pop("fw_digest_mod", None)
        importlib.invalidate_caches()
        return importlib.import_module("fw_digest_mod")
    yield _load
    sys.modules.pop("fw_digest_mod", None)


def test_same_code_same_digest(load):
    a, b = load(), load()
    assert a is not b
    assert code_digest(a.score) == code_digest(b.score)
    assert code_digest(a.Sum()) == code_digest(b.Sum())
    assert code_digest(a.make_closure(3)) == code_digest(b.make_closure(3))


def test_a_changed_helper_or_constant_changes_the_digest(load):
    base = load()
    d_score, d_sum = code_digest(base.score), code_digest(base.Sum())
    helper_changed = load(factor=3)
    assert code_digest(helper_changed.score) != d_score     # helper's body changed
    assert code_digest(helper_changed.Sum()) != d_sum       # a method's body changed
    constant_changed = load(limit=11)
    assert code_digest(constant_changed.score) != d_score   # module constant it reads changed
    assert code_digest(constant_changed.Sum()) == d_sum     # Sum does not read LIMIT


def test_closure_values_and_instance_state_count(load):
    m = load()
    assert code_digest(m.make_closure(3)) != code_digest(m.make_closure(4))
    s1, s2 = m.Sum(), m.Sum()
    s2.scale = 5
    assert code_digest(s1) != code_digest(s2)
    assert code_digest(lambda rows: rows) != code_digest(lambda rows: list(rows))


def test_digest_is_the_same_under_different_string_hash_seeds(tmp_path):
    (tmp_path / "fw_digest_mod.py").write_text(MODULE.format(limit=10, factor=2))
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import fw_digest_mod
        from fullwindow.recovery._digest import code_digest
        print(code_digest(fw_digest_mod.score).hex(), code_digest(fw_digest_mod.Sum()).hex())
    """)
    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env,
                                check=True, capture_output=True, text=True).stdout.strip())
    assert len(outs) == 1, outs
