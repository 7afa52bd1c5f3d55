"""Small diagnostic experiments behind the explanations in benchmarks/notes/ (not cases)."""
