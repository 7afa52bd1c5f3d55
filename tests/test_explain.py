"""explain() of every fullwindow node kind, logical and physical: no node has missing input
(Spark's ``!`` mark), and each line shows the node's arguments readably (keys, order, function,
output), the way Spark's own nodes do."""
from __future__ import annotations

import re

import pandas as pd
import pytest
from pyspark.sql import functions as F

import fullwindow  # noqa: F401
from fullwindow import AggregateFunction, EndOfStreamWindows, Order, ProcessWindowFunction

EOS = EndOfStreamWindows.get()
ID = r"#\d+L?"  # an expression id


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, row, acc):
        return acc + 1

    def get_result(self, acc):
        return (acc,)

    def merge(self, a, b):
        return a + b


class Keys(ProcessWindowFunction):
    def process(self, key, ctx, rows):
        yield (key,)


def top(rows):
    yield from rows


def per_key(key, rows):
    yield from rows


def frames_of(key, frames):
    yield from frames


def pair(key, left, right):
    yield (key,)


@pytest.fixture(scope="module")
def df(spark):
    out = spark.range(0, 40, 1, 4).select((F.col("id") % 5).alias("k"), F.col("id").alias("v"))
    out.createOrReplaceTempView("explain_t")
    return out


def _nodes(plan):
    """Every node of a JVM plan, AdaptiveSparkPlan's current plan and its query stages' plans
    included."""
    out, todo = [], [plan]
    while todo:
        node = todo.pop()
        if node.nodeName() == "AdaptiveSparkPlan":
            node = node.executedPlan()
        if node.nodeName().endswith("QueryStage"):
            todo.append(node.plan())
        out.append(node)
        children = node.children()
        todo.extend(children.apply(i) for i in range(children.size()))
    return out


def plans(out) -> dict[str, str]:
    """The analyzed, optimized and executed plans of ``out`` (after running it), as text; each
    checked for nodes with missing input first."""
    out.collect()
    qe = out._jdf.queryExecution()
    texts = {}
    for name, plan in (("analyzed", qe.analyzed()), ("optimized", qe.optimizedPlan()),
                       ("physical", qe.executedPlan())):
        missing = [n.simpleString(25) for n in _nodes(plan) if not n.missingInput().isEmpty()]
        assert not missing, f"{name} plan nodes with missing input: {missing}"
        texts[name] = "\n".join(n.simpleString(25) for n in _nodes(plan))
        assert not re.search(r"^\s*(\+- |:- )?!", plan.treeString(), re.M), plan.treeString()
    return texts


def line(text: str, pattern: str) -> None:
    """Some line of ``text`` is exactly ``pattern`` (a regex; ``{id}`` stands for an expression id)."""
    rx = re.compile(pattern.replace("{id}", ID))
    assert any(rx.fullmatch(ln.strip()) for ln in text.splitlines()), f"no line {pattern!r} in\n{text}"


def both(texts: dict[str, str], pattern: str) -> None:
    line(texts["optimized"], pattern)
    line(texts["physical"], pattern + "(, columnar=true)?")  # a keyed node sorting by columns


def test_sort_partition(df):
    texts = plans(df.fullWindowPartition().sortPartition([("k", Order.ASCENDING), ("v", Order.DESCENDING)]))
    both(texts, r"FullWindowSortPartition order=\[k{id} ASC NULLS FIRST, v{id} DESC NULLS LAST\]")


def test_aggregate_columns_has_no_missing_input(df):
    texts = plans(df.fullWindowPartition().aggregate(F.sum("v").alias("total"), F.max("v")))
    line(texts["optimized"], r"Aggregate \[full_window_partition\(\)\], \[sum\(v{id}\) AS total{id}, "
                             r"max\(v{id}\) AS max\(v\){id}\]")
    line(texts["physical"], r"FullWindowAggregate perPartitionKeys=\[\], functions=\[sum\(v{id}\), "
                            r"max\(v{id}\)\], output=\[total{id}, max\(v\){id}\]")


