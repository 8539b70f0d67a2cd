"""PartEvo: niches from features, niche-aware operators, offspring returned to their niche."""
from __future__ import annotations

import re

import numpy as np
import pytest
from llm4ad.base import TextFunctionProgramConverter

from raise_plugin.methods.partevo import OPERATORS, PartEvo, build_niches, code_features, kmeans

_NICHE = re.compile(r"The parent belongs to niche (\d+) of (\d+)")


class Traced(PartEvo):
    """Keeps every sample with the niche it was given."""

    def _after_sample(self, func):
        super()._after_sample(func)
        self.traced = getattr(self, "traced", []) + [(func, getattr(func, "_niche", None))]  # niches are relabelled later


def test_every_operator_runs_and_its_prompt_carries_the_niche_context(method_factory):
    method = method_factory("partevo", "ojsp", budget=40, pop_size=6, cls=Traced, rebuild_every=2)
    method.run()
    assert all(method.operator_counts.get(op, 0) > 0 for op in OPERATORS)
    calls = method._sampler._sampler.calls
    code_calls = [c for c in calls if c[0] not in ("reflection", "summary")]
    assert len(code_calls) == len(method.traced) == 40
    for (op, prompt, _), (func, niche) in zip(code_calls, method.traced):
        if op == "i1":
            continue
        assert op in OPERATORS
        found = _NICHE.search(prompt)
        assert found, prompt
        assert int(found.group(1)) - 1 == niche  # the offspring joins its parent's niche
        if op == "cross_niche":
            other = re.search(r"from another niche \(niche (\d+)\)", prompt)
            assert other and other.group(1) != found.group(1)
            assert prompt.count("```python") == 2
        if op == "local_global_elite":
            assert "(local elite)" in prompt and "Global best heuristic" in prompt and prompt.count("```python") == 3


def test_text_steps_feed_the_rewrite_and_summary_guided_prompts(method_factory):
    method = method_factory("partevo", "ovrp", budget=40, pop_size=6)
    method.run()
    calls = method._sampler._sampler.calls
    summary = None
    for k, (op, prompt, answer) in enumerate(calls):
        if op == "summary":
            summary = " ".join(answer.split())
            assert "[Elite 1]" in prompt
        if op == "summary_guided":
            assert summary is not None and summary in prompt
        if op == "reflection_rewrite":
            assert calls[k - 1][0] == "reflection"
            assert " ".join(calls[k - 1][2].split()) in prompt
    assert method.global_summary


def test_niches_are_rebuilt_every_n_generations_and_cover_the_population(method_factory):
    method = method_factory("partevo", "ojsp", budget=48, pop_size=6, rebuild_every=2, num_niches=3)
    method.run()
    history = method.niche_history
    assert len(history) >= 3
    gens = [h["generation"] for h in history]
    assert all(b - a >= 2 for a, b in zip(gens, gens[1:]))
    assert all(sum(h["sizes"]) <= 6 and len(h["sizes"]) <= 3 for h in history)
    assert history[-1]["features"] > 29  # code statistics plus the per-instance metrics
    niches = method.niches()
    assert sum(len(m) for m in niches.values()) == len(method._usable())


def test_survival_keeps_every_niches_best(method_factory):
    method = method_factory("partevo", "ojsp", budget=4)
    rule = method._population._survivors
    funcs = []
    for i, (score, niche) in enumerate([(-1.0, 0), (-1.1, 0), (-1.2, 0), (-5.0, 1)]):
        f = TextFunctionProgramConverter.text_to_function(f"def priority(a, b):\n    return b[:, 1] * {i}\n")
        f.score, f._niche = score, niche
        funcs.append(f)
    kept = rule(funcs, 3)
    assert funcs[3] in kept and funcs[0] in kept and len(kept) == 3


def test_kmeans_is_seeded_and_separates_clear_groups():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 0.1, (5, 2)), rng.normal(5, 0.1, (5, 2))])
    a = kmeans(x, 2, np.random.default_rng(1))
    b = kmeans(x, 2, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert len(set(a[:5])) == 1 and len(set(a[5:])) == 1 and a[0] != a[5]
    codes = ["def f(x):\n    return x * 2.0\n", "def f(x):\n    return x * 3.0\n",
             "def f(x):\n    if x > 1:\n        return np.log(x) ** 2\n    return np.sqrt(x)\n"]
    labels, dims = build_niches(np.array([code_features(c) for c in codes]), None, 2, np.random.default_rng(0))
    assert labels[0] == labels[1] != labels[2] and dims >= 1


def test_unknown_operator_names_are_refused(method_factory):
    with pytest.raises(ValueError, match="cross_niche"):
        method_factory("partevo", "ojsp", operators=("reflection_rewrite", "crossniche"))
