"""Runs of a compare that a study's cap (``max_llm_calls``) stopped short of their budget: their final
program is evaluated again once a re-run has resumed them, and the report lists them, marked, with
what their LLM calls cost."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil

import pytest

from raise_plugin.harness.compare import run_compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.reuse import plan_reuse
from raise_plugin.harness.variants import plan_variants
from tasks import get_task

RESULT = "eoh-plain-seed1"


def plain(out, **kw):
    """EoH alone on seed 1 (whose best program at 8 samples is not its best at 12), budget 12: three
    baselines and one run."""
    base = dict(task="ovrp", methods=("eoh",), epsilons=(), ablations=False, budget=12, pop_size=4, tau=1,
                seeds=(1,), out=str(out), suite_instances=1, workers=1)
    return CompareConfig(**{**base, **kw})


def metrics(out) -> list[tuple]:
    with (out / "results.csv").open() as fh:
        return [(r["variant"], r["dataset"], r["instance"], r["metric"]) for r in csv.DictReader(fh)]


def summary(out) -> dict:
    return json.loads((out / "runs" / RESULT / "summary.json").read_text())


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """A compare whose one run the study's cap of 8 LLM requests stops at 8 of its 12 samples."""
    return run_compare(plain(tmp_path_factory.mktemp("capped") / "cmp", max_llm_calls=8), quiet=True)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The same study, uncapped, in one go."""
    return run_compare(plain(tmp_path_factory.mktemp("fresh") / "cmp"), quiet=True)


def test_a_capped_run_stops_short_and_its_program_enters_the_tables(capped):
    assert (summary(capped.out)["finished"], summary(capped.out)["samples"]) == (False, 8)
    assert any(r["variant"] == "eoh-plain" for r in capped.rows)
    meta = json.loads((capped.out / "results" / f"{RESULT}.json").read_text())
    best = summary(capped.out)["best"]
    assert meta["run"] == {"samples": 8, "finished": False, "best_program_id": best["program_id"]}
    assert meta["program_sha256"] == hashlib.sha256(best["program"].encode()).hexdigest()


def test_a_resumed_run_has_its_new_final_program_evaluated_not_the_stale_one(capped, fresh, tmp_path, capsys):
    out = tmp_path / "cmp"
    shutil.copytree(capped.out, out)
    resumed = run_compare(plain(out, max_llm_calls=100), quiet=False, progress=False)
    printed = capsys.readouterr().out
    assert not resumed.failures and summary(out)["finished"] and summary(out)["samples"] == 12
    assert summary(out)["best"]["program_id"] != summary(capped.out)["best"]["program_id"]  # the stale case
    # the tables show what the same study in one go shows, not the program the run had at 8 samples
    assert metrics(out) == metrics(fresh.out)
    assert (out / "table3_ovrp.md").read_text() == (fresh.out / "table3_ovrp.md").read_text()
    meta = json.loads((out / "results" / f"{RESULT}.json").read_text())
    assert meta["run"]["samples"] == 12 and meta["run"]["finished"] is True
    # said before the jobs, said when it is done again, and in the report; the earlier result kept aside
    assert "1 interrupted run to resume (its suite evaluation is done again if resuming changes the run)" in printed
    assert ("EoH, seed 1: its run changed since its suite evaluation (8 samples then, 12 now); evaluated again"
            in printed)
    assert list((out / "superseded").glob(f"*/results/{RESULT}.csv"))
    assert "its run changed since its suite evaluation (8 samples then, 12 now)" in (out / "report.md").read_text()


def test_a_capped_run_that_cannot_go_on_keeps_its_result(capped, tmp_path):
    out = tmp_path / "cmp"
    shutil.copytree(capped.out, out)
    before = (out / "results" / f"{RESULT}.csv").read_bytes()
    again = run_compare(plain(out, max_llm_calls=8), quiet=True)  # nothing left: the run does not start
    assert [r.kind for r in again.failures] == ["train"] and summary(out)["samples"] == 8
    assert (out / "results" / f"{RESULT}.csv").read_bytes() == before and not (out / "superseded").exists()


def test_a_result_is_reused_only_while_its_run_is_as_it_was_evaluated(fresh, tmp_path):
    task, variants = get_task("ovrp"), plan_variants(("eoh",), (), False)
    out = tmp_path / "cmp"
    shutil.copytree(fresh.out, out)
    meta_path = out / "results" / f"{RESULT}.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "run": {**meta["run"], "samples": 8}}))  # evaluated at 8 samples
    plan = plan_reuse(plain(out), task, variants, out)
    assert plan.evaluated == 3 and plan.moved == [f"{RESULT}: its run changed since its suite evaluation "
                                                   "(8 samples then, 12 now)"]
    assert not (out / "results" / f"{RESULT}.csv").exists()


def test_a_result_of_earlier_code_is_reused_unless_its_run_was_written_after_it(fresh, tmp_path):
    task, variants = get_task("ovrp"), plan_variants(("eoh",), (), False)
    out = tmp_path / "cmp"
    shutil.copytree(fresh.out, out)  # copytree keeps the times: the result is newer than its run's summary
    meta_path = out / "results" / f"{RESULT}.json"
    meta = {k: v for k, v in json.loads(meta_path.read_text()).items() if k not in ("run", "program_sha256")}
    meta_path.write_text(json.dumps(meta))
    assert plan_reuse(plain(out), task, variants, out).evaluated == 4  # its run is unchanged: kept
    result, run = out / "results" / f"{RESULT}.csv", out / "runs" / RESULT / "summary.json"
    os.utime(run, ns=(result.stat().st_mtime_ns + 10**9,) * 2)  # the run was written again after it
    plan = plan_reuse(plain(out), task, variants, out)
    assert plan.evaluated == 3 and plan.moved and "its run was written after its suite evaluation" in plan.moved[0]


def test_the_report_lists_a_capped_run_with_its_llm_usage_and_says_it_stopped_short(capped):
    report = (capped.out / "report.md").read_text()
    ledger = json.loads((capped.out / "llm_ledger.json").read_text())
    assert ledger["total"]["requests"] == 8
    runs = report.split("## Runs")[1].split("## LLM usage")[0]
    row = next(line for line in runs.splitlines() if line.startswith("| EoH | 1 |"))
    assert "| 8 | 2 | 0 | nominal set |" in row and "| stopped at 8 of 12 samples: the cap of 8 LLM requests" in row
    usage = report.split("## LLM usage")[1]
    assert "| EoH (stopped at 8 of 12 samples) | 1 | offline (none (no LLM)) | 8 | 0 | 0 | 0 | 0.0000 |" in usage
    assert "| **all runs** |  |  | **8** | **0** | **0** | **0** | **0.0000** |" in usage
    said = report.split("## Tables")[0]
    assert "**Not every run reached its budget.** 1 of the 1 run in the tables stopped short of its budget" in said
    assert "- EoH, seed 1: stopped at 8 of 12 samples: the cap of 8 LLM requests is reached" in said
    assert "a higher `--max-llm-calls` resumes such a run and evaluates its final program again" in said
    drawn = any((capped.out / f"{stem}.png").exists() for stem in ("convergence", "adversarial_distributions"))
    assert ("The figures show finished runs only, so they leave these out." if drawn else
            "No figure is drawn: the figures show finished runs only.") in said
    page = (capped.out / "report.html").read_text()
    assert "stopped at 8 of 12 samples" in page and "<h2>LLM usage</h2>" in page


def test_the_report_counts_the_requests_of_a_run_that_wrote_no_summary(tmp_path):
    from raise_plugin.harness.compare_report import compare_report

    run = tmp_path / "runs" / "eoh-plain-seed0"  # killed mid-way: its settings and its request ledger, no summary
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"budget": 12, "pop_size": 4, "tau": 1, "llm": "openai:m"}))
    (run / "llm_usage.json").write_text(json.dumps({"backend": "openai", "model": "m", "total": {
        "requests": 3, "input_tokens": 30, "output_tokens": 15, "cost_usd": 0.02}}))
    report = compare_report(plain(tmp_path), get_task("ovrp"), plan_variants(("eoh",), (), False), {}, [],
                            {("eoh-plain", 0): run}, in_tables=set())
    assert "| did not end: it wrote no summary (its job failed or was interrupted) |" in report
    assert "| EoH (did not end) | 0 | openai:m | 3 | ? | 30 | 15 | 0.0200 |" in report
    assert "| **all runs** |  |  | **3** | **0** | **30** | **15** | **0.0200** |" in report
    assert "Not every run reached its budget" not in report  # it is not in the tables


def test_the_first_line_says_which_kept_results_wait_on_a_resumed_run():
    from raise_plugin.harness.reuse import ReusePlan

    def line(interrupted, provisional):
        return ReusePlan(runs=4, interrupted=interrupted, results=7, evaluated=5,
                         provisional=provisional).line("out")

    assert "1 interrupted run to resume (its suite evaluation is done again if resuming changes the run)" in line(1, 1)
    assert ("2 interrupted runs to resume (the suite evaluation of 1 of them is done again if resuming changes its "
            "run)") in line(2, 1)
    assert "2 interrupted runs to resume (the suite evaluations of 2 of them are done again" in line(2, 2)
    assert "2 interrupted runs to resume (to start afresh" in line(2, 0)


def test_a_plain_run_is_reused_when_only_settings_its_search_never_reads_changed(tmp_path):
    """A plain run reads no inner-search setting nor eps: a study that changes only those keeps it (it
    was trained again, the same programs at the same cost); tau still counts, as it sets the interval
    of its validation trace."""
    from raise_plugin.harness.provenance import code_version, expected_run_config, record_code_version
    from raise_plugin.harness.reuse import _run_mismatch

    def fields(robust: bool, **kw):
        study = CompareConfig(**{"task": "ovrp", "budget": 8, "pop_size": 4, "seeds": (0,), **kw})
        return study.run_fields("eoh", robust, 0.002 if robust else None, 0, {})

    run = tmp_path / "eoh-plain-seed0"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(expected_run_config(fields(False, inner_population=8))))
    record_code_version(run)
    now = code_version()
    assert _run_mismatch(run, fields(False, inner_population=4, inner_generations=2), now, "matching") is None
    assert "inner_population 8 (here 4)" in _run_mismatch(run, fields(True, inner_population=4), now, "matching")
    assert "tau" in _run_mismatch(run, fields(False, inner_population=8, tau=2), now, "matching")
    assert "budget 8 (here 12)" in _run_mismatch(run, fields(False, inner_population=8, budget=12), now, "matching")


def test_reuse_never_counts_everything_it_moves_aside(tmp_path):
    """Under --reuse never the first line's count is what was moved: a retrained run's result with it
    (it said 5 earlier runs or results, and moved 7)."""
    from raise_plugin.harness.provenance import expected_run_config, record_code_version
    from raise_plugin.harness.variants import plan_variants, result_name
    from tasks import get_task

    config = CompareConfig(task="ovrp", budget=8, pop_size=4, seeds=(0,), methods=("eoh",), epsilons=(0.002,),
                           ablations=False, out=str(tmp_path / "study"), reuse="never")
    variants, task = plan_variants(["eoh"], [0.002], ablations=False), get_task("ovrp")
    (tmp_path / "study" / "results").mkdir(parents=True)
    for v in variants:
        run = tmp_path / "study" / "runs" / f"{v.key}-seed0"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps(expected_run_config(
            config.run_fields(v.method, v.robust, v.epsilon, 0, v.switches))))
        record_code_version(run)
        (tmp_path / "study" / "results" / f"{result_name(v.key, 0, 'robust')}.csv").write_text("")
    (tmp_path / "study" / "results" / "baseline-SP-Insert.csv").write_text("")
    plan = plan_reuse(config, task, variants, tmp_path / "study")
    moved = [p for p in plan.superseded.rglob("*") if p.parent.name in ("runs", "results")]
    assert len(plan.moved) == len(moved) == 2 * len(variants) + 1
    assert f"; {len(moved)} earlier runs or results did not match" in plan.line("study")
