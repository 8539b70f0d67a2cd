"""Sub-commands of ``raise-ahd``; each module exposes ``register(subparsers)``."""
