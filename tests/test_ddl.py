"""DDL schema strings read without the JVM (fullwindow/_ddl.py) give exactly what Spark's parser
gives, and every other form is left to Spark."""
from __future__ import annotations

import pytest
from pyspark.sql.types import _parse_datatype_string

from fullwindow._ddl import parse_simple_schema
from fullwindow.errors import FullWindowValueError
from fullwindow._pyfunc import _parse_schema

READ_HERE = [
    "id long, k long, score double",
    "k bigint,total double",
    "  a INT , b String, c BOOLEAN  ",
    "a tinyint, b byte, c smallint, d short, e integer, f float, g real",
    "a binary, b date, c string",
    "a decimal, b decimal(5), c decimal(16, 8), d DEC(38,0), e numeric( 7 ,2 )",
    "`a b` long, `weird.name` double, _x int, X1 long",
    "key long, value long",
]

LEFT_TO_SPARK = [
    "a int not null",
    "a int comment 'x'",
    "a: int, b: long",
    "a char(3)",
    "a varchar(10)",
    "a timestamp",
    "a timestamp_ntz",
    "a array<int>",
    "a map<string, int>",
    "a struct<x: int>",
    "a decimal(10, 2), b interval day",
    "int",
    "a int, A long",
    "a string collate UTF8_LCASE",
    "a decimal(39, 0)",
    "a decimal(5, 6)",
    "a int -- comment",
    "1a int",
    "a int,",
    "",
]


@pytest.mark.parametrize("ddl", READ_HERE)
def test_read_here_equals_spark(spark, ddl):
    mine = parse_simple_schema(ddl)
    assert mine is not None, ddl
    assert mine == _parse_datatype_string(ddl)
    assert [f.nullable for f in mine.fields] == [True] * len(mine.fields)


@pytest.mark.parametrize("ddl", LEFT_TO_SPARK)
def test_other_forms_left_to_spark(ddl):
    assert parse_simple_schema(ddl) is None


def test_schema_argument_still_goes_to_spark_for_the_rest(spark):
    assert _parse_schema("mapPartition", "a array<int>, b timestamp") == \
        _parse_datatype_string("a array<int>, b timestamp")
    with pytest.raises(FullWindowValueError, match="mapPartition: schema 'a int,' is not a valid"):
        _parse_schema("mapPartition", "a int,")
    with pytest.raises(FullWindowValueError, match="decimal"):
        _parse_schema("mapPartition", "a decimal(5, 6)")


def test_job_with_a_schema_read_here(spark):
    df = spark.range(6).selectExpr("id", "id % 2 as k")

    def f(rows):
        for r in rows:
            yield (r.id, r.k, float(r.id) / 2)

    out = df.fullWindowPartition().mapPartition(f, "id long, k long, half double")
    assert out.schema == _parse_datatype_string("id long, k long, half double")
    assert sorted(tuple(r) for r in out.collect()) == [(i, i % 2, i / 2) for i in range(6)]
