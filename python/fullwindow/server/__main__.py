"""``python -m fullwindow.server``: see fullwindow.server."""
import sys

from fullwindow.server import main

sys.exit(main())
