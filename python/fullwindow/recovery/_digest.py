"""The code a user function runs, digested for the recovery fingerprint.

cloudpickle stores a function or class that lives in an importable module by reference (module
and name), so its pickle stays the same when the function's body changes; a recovered run would
then reuse outputs of the old code. This walks the code itself: the function's byte code and
constants, its defaults and closure, the module globals it names (functions, classes and plain
values, recursively), and for an object (an AggregateFunction, a ProcessWindowFunction) its
class's methods and its attributes. Code of the standard library and of installed packages is
named, not walked: it changes with their versions, not with the job; their objects (a numpy array
captured by a closure) are digested by their pickle.

The result must be the same in every process that runs the same program: string hashing is
randomized per process, so sets and frozensets are digested in sorted order.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import sysconfig
import types
from typing import Any

_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_MAX_NODES = 100_000
_MAX_DEPTH = 12


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
             if paths.get(k)}
    return tuple(r.rstrip(os.sep) + os.sep for r in roots)


_LIBRARY = _library_roots()


def _is_library(module_name: Any) -> bool:
    if module_name == "__main__":
        return False
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    path = getattr(module, "__file__", None)
    if not path:  # built in, or not imported here: nothing of the job's to walk
        return True
    return os.path.realpath(path).startswith(_LIBRARY)


class _Walker:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.seen: set[int] = set()
        self.nodes = 0

    def put(self, *parts: Any) -> None:
        for p in parts:
            self.h.update(p if isinstance(p, bytes) else str(p).encode())
            self.h.update(b"\0")

    def code(self, co: types.CodeType) -> None:
        self.put(b"code", co.co_code, co.co_names)
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                self.code(c)
            else:
                self.const(c)

    def const(self, c: Any) -> None:
        if isinstance(c, (set, frozenset)):
            self.put(b"set", *sorted(repr(x) for x in c))
        elif isinstance(c, tuple):
            self.put(b"tuple", len(c))
            for x in c:
                self.const(x)
        else:
            self.put(repr(c))

    @staticmethod
    def global_names(co: types.CodeType):
        yield from co.co_names
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                yield from _Walker.global_names(c)

    def visit(self, obj: Any, depth: int = 0) -> None:
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return
        if isinstance(obj, _PLAIN):
            self.put(b"value", repr(obj))
            return
        if isinstance(obj, (set, frozenset)):
            self.put(b"set", *sorted(repr(x) for x in obj))
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        d = depth + 1
        if isinstance(obj, types.ModuleType):
            self.put(b"module", obj.__name__)
        elif isinstance(obj, types.MethodType):
            self.visit(obj.__func__, d)
            self.visit(obj.__self__, d)
        elif isinstance(obj, functools.partial):
            self.visit(obj.func, d)
            self.visit(obj.args, d)
            self.visit(obj.keywords, d)
        elif isinstance(obj, (staticmethod, classmethod)):
            self.visit(obj.__func__, d)
        elif isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    self.visit(f, d)
        elif isinstance(obj, types.FunctionType):
            self.put(b"function", obj.__module__, obj.__qualname__)
            if _is_library(obj.__module__):
                return
            self.code(obj.__code__)
            self.visit(obj.__defaults__, d)
            self.visit(obj.__kwdefaults__, d)
            for cell in obj.__closure__ or ():
                try:
                    self.visit(cell.cell_contents, d)
                except ValueError:  # an empty cell
                    self.put(b"empty cell")
            names = dict.fromkeys(self.global_names(obj.__code__))
            for name in names:
                if name in obj.__globals__:
                    self.put(b"global", name)
                    self.visit(obj.__globals__[name], d)
        elif isinstance(obj, type):
            self.put(b"class", obj.__module__, obj.__qualname__)
            if _is_library(obj.__module__):
                return
            for name, member in vars(obj).items():
                if isinstance(member, (types.FunctionType, staticmethod, classmethod, property)) \
                        or isinstance(member, _PLAIN):
                    self.put(b"member", name)
                    self.visit(member, d)
            for base in obj.__bases__:
                self.visit(base, d)
        elif isinstance(obj, (list, tuple)):
            self.put(b"seq", len(obj))
            for x in obj:
                self.visit(x, d)
        elif isinstance(obj, dict):
            self.put(b"dict", len(obj))
            for k, v in obj.items():
                self.visit(k, d)
                self.visit(v, d)
        else:
            cls = type(obj)
            self.visit(cls, d)
            if _is_library(cls.__module__):
                self.put(b"data", _pickled(obj))   # e.g. a numpy array a function captured
            else:
                state = getattr(obj, "__dict__", None)
                if isinstance(state, dict):
                    self.visit(state, d)
                slots = [n for c in cls.__mro__ for n in getattr(c, "__slots__", ())
                         if isinstance(n, str)]
                for n in slots:
                    if hasattr(obj, n):
                        self.put(b"slot", n)
                        self.visit(getattr(obj, n), d)


def _pickled(obj: Any) -> bytes:
    from pyspark import cloudpickle

    try:
        return hashlib.sha256(cloudpickle.dumps(obj)).digest()
    except Exception:  # noqa: BLE001 - unpicklable here means it fails later anyway
        return repr(type(obj)).encode()


def code_digest(obj: Any) -> bytes:
    """A digest of the code ``obj`` runs (see the module docstring)."""
    w = _Walker()
    w.visit(obj)
    return w.h.digest()


def target_of(func: Any) -> str:
    """What names an action's function in the job's write records: its qualified name (with
    its module, unless that is the program itself)."""
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module and module != "__main__" else name
