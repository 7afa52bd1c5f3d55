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
# recovered jobs) runs on the newest line that both have a release for: Delta 4.4.0 is built for
# Spark 4.0, 4.1 and 4.2 (io.delta:delta-spark_<line>_2.13; the delta-spark wheel takes pyspark
# 4.0.1 to 4.2.0), Iceberg 1.12.0 for Spark 3.5 and 4.1 (iceberg-spark-runtime-<line>_2.13; no
# 4.2 or 4.3 runtime yet). dev/lakehouse/fetch gets them; dev/notes/issue-43-lakehouse.md says more.
FW_LAKE_LINE=4.1
FW_LAKE_DELTA=4.4.0
FW_LAKE_ICEBERG=1.12.0
