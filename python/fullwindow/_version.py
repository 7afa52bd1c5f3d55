"""The fullwindow package's version (one place; the package, the Connect artifact check and
the wheel's metadata read it)."""
__version__ = "0.1.0"
