"""The harness: evaluate heuristics on suites, compare methods, write tables and figures."""
