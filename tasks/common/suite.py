"""Datasets of test instances and their deterministic seeds."""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Dataset", "seed_for"]


@dataclass
class Dataset:
    """One (family, sizes) cell of a test suite: ``instances`` share ``family`` and ``params``."""

    family: str
    params: dict[str, Any]
    instances: list = field(repr=False)

    @property
    def name(self) -> str:
        sizes = "_".join(f"{k}{v}" for k, v in self.params.items())
        return f"{self.family}_{sizes}"


def seed_for(*parts) -> np.random.Generator:
    """A generator seeded from a stable description (task, family, sizes, index)."""
    words = [zlib.crc32(str(p).encode()) for p in parts]
    return np.random.default_rng(np.random.SeedSequence(words))
