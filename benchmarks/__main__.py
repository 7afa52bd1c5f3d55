import sys

from benchmarks.harness import main

sys.exit(main())
