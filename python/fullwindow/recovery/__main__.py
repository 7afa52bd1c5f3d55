"""``python -m fullwindow.recovery status|verify|cleanup --dir D --job-id J``."""
from fullwindow.recovery._status import main

if __name__ == "__main__":
    raise SystemExit(main())
