"""The usage ledger and the operator phrase table."""
import json
import threading

import pytest

from raise_plugin.llm import OPERATOR_PHRASES, UsageLedger, infer_operator


def test_ledger_counts_per_operator_and_sums_to_the_total():
    ledger = UsageLedger(backend="openai", model="gpt-5-mini")
    ledger.record("m1", input_tokens=100, output_tokens=10, cost_usd=0.5)
    ledger.record("m1", failed=True, retries=2)
    ledger.record("e1", input_tokens=5, output_tokens=1, cost_usd=0.25)
    data = json.loads(json.dumps(ledger.to_dict()))
    assert data["per_operator"]["m1"] == {"calls": 2, "failures": 1, "retries": 2, "unusable": 0,
                                          "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5, "seconds": 0.0}
    assert data["total"]["requests"] == 3 + 2
    assert data["total"]["calls"] == 3 and data["total"]["cost_usd"] == pytest.approx(0.75)
    line = ledger.summary()
    assert "\n" not in line and "3 calls, 1 failed, 2 retries" in line and "$0.7500" in line
    resumed = UsageLedger()
    resumed.merge(data)
    assert resumed.to_dict()["per_operator"] == data["per_operator"]


def test_ledger_is_thread_safe():
    ledger = UsageLedger()
    threads = [threading.Thread(target=lambda: [ledger.record("x", input_tokens=1) for _ in range(2000)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.total().calls == 8000 and ledger.total().input_tokens == 8000


def test_every_phrase_of_the_table_names_its_operator():
    for row in OPERATOR_PHRASES:
        for phrase in row.phrases:
            name = infer_operator(f"Some task.\n{phrase.upper()}\n")
            earlier = [r.name for r in OPERATOR_PHRASES[: OPERATOR_PHRASES.index(row) + 1]]
            assert name in earlier


def test_host_eoh_prompts_and_reevo_style_prompts_are_told_apart():
    from llm4ad.base import TextFunctionProgramConverter
    from llm4ad.method.eoh.prompt import EoHPrompt
    from tasks import get_task
    task = get_task("obp")
    f = TextFunctionProgramConverter.text_to_function(task.template_program)
    f.algorithm = "{best fit}"
    d = task.task_description
    assert infer_operator(EoHPrompt.get_prompt_i1(d, f)) == "i1"
    assert infer_operator(EoHPrompt.get_prompt_e1(d, [f, f], f)) == "e1"
    assert infer_operator(EoHPrompt.get_prompt_e2(d, [f, f], f)) == "e2"
    assert infer_operator(EoHPrompt.get_prompt_m1(d, f, f)) == "m1"
    assert infer_operator(EoHPrompt.get_prompt_m2(d, f, f)) == "m2"
    assert infer_operator("[Reflection]\nhint\nPlease write an improved function `priority_v2`") == "crossover"
    assert infer_operator("You respond with some hints for designing better heuristics") == "short_reflection"
    assert infer_operator("nothing known") == "other"


def test_a_request_journal_with_a_line_that_is_not_utf8_counts_the_others(tmp_path):
    path = tmp_path / "llm_requests.jsonl"
    sent = [{"e": "sent", "id": k, "op": "e1", "attempt": 0} for k in range(3)]
    path.write_bytes(b"\n".join(json.dumps(e).encode() for e in sent[:2]) + b"\n\xff\xfe garbage\n"
                     + json.dumps(sent[2]).encode() + b"\n")
    ledger = UsageLedger()
    ledger.load_journal(path)
    assert ledger.to_dict()["total"]["requests"] == 3
