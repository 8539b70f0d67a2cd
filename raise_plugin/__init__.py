"""RAISE: robust LLM-driven heuristic design for LLM4AD (adversarial instances in an eps-ball)."""
__version__ = "0.1.0"
