# Sourced by dev/*: reads dev/spark-lines.
FW_DEFAULT_LINE=4.3
fw_lines() {  # every line, or with --other every line but the default
  awk -v skip="${1:-}" -v def="$FW_DEFAULT_LINE" \
    '!/^#/ && NF { if (!(skip == "--other" && $1 == def)) print $1 }' "$(dirname "${BASH_SOURCE[0]}")/spark-lines"
}
fw_field() {  # fw_field LINE N[-]: the N-th (or N-th and later) field of LINE's row
  local row
  row=$(awk -v l="$1" '!/^#/ && $1 == l' "$(dirname "${BASH_SOURCE[0]}")/spark-lines")
  [ -n "$row" ] || { echo "unsupported Spark line '$1'; supported: $(fw_lines | xargs)" >&2; return 2; }
  echo "$row" | tr -s ' ' | cut -d' ' -f"$2"
}
# The thin client (dev/venvs --client, tests/thin): pyspark-client, Spark's pure-Python Connect
# client, exists from 4.0 and on PyPI up to 4.2.0 (no 4.3 yet): its venv .venvs/client-<line>
# holds that pyspark-client and the fullwindow-client wheel, and talks to a server of that line.
FW_CLIENT_LINE=4.2
FW_CLIENT_PYSPARK=4.2.0
fw_python() {  # the python of LINE's venv
  if [ "$1" = "$FW_DEFAULT_LINE" ]; then echo .venv/bin/python; else echo ".venvs/spark-$1/bin/python"; fi
}
fw_connect_path() {  # what the Spark Connect smoke suite of LINE adds to PYTHONPATH (dev/venvs)
  if [ -d ".venvs/spark-$1-connect" ]; then echo "$PWD/.venvs/spark-$1-connect"; fi
}
# The lakehouse suite (tests/lakehouse: Delta Lake and Iceberg tables as inputs and outputs of
# recovered jobs) on each line a Delta or an Iceberg release is built for (from Maven Central's
# and PyPI's listings, 2026-11-28): Delta as io.delta:delta-spark_2.12 for 3.5 (3.3.x, the last
# Delta for Spark 3.5; the delta-spark wheel takes pyspark 3.5.3 to <3.6) and
# io.delta:delta-spark_<line>_2.13 for 4.0-4.2 (4.4.0; its wheel takes pyspark 4.0.1 to 4.2.0);
# Iceberg as org.apache.iceberg:iceberg-spark-runtime-<line>_<scala> (1.12.0 for 3.5 and 4.1,
# 1.11.0 the last for 4.0, none yet for 4.2 and 4.3). "-": no release for that line, and the
# suite skips that format's tests there. dev/lakehouse/fetch <line> gets them;
# dev/notes/issue-43-lakehouse.md says more.
#   line  delta   iceberg
FW_LAKE_VERSIONS='
  3.5   3.3.3   1.12.0
  4.0   4.4.0   1.11.0
  4.1   4.4.0   1.12.0
  4.2   4.4.0   -
'
# The whole lakehouse suite runs on FW_LAKE_LINE (after the smoke suites of dev/test, or with
# dev/test --spark <line>); on the other lines of FW_LAKE_VERSIONS dev/test runs only the tests
# marked ``every_line`` (one input test and one write test per format: CI time).
FW_LAKE_LINE=4.1
fw_lake_lines() {  # the lines with a Delta or an Iceberg release
  echo "$FW_LAKE_VERSIONS" | awk 'NF { print $1 }'
}
fw_lake() {  # fw_lake LINE delta|iceberg: that format's version for LINE, "-" when none
  local col
  case "$2" in delta) col=2 ;; iceberg) col=3 ;; *) echo "fw_lake: delta or iceberg, not '$2'" >&2; return 2 ;; esac
  echo "$FW_LAKE_VERSIONS" | awk -v l="$1" -v c="$col" '$1 == l { print $c; found=1 } END { if (!found) print "-" }'
}
