"""tests/test_bad_input.py's DataFrame sweeps (sort keys and orders, schemas, functions, key
columns, runtimeMode), run on a Spark Connect session (see conftest.py): the same error classes,
naming the argument, through the server's analysis."""
from test_bad_input import (CASES, df, test_functions, test_key_columns,  # noqa: F401
                            test_runtime_mode_values, test_schemas, test_sort_keys,
                            test_sort_orders, test_zz_how_many_cases_ran)
