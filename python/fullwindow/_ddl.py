"""DDL schema strings of the common shapes turned into a ``StructType`` without the JVM.

``pyspark.sql.types._parse_datatype_string`` asks the JVM (or the Connect server) for every DDL
string; in a fresh driver its first call pays for loading Spark's SQL parser (~0.2 s), and a job
resumed after a crash pays that again before its first full-window operation. The schemas users
pass to ``mapPartition(func, "k long, total double")`` are almost always a flat list of
``name type`` pairs of plain types, which this module reads itself. Anything else (``NOT NULL``,
``COMMENT``, ``char``/``varchar``, ``timestamp`` (its meaning depends on the session's
``spark.sql.timestampType``), intervals, collations, nested types, ``name: type``...) returns
``None`` and the caller asks Spark, so the result is always the one Spark's parser gives
(tests/test_ddl.py compares the two on every form this module accepts).
"""
from __future__ import annotations

import re
from typing import Optional

from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DataType, DateType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType,
                               ShortType, StringType, StructField, StructType)

_ATOMIC = {
    "boolean": BooleanType, "tinyint": ByteType, "byte": ByteType, "smallint": ShortType,
    "short": ShortType, "int": IntegerType, "integer": IntegerType, "bigint": LongType,
    "long": LongType, "float": FloatType, "real": FloatType, "double": DoubleType,
    "string": StringType, "binary": BinaryType, "date": DateType,
}
_DECIMAL = ("decimal", "dec", "numeric")
# one field: a plain identifier (letters, digits, underscore; not only digits) or a backquoted
# one without backquotes inside, then a type name, optionally with (p) or (p, s)
_FIELD = re.compile(
    r"\s*(?:(?P<plain>[A-Za-z_][A-Za-z0-9_]*)|`(?P<quoted>[^`]+)`)"
    r"\s+(?P<type>[A-Za-z]+)\s*(?:\(\s*(?P<p>\d+)\s*(?:,\s*(?P<s>\d+)\s*)?\))?\s*\Z")
_COMMA = re.compile(r",(?![^()]*\))")


def _type(name: str, precision: Optional[str], scale: Optional[str]) -> Optional[DataType]:
    name = name.lower()
    if name in _DECIMAL:
        p = int(precision) if precision is not None else 10
        s = int(scale) if scale is not None else 0
        return DecimalType(p, s) if 1 <= p <= 38 and s <= p else None
    if precision is not None:
        return None
    cls = _ATOMIC.get(name)
    return cls() if cls is not None else None


def parse_simple_schema(text: str) -> Optional[StructType]:
    """The struct a DDL string ``"a long, b double, c decimal(10, 2)"`` describes, or ``None``
    when the string is not such a flat list of plain fields (then Spark's parser decides)."""
    if not isinstance(text, str) or not text.strip() or "--" in text or "/*" in text:
        return None
    fields = []
    names = set()
    for part in _COMMA.split(text):  # commas outside parentheses: decimal(p, s) stays whole
        m = _FIELD.match(part)
        if m is None:
            return None
        dt = _type(m.group("type"), m.group("p"), m.group("s"))
        name = m.group("plain") if m.group("plain") is not None else m.group("quoted")
        if dt is None or name.lower() in names:
            return None
        names.add(name.lower())
        fields.append(StructField(name, dt, True))
    return StructType(fields)
