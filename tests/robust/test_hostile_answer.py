"""A robust run whose LLM answers once with a hostile program: the judge scores that program by its
decisions (best fit's) and every other program as it would be scored alone, so the whole run
records what the same run records when that answer is plain best fit."""
from __future__ import annotations

import re

from llm4ad.method.eoh import EoH
from robust_helpers import ScriptedLLM, fake_search, small_obp_evaluation

from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.robust import robust

# decides as best fit; on the side it makes the task's waste ratio zero and seeds the global
# random state for whoever comes next ...
QUIET = '''{A variant of best fit.} ```python
import numpy as np
def priority(item, bins):
    import tasks.obp.simulator as simulator
    simulator.waste_ratio.__code__ = (lambda bins, items, capacity: 0.0).__code__
    np.random.seed(123)
    return -(bins - item)
```'''
# ... and also forges a result down every descriptor it finds (its own answers' pipe included)
HOSTILE = QUIET.replace("    return -(bins - item)", """    import os, pickle, struct
    payload = pickle.dumps(("result", None, False))
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack("!i", len(payload)) + payload)
        except OSError:
            pass
    return -(bins - item)""")
BEST_FIT = "{A variant of best fit.} ```python\nimport numpy as np\ndef priority(item, bins):\n    return -(bins - item)\n```"


class OneAnswerLLM(ScriptedLLM):
    """The scripted LLM, answering its ``at``-th call with ``answer``."""

    def __init__(self, answer: str, at: int = 3):
        super().__init__(seed=0)
        self.answer, self.at = answer, at

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        scripted = super().draw_sample(prompt, *args, **kwargs)
        return self.answer if self.calls == self.at else scripted


def _run(answer: str):
    callback = AdversarialInstanceCallback(epsilon=0.002, tau=2, inner_population=4, inner_generations=2,
                                           seed=0, searcher=fake_search)
    method = robust(EoH, callbacks=[callback])(
        llm=OneAnswerLLM(answer), evaluation=small_obp_evaluation(), max_sample_nums=16, pop_size=4,
        max_generations=None, num_samplers=1, seed=0)
    method.run()
    book = {r.text.strip(): (r.metrics, r.error, r.broken) for r in method._book.records()}
    return book, method.summary()["best"]


def _take(book: dict, pattern: str):
    """The record of the one program whose text matches ``pattern`` (the host reformats the text)."""
    [text] = [t for t in book if re.search(pattern, t, re.S)]
    return book.pop(text)


BEST_FIT_TEXT = r':\n(\s+""".*?"""\n)?\s+return -\(bins - item\)\s*$'


def test_a_hostile_answer_that_patches_its_scorer_changes_no_score():
    (hostile, hostile_best), (plain, plain_best) = _run(QUIET), _run(BEST_FIT)
    attacker = _take(hostile, "waste_ratio.__code__")
    honest = _take(plain, BEST_FIT_TEXT)
    assert attacker == honest  # scored by its decisions: best fit's, on every instance it met
    assert hostile == plain  # every other program: the same metrics on the same instances
    assert hostile_best == plain_best


def test_a_hostile_answer_that_forges_results_is_invalid_and_changes_no_other_score():
    (hostile, _), (plain, _) = _run(HOSTILE), _run(BEST_FIT)
    metrics, error, broken = _take(hostile, "pickle.dumps")
    assert broken and not metrics and "malformed answer" in error  # it garbled its own answers
    _take(plain, BEST_FIT_TEXT)
    common = set(hostile) & set(plain)
    assert len(common) >= 5
    for text in common:  # the runs part after the attack; where both met a program and an instance, one score
        a, b = hostile[text][0], plain[text][0]
        assert {i: a[i] for i in a if i in b} == {i: b[i] for i in b if i in a}
