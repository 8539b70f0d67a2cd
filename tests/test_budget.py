"""Cost caps: a run stops cleanly at its LLM cap, says why, and resumes with a higher cap, nothing lost."""
from __future__ import annotations

import json

import pytest

from robust_helpers import SMALL_OBP, ScriptedLLM
from raise_plugin.robust.budget import LLMBudget
from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.llm.usage import UsageLedger
from raise_plugin.rundir.files import read_jsonl
from raise_plugin.runner import resume_run, start_run


class PricedLLM(ScriptedLLM):
    """The scripted OBP LLM with a ledger: every call costs one cent."""

    def __init__(self, seed=0):
        super().__init__(seed, fail_every=0)
        self.usage = UsageLedger(backend="scripted", model="priced")

    def draw_sample(self, prompt, *args, **kwargs):
        answer = super().draw_sample(prompt, *args, **kwargs)
        self.usage.record("sample", input_tokens=100, output_tokens=50, cost_usd=0.01)
        return answer


def config(tmp_path, **kw):
    base = dict(task=SMALL_OBP, robust=False, budget=40, pop_size=4, nominal=1, out=str(tmp_path / "run"),
                validation_trace=False, host_profiler=False)
    base.update(kw)
    return RunConfig(**base)


def test_a_cost_cap_stops_the_run_cleanly_and_resume_with_a_higher_cap_continues(tmp_path):
    method = start_run(config(tmp_path, max_cost_usd=0.10), llm=PricedLLM())
    method.run()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert method.samples == 10 and summary["samples"] == 10
    assert not summary["finished"] and "cost cap of $0.1" in summary["stopped"]
    assert summary["llm_usage"]["total"]["cost_usd"] == pytest.approx(0.10)

    again = resume_run(tmp_path / "run", llm=PricedLLM(1), max_cost_usd=0.25)
    again.run()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert again.samples == 25 and "cost cap of $0.25" in summary["stopped"]
    assert summary["llm_usage"]["total"]["cost_usd"] == pytest.approx(0.25)  # the first 10 cents counted
    samples = [s["sample"] for s in read_jsonl(tmp_path / "run" / "samples.jsonl")]
    assert samples == list(range(1, 26))  # nothing lost, nothing twice

    last = resume_run(tmp_path / "run", llm=PricedLLM(2), max_cost_usd=1.0)
    last.run()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert last.samples == 40 and summary["finished"] and summary["stopped"] is None


def test_a_call_cap_stops_during_the_initial_population(tmp_path):
    method = start_run(config(tmp_path, max_llm_calls=3), llm=PricedLLM())
    method.run()
    assert method.samples == 3 and "cap of 3 LLM requests" in method.stop_reason


def test_a_run_whose_last_sample_meets_its_cap_has_finished(tmp_path):
    """A budget of 8 with a cap of 8 requests said "stopped early: the cap ... is reached", finished false,
    and resume then had nothing to do."""
    summary = start_run(config(tmp_path, budget=8, max_llm_calls=8), llm=PricedLLM()).run()
    assert summary["samples"] == 8 and summary["finished"] and summary["stopped"] is None


def test_a_run_already_at_its_cap_stops_before_any_sample(tmp_path):
    method = start_run(config(tmp_path, max_llm_calls=3), llm=PricedLLM())
    method.run()
    again = resume_run(tmp_path / "run", llm=PricedLLM(1))
    again.run()
    assert again.samples == 3 and again.stop_reason is not None


@pytest.mark.parametrize("kw, field", [({"max_cost_usd": 0}, "max_cost_usd"), ({"max_llm_calls": 0}, "max_llm_calls"),
                                       ({"prices": {"m": [1]}}, "prices"), ({"prices": {"m": [1, -2]}}, "prices")])
def test_bad_caps_and_prices_name_the_field(tmp_path, kw, field):
    with pytest.raises(ConfigError, match=field):
        config(tmp_path, **kw)
    with pytest.raises(ValueError):
        LLMBudget(max_cost_usd=-1)


def test_a_resume_that_sets_a_cap_at_or_below_what_was_sent_is_refused_and_changes_nothing(tmp_path):
    """It went on, exit 0, recorded the lower cap and stopped at once ("the cap of 2 ... is reached (8 sent)")."""
    out = tmp_path / "r"
    start_run(RunConfig(task="ovrp", budget=12, pop_size=4, tau=1, max_llm_calls=4, out=str(out), workers=1,
                        validation_trace=False, host_profiler=False)).run()
    sent = json.loads((out / "llm_usage.json").read_text())["total"]["requests"]
    recorded = (out / "config.json").read_text()
    for cap in (2, sent):
        with pytest.raises(ConfigError, match=rf"^config field 'max_llm_calls': must be above the {sent} requests "
                                              rf"the run has sent .*, got {cap}$"):
            resume_run(out, max_llm_calls=cap)
        assert (out / "config.json").read_text() == recorded
    with pytest.raises(ConfigError, match=r"^config field 'max_cost_usd': must be above the 0 dollars the run has "
                                          r"spent .*, got -1$"):  # dollars are spent, not "sent"
        resume_run(out, max_cost_usd=-1)
    assert resume_run(out, max_llm_calls=sent + 4).run()["samples"] > 4  # a cap above it: the run goes on
