"""fullwindow benchmark harness: ``python -m benchmarks --help``. See benchmarks/README.md."""