def test_sql_hint_aggregates(spark, df):
    texts = plans(spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ k, sum(v) AS s FROM explain_t GROUP BY k"))
    line(texts["physical"], r"FullWindowAggregate perPartitionKeys=\[k{id}\], functions=\[sum\(v{id}\)\], "
                            r"output=\[k{id}, s{id}\]")
    texts = plans(spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ sum(v) AS s, max(v) + 1 AS m FROM explain_t"))
    line(texts["physical"], r"FullWindowAggregate perPartitionKeys=\[\], functions=\[sum\(v{id}\), "
                            r"max\(v{id}\)\], output=\[s{id}, m{id}\]")
    texts = plans(spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ * FROM explain_t ORDER BY v DESC"))
    both(texts, r"FullWindowSortPartition order=\[v{id} DESC NULLS LAST\]")


@pytest.mark.parametrize("call, pattern", [
    (lambda w: w.mapPartition(top, "k long, v long"),
     r"FullWindowMapPartition function=top, output=\[k{id}, v{id}\]"),
    (lambda w: w.mapPartitionInArrow(lambda it: it, "k long, v long"),
     r"FullWindowMapPartitionInArrow function=<lambda>, output=\[k{id}, v{id}\]"),
    (lambda w: w.mapPartitionInPandas(lambda it: it, "k long, v long"),
     r"FullWindowMapPartitionInPandas function=<lambda>, output=\[k{id}, v{id}\]"),
    (lambda w: w.aggregate(Count(), "n long"), r"FullWindowAggregate function=Count, output=\[n{id}\]"),
    (lambda w: w.reduce(lambda a, b: a), r"FullWindowReduce function=<lambda>, output=\[k{id}, v{id}\]"),
    (lambda w: w.process(Keys(), "k long"), r"FullWindowProcess function=Keys, output=\[k{id}\]"),
])
def test_non_keyed_python_operations(df, call, pattern):
    both(plans(call(df.fullWindowPartition())), pattern)


@pytest.mark.parametrize("call, pattern", [
    (lambda k: k.fullWindowPartition().mapPartition(per_key, "k long, v long"),
     r"FullWindowKeyedMapPartition keys=\[k{id}\], function=per_key, output=\[k{id}, v{id}\]"),
    (lambda k: k.fullWindowPartition().mapPartitionInPandas(frames_of, "k long, v long"),
     r"FullWindowKeyedMapPartitionInPandas keys=\[k{id}\], function=frames_of, output=\[k{id}, v{id}\]"),
    (lambda k: k.window(EOS).applyInPandas(frames_of, "k long, v long"),
     r"FullWindowKeyedApplyInPandas keys=\[k{id}\], function=frames_of, output=\[k{id}, v{id}\]"),
    (lambda k: k.window(EOS).apply(per_key, "k long, v long"),
     r"FullWindowKeyedApply keys=\[k{id}\], function=per_key, output=\[k{id}, v{id}\]"),
    (lambda k: k.fullWindowPartition().aggregate(Count(), "n long"),
     r"FullWindowKeyedAggregate keys=\[k{id}\], function=Count, output=\[k{id}, n{id}\]"),
    (lambda k: k.reduce(lambda a, b: a),
     r"FullWindowKeyedReduce keys=\[k{id}\], function=<lambda>, output=\[k{id}, v{id}\]"),
    (lambda k: k.window(EOS).process(Keys(), "k long"),
     r"FullWindowKeyedProcess keys=\[k{id}\], function=Keys, output=\[k{id}\]"),
])
def test_keyed_python_operations(df, call, pattern):
    both(plans(call(df.keyBy("k"))), pattern)


def test_keyed_jvm_operations(df):
    texts = plans(df.keyBy("k").fullWindowPartition().sortPartition("v", Order.DESCENDING))
    both(texts, r"FullWindowSortPartition order=\[k{id} ASC NULLS FIRST, v{id} DESC NULLS LAST\]")
    # combined: Spark's partial aggregation under the exchange, the final over it, both named
    texts = plans(df.keyBy("k").fullWindowPartition().aggregate(F.sum("v").alias("s")))
    line(texts["physical"], r"FullWindowAggregate keys=\[k{id}\], functions=\[sum\(v{id}\)\], "
                            r"output=\[k{id}, s{id}\], combined=true")
    line(texts["physical"], r"HashAggregate\(keys=\[k{id}\], functions=\[partial_sum\(v{id}\)\]\)")
    line(texts["physical"], r"FullWindowCombineInput keys=\[k{id}\]")


def test_running_reduce_shows_its_order(spark, df):
    spark.conf.set("spark.fullwindow.runtimeMode", "STREAMING")
    try:
        out = df.keyBy("k").reduce(lambda a, b: a)
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")
    both(plans(out), r"KeyedRunningReduce keys=\[k{id}\], order=\[k{id} ASC NULLS FIRST, "
                     r"__fullwindow_seq_\d+{id} ASC NULLS FIRST\], function=<lambda>, output=\[k{id}, v{id}\]")


def test_cogroup(df):
    other = df.select(F.col("k").alias("key"), (F.col("v") * 2).alias("w"))
    for method in ("apply", "applyInPandas"):
        f = pair if method == "apply" else lambda key, left, right: iter([pd.DataFrame({"k": [key]})])
        name = "pair" if method == "apply" else "<lambda>"
        out = getattr(df.keyBy("k").coGroup(other.keyBy("key")).window(EOS), method)(f, "k long")
        both(plans(out), rf"FullWindowCoGroup leftKeys=\[k{{id}}\], rightKeys=\[key{{id}}\], "
                         rf"function={name}, output=\[k{{id}}\]")


def test_long_lists_are_shortened_as_spark_shortens_them(spark):
    wide = spark.range(3).select(*[F.col("id").alias(f"c{i}") for i in range(30)])
    out = wide.fullWindowPartition().mapPartition(top, wide.schema)
    texts = plans(out)
    line(texts["physical"], r"FullWindowMapPartition function=top, output=\[c0{id}, .*, \.\.\. \d+ more fields\]")
