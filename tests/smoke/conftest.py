"""Python workers unpickle the smoke suite's functions by reference: let them import its module
(tests/conftest.py does the same for tests/; the JVM and its workers inherit the environment)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH", "")] if p)
