"""Turning a host task (an llm4ad ``Evaluation`` with an instance generator) into a RAISE task.

Subclass ``HostTask`` and declare, in a few lines, what is specific to the task:

- ``name``, ``template_program``, ``task_description`` (usually the host's own);
- ``shift``: the ``ShiftDimension`` (which integer quantity shifts, and K);
- ``shift_values(instance)``: the instance's values along it and their maximum ``high``
  (this gives the instance's histogram);
- ``make_instance(values, rng, **sizes)``: an instance around shifted values, the rest
  drawn as the host's generator draws it;
- ``make_nominal()``: the nominal training set, from the host's generator with fixed seeds;
- ``evaluate(heuristic, instance)``: the metric, lower is better (the host score is ``-metric``);
- ``baselines``: name -> heuristic with the host's signature;
- ``nominal_params``, ``length_key``, ``test_sizes``, ``validation_sizes``: the sizes;
- ``high_of(sizes)`` when the maximum of the shift dimension depends on the sizes.

The suites are built here, once for every such task: the test suite is the five shared
test families x ``test_sizes`` x ``per_dataset`` instances, the validation suite the
validation families x ``validation_sizes`` x ``validation_per_dataset``, every instance
from its own seed (``seed_for``). See docs/tasks.md.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .families import FAMILIES, VALIDATION_FAMILIES, sample_family
from .suite import Dataset, seed_for
from .task import Instance, Task

__all__ = ["HostTask", "host_stream"]


class HostTask(Task):
    """A task declared around a host task; the suites and the checks of the declaration are shared.

    ``length_key`` names the size that is the number of shifted values (the instance
    length); every other size is passed to ``make_instance`` as a keyword. Sizes are
    dicts such as ``{"n": 100, "C": 200}``; they are the datasets' ``params`` too.
    """

    length_key: str = "n"
    test_sizes: tuple[dict[str, Any], ...] = ()
    validation_sizes: tuple[dict[str, Any], ...] = ()
    test_families: tuple[str, ...] = FAMILIES
    validation_families: tuple[str, ...] = VALIDATION_FAMILIES
    per_dataset: int = 5
    validation_per_dataset: int = 2
    family_options: dict[str, float] = {}  # lognormal_median, lognormal_sigma of ``sample_family``

    def __init__(self):
        self.check_declaration()

    def check_declaration(self) -> None:
        """Refuse a declaration that would mix the suites up, naming the field at fault."""
        who = type(self).__name__
        for field in ("name", "shift", "template_program", "task_description", "baselines", "nominal_params"):
            if not hasattr(self, field):
                raise TypeError(f"{who}: declare {field}")
        if not self.test_sizes:
            raise ValueError(f"{who}.test_sizes: give at least one size of the test suite")
        if not self.validation_sizes:
            raise ValueError(f"{who}.validation_sizes: give at least one size of the validation suite")
        shared = set(self.test_families) & set(self.validation_families)
        if shared:
            raise ValueError(f"{who}.validation_families: {', '.join(sorted(shared))} also test families")
        unknown = set(self.test_families + self.validation_families) - set(FAMILIES + VALIDATION_FAMILIES)
        if unknown:
            raise ValueError(f"{who}: unknown families {', '.join(sorted(unknown))}")
        for field in ("test_sizes", "validation_sizes"):
            for size in getattr(self, field):
                if self.length_key not in size:
                    raise ValueError(f"{who}.{field}: {size} lacks the length {self.length_key!r}")
        overlap = [s for s in self.validation_sizes if s in self.test_sizes]
        if overlap:
            raise ValueError(f"{who}.validation_sizes: {overlap} also test sizes")
        if self.per_dataset < 1 or self.validation_per_dataset < 1:
            raise ValueError(f"{who}.per_dataset and validation_per_dataset must be >= 1")

    # -- the shared parts --------------------------------------------------------
    def instance_length(self, instance: Instance) -> int:
        return int(np.asarray(self.shift_values(instance)[0]).size)

    def family_instance(self, family: str, rng: np.random.Generator, **sizes) -> Instance:
        """An instance whose shifted values come from ``family`` at ``sizes`` (nominal sizes
        for what ``sizes`` leaves out), the rest from ``make_instance``: ``Task.family_instance``'s
        signature, so EoH-S's diverse set and the suites draw instances the same way. The
        length is ``sizes[length_key]`` (``length`` is accepted too, as for every task)."""
        params = {**self.nominal_params, **sizes}
        given = params.pop("length", None)
        length = int(params.pop(self.length_key, self.nominal_length if given is None else given))
        values = sample_family(family, length, self.high_of(params), rng, **self.family_options)
        return self.make_instance(np.maximum(values, self.shift.low), rng, **params)

    def _datasets(self, families, sizes, per_dataset: int, *tag: str) -> list[Dataset]:
        return [Dataset(family, dict(size),
                        [self.family_instance(family, seed_for(self.name, *tag, family, *size.values(), i), **size)
                         for i in range(per_dataset)])
                for family in families for size in sizes]

    def test_suite(self) -> list[Dataset]:
        """The test families x ``test_sizes``, ``per_dataset`` instances each, from fixed seeds."""
        return self._datasets(self.test_families, self.test_sizes, self.per_dataset)

    def validation_suite(self, per_dataset: int | None = None) -> list[Dataset]:
        """The validation families x ``validation_sizes``: families, sizes and seeds disjoint from the test suite's."""
        return self._datasets(self.validation_families, self.validation_sizes,
                              per_dataset or self.validation_per_dataset, "validation")


def host_stream(seed: int, count: int, draw) -> list:
    """The first ``count`` instances of a host generator that draws from numpy's legacy stream
    seeded with ``seed``: ``draw(rs)`` makes one from a local ``RandomState`` (the host seeds
    the global one; a local stream gives the same numbers without touching it)."""
    rs = np.random.RandomState(seed)
    return [draw(rs) for _ in range(count)]
