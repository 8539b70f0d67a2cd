"""The harness: a tiny compare writes every table and figure; a re-run redoes nothing."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from dataclasses import replace

import pytest

from raise_plugin.errors import UserError
from raise_plugin.harness.compare import run_compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.provenance import expected_run_config, record_code_version
from raise_plugin.harness.variants import plan_variants

PNG = b"\x89PNG\r\n\x1a\n"


def tiny(out, **kw):
    base = dict(task="ovrp", methods=("eoh",), epsilons=(0.002,), ablations=True, budget=4, pop_size=2,
                seeds=(0, 1), out=str(out), tau=1, inner_population=4, inner_generations=1, suite_instances=1,
                nominal=1, workers=1)
    base.update(kw)
    return CompareConfig(**base)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    return run_compare(tiny(out), quiet=True)


def test_every_table_and_figure_is_written(compared):
    out = compared.out
    names = {p.name for p in compared.files}
    assert {"results.csv", "table3_ovrp.md", "table_all_distributions.md", "table4_ablation.md",
            "table_significance.md", "convergence.png", "adversarial_distributions.png", "report.md"} <= names
    # every file it lists is written, and every file written is listed ("wrote N files" counts them all;
    # the hidden token that tells compare's job processes this folder is not one of them)
    shown = {p.name for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert len(compared.files) == len(names) == len(shown) and names == shown
    for png in ("convergence.png", "adversarial_distributions.png"):
        data = (out / png).read_bytes()
        assert data[:8] == PNG and int.from_bytes(data[16:20], "big") <= 2400  # the PNG's width in pixels
    report = (out / "report.md").read_text()
    assert "No LLM was used" in report and "table3_ovrp.md" in report and "convergence.png" in report
    assert "## What is significant" in report and "Only 2 seeds" in report


def test_every_method_is_tested_against_the_best_baseline_and_its_plain_twin(compared):
    tests = {(c.method, c.relation): c for c in compared.comparisons}
    # the plain run has no twin; the robust run and the seven ablations have the plain run as twin
    assert ("EoH", "best baseline") in tests and ("EoH", "plain twin") not in tests
    assert tests[("RAISE-EoH (eps=0.002)", "plain twin")].reference == "EoH"
    assert len(compared.comparisons) == 9 + 8
    assert {c.reference for c in compared.comparisons if c.relation == "best baseline"} == {"SP-Insert"}
    for c in compared.comparisons:
        assert c.pairs + c.dropped == 2 * 15 and c.seeds <= 2 and c.over == "seeds"
    table = (compared.out / "table_significance.md").read_text()
    assert table.count("| RAISE-EoH (eps=0.002) |") == 2 and "Wilcoxon p" in table
    t3 = compared.tables["table3_ovrp"]
    i = t3.methods.index("RAISE-EoH (eps=0.002)")
    assert t3.tests[(i, 0, "twin")].reference == "EoH" and t3.tests[(i, 0, "baseline")].reference == "SP-Insert"
    assert (0, 0, "baseline") not in t3.tests  # baselines are not tested against themselves


def test_variants_are_addressed_by_key_and_labels_are_for_display(compared):
    robust = compared.variant("eoh", robust=True, epsilon=0.002)
    assert robust.key == "eoh-raise-eps0.002" and robust.label == "RAISE-EoH (eps=0.002)"
    assert compared.variant("eoh", robust=True) is robust  # one eps trained: no need to name it
    assert compared.variant("eoh-raise-eps0.002") is robust and compared.variant("RAISE-EoH (eps=0.002)") is robust
    assert compared.variant("eoh").key == "eoh-plain"
    assert compared.variant("eoh", epsilon=0.002, ablation="flat").key == "eoh-raise-eps0.002-flat"
    assert compared.label("eoh-plain") == "EoH" and compared.label("SP-Insert") == "SP-Insert"
    for bad, message in ((dict(method="reevo"), "no variant reevo plain"),
                         (dict(method="eoh", epsilon=0.01), "no variant eoh robust at eps 0.01"),
                         (dict(method="eoh", ablation="nope"), "ablation 'nope': choose from"),
                         (dict(method="eoh", robust="no"), r"^variant: robust must be True, False or None"),
                         (dict(method="eoh", epsilon="0.01"), "no variant eoh robust at eps 0.01"),  # a ValueError
                         (dict(method="eoh", epsilon="abc"), r"^variant: epsilon must be a number, got 'abc'$"),
                         (dict(method="eoh", epsilon=[0.002]), r"^variant: epsilon must be a number, got \[0.002\]$")):
        with pytest.raises(UserError, match=message):
            compared.variant(**bad)


def test_paired_chooses_the_pairing_from_the_reference(compared):
    twin = compared.paired("eoh-raise-eps0.002", "eoh-plain")  # trained: seed s against seed s
    listed = next(c for c in compared.comparisons if c.relation == "plain twin" and c.method == twin.method)
    # the listed tests are Holm-adjusted over the significance table's rows; the test's own p is kept
    assert twin == replace(listed, p=listed.raw_p, raw_p=None) and twin.relation == "plain twin"
    assert twin.reference == "EoH" and listed.p >= twin.p
    baseline = compared.paired(compared.variant("eoh"), "SP-Insert")  # a baseline: the same value every seed
    listed = next(c for c in compared.comparisons if c.method == "EoH" and c.relation == "best baseline")
    assert (baseline.mean, baseline.p, baseline.low, baseline.high) == (listed.mean, listed.raw_p, listed.low,
                                                                         listed.high)
    assert baseline.pairs + baseline.dropped == 2 * 15
    with pytest.raises(UserError, match=r"^by_seed: 'EoH' has results for \d+ seeds, so it was trained: pair it by "
                                        r"seed \(by_seed=True;") as caught:  # a plain ValueError
        compared.paired("eoh-raise-eps0.002", "eoh-plain", by_seed=False)
    assert isinstance(caught.value, ValueError)
    # a baseline paired seed by seed kept seed 0's pairs alone; "yes" was taken as True
    with pytest.raises(UserError, match="'SP-Insert' is a baseline, one result per instance for every seed"):
        compared.paired(compared.variant("eoh"), "SP-Insert", by_seed=True)
    with pytest.raises(UserError, match="by_seed must be True, False or None"):
        compared.paired("eoh-raise-eps0.002", "eoh-plain", by_seed="yes")
    # a baseline as the method against a trained variant: seed 0's pairs alone, silently; now refused
    with pytest.raises(UserError, match=r"'SP-Insert' is a baseline: give the trained 'eoh-plain' first"):
        compared.paired("SP-Insert", "eoh-plain")


def test_rows_and_columns(compared):
    t3 = compared.tables["table3_ovrp"]
    assert t3.columns == ["5-vehicle", "10-vehicle", "15-vehicle"]
    assert t3.methods == ["NF-Insert", "SP-Insert", "UW-Insert", "EoH", "RAISE-EoH (eps=0.002)"]
    assert (t3.seeds[3:] == 2).all() and (t3.seeds[:3] == 1).all()
    t4 = compared.tables["table4_ablation"]
    assert t4.columns == ["Uniform", "Normal", "Lognormal", "Exponential", "Triangular", "Avg."]
    assert t4.methods[0].startswith("EoH") and "w/o Robust Search" in t4.methods[0]
    assert t4.methods[1:] == ["RAISE-EoH w/o Dis. Constraints", "RAISE-EoH w/o Base Distributions",
                              "RAISE-EoH w/o eps-Mapping", "RAISE-EoH w/ regret:baselines adversary",
                              "RAISE-EoH w/ regret:population adversary", "RAISE-EoH w/ balanced score",
                              "RAISE-EoH w/ regret:baselines + balanced", "RAISE-EoH (eps=0.002)"]
    rows = list(csv.DictReader((compared.out / "results.csv").open()))
    # 3 baselines x 15 datasets + 9 variants x 2 seeds x 15 datasets, one instance each
    assert len(rows) == 3 * 15 + 9 * 2 * 15
    assert {r["kind"] for r in rows} == {"baseline", "plain", "robust", "ablation"}


def test_cells_agree_with_the_raw_results(compared):
    rows = list(csv.DictReader((compared.out / "results.csv").open()))
    t3 = compared.tables["table3_ovrp"]
    i = t3.methods.index("EoH")
    per_seed = []
    for seed in ("0", "1"):
        vals = [float(r["metric"]) for r in rows
                if r["method"] == "EoH" and r["seed"] == seed and r["params"] == "V=5"]
        per_seed.append(sum(vals) / len(vals))
    assert t3.mean[i, 0] == pytest.approx(sum(per_seed) / 2)


def test_results_csv_holds_the_rows_of_the_classical_rule_the_tables_test_against(tmp_path):
    # OJSP's best classical rule on the validation suite, MOPNR, is not one of its baselines: the tables show
    # its row and test every method against it, so results.csv holds its results, and they give its cells
    result = run_compare(tiny(tmp_path / "cmp", task="ojsp", epsilons=(), ablations=False, budget=4, pop_size=2,
                              seeds=(0,)), quiet=True)
    rows = list(csv.DictReader((result.out / "results.csv").open()))
    mopnr = [r for r in rows if r["method"] == "MOPNR"]
    assert len(mopnr) == 20 and {r["kind"] for r in mopnr} == {"baseline"}
    table = result.tables["table3_ojsp"]
    i = table.methods.index("MOPNR")
    ten = [float(r["metric"]) for r in mopnr if r["params"].startswith("M=10;")]
    assert table.mean[i, 0] == pytest.approx(sum(ten) / len(ten))
    assert result.paired("eoh-plain", "MOPNR").pairs == 20


def test_a_rerun_trains_and_evaluates_nothing(compared, monkeypatch, capsys):
    import raise_plugin.harness.compare_jobs as jobs
    import raise_plugin.runner as runner

    def refuse(*a, **k):
        raise AssertionError("a finished cell was redone")

    monkeypatch.setattr(runner, "start_run", refuse)
    monkeypatch.setattr(runner, "resume_run", refuse)
    monkeypatch.setattr(jobs, "evaluate_suite", refuse)
    again = run_compare(tiny(compared.out), quiet=False)
    assert again.tables["table3_ovrp"].markdown() == compared.tables["table3_ovrp"].markdown()
    # and says so first: 9 variants x 2 seeds trained, 3 baselines + 18 runs evaluated
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{compared.out} holds an earlier compare; reusing 18 of 18 training runs finished, 21 of 21 suite "
        f"evaluations (to start afresh, delete {compared.out} or give another --out)")


def test_a_fresh_compare_says_nothing_of_reuse_and_an_interrupted_one_says_what_it_resumes(tmp_path, monkeypatch,
                                                                                          capsys):
    from raise_plugin.harness import compare

    class Planned(Exception):
        pass

    def stop(*args, **kwargs):
        raise Planned

    monkeypatch.setattr(compare, "_train_and_evaluate", stop)
    with pytest.raises(Planned):
        run_compare(tiny(tmp_path / "fresh", ablations=False), quiet=False)
    assert "earlier compare" not in capsys.readouterr().out
    config = tiny(tmp_path / "again", ablations=False)
    interrupted = tmp_path / "again" / "runs" / "eoh-plain-seed1"  # as a run of this compare leaves it
    interrupted.mkdir(parents=True)
    (interrupted / "config.json").write_text(json.dumps(expected_run_config(config.run_fields("eoh", False, None, 1))))
    record_code_version(interrupted)
    (tmp_path / "again" / "results").mkdir()
    (tmp_path / "again" / "results" / "baseline-SP-Insert.csv").write_text("")  # no record of its code: redone
    with pytest.raises(Planned):
        run_compare(config, quiet=False)
    again = tmp_path / "again"
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(f"{again} holds an earlier compare; reusing 0 of 4 training runs finished, 0 of 7 suite "
                           "evaluations, 1 interrupted run to resume; 1 earlier run or result did not match "
                           "(evaluated by code that recorded no version) and is done again, the earlier ones moved "
                           f"to {again}/superseded/")
    assert line.endswith(f"(to start afresh, delete {again} or give another --out)")
    assert list((again / "superseded").glob("*/results/baseline-SP-Insert.csv"))


HOLDER = """
import sys, time
from raise_plugin.rundir.lock import COMPARE_LOCK, RunLock
RunLock(sys.argv[1], COMPARE_LOCK).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_a_compare_into_a_folder_another_compare_writes_is_refused_in_one_line_and_moves_nothing(tmp_path,
                                                                                               monkeypatch, capsys):
    # two compares into one folder each failed the jobs whose runs the other held, said a retry could not help,
    # and a second of other settings moved aside the runs the first was writing
    import subprocess
    import sys
    from pathlib import Path

    from raise_plugin.cli import main
    from raise_plugin.harness import compare
    from raise_plugin.rundir.lock import RunDirectoryBusy

    out = tmp_path / "out"
    config = tiny(out, ablations=False)
    under_way = out / "runs" / "eoh-plain-seed1"  # the other compare's run, of another budget
    under_way.mkdir(parents=True)
    (under_way / "config.json").write_text(json.dumps(expected_run_config(
        tiny(out, ablations=False, budget=12).run_fields("eoh", False, None, 1))))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[2])
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
        with pytest.raises(RunDirectoryBusy, match=f"in use by process {holder.pid} .*before comparing into it$"):
            run_compare(config, quiet=True)
        capsys.readouterr()
        assert main(["compare", "--task", "ovrp", "--methods", "eoh", "--budget", "4", "--pop-size", "2", "--tau", "1",
                     "--seeds", "2", "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"raise-ahd: error: {out} is in use by process {holder.pid} ("), err
        assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before  # nothing moved, nothing written
    finally:
        holder.kill()
        holder.wait()

    class Planned(Exception):
        pass

    def stop(*args, **kwargs):
        raise Planned

    monkeypatch.setattr(compare, "_train_and_evaluate", stop)
    with pytest.raises(Planned):  # its holder gone, the folder is the next compare's
        run_compare(config, quiet=True)
    assert list((out / "superseded").glob("*/runs/eoh-plain-seed1/config.json"))


def test_a_compare_whose_disk_refuses_its_report_says_so_in_one_line_naming_its_folder(tmp_path, monkeypatch,
                                                                                       capsys):
    # a full disk's error names no file: `raise-ahd: error: No space left on device`, exit 1, and no word of what
    # was kept or what to do
    import errno

    from raise_plugin.cli import main
    from raise_plugin.harness import compare

    def full(out):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(compare, "write_compare_page", full)
    out = tmp_path / "c"
    flags = ["compare", "--task", "ovrp", "--methods", "eoh", "--budget", "4", "--pop-size", "2", "--seeds", "1",
             "--epsilons", "", "--suite-instances", "1", "--nominal", "1", "--jobs", "1", "--no-progress",
             "--out", str(out)]
    assert main(flags) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"raise-ahd: error: {out}: cannot write (No space left on device); every run and result that "
                       "finished is kept: once the cause is gone, the same command goes on from them"), err
    monkeypatch.undo()
    assert main(flags) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(f"{out} holds an earlier compare; reusing 1 of 1 "
                                                              "training runs finished, 4 of 4 suite evaluations")


def test_variants_follow_the_paper():
    keys = [v.key for v in plan_variants(["eoh", "reevo"], [0.001, 0.01], ablations=True)]
    assert keys[:3] == ["eoh-plain", "eoh-raise-eps0.001", "eoh-raise-eps0.01"]
    assert "eoh-raise-eps0.001-no-mapping" in keys and "reevo-raise-eps0.001-flat" in keys
    assert "eoh-raise-eps0.001-regret-balanced" in keys
    assert len(keys) == 2 * (1 + 2 + 7)


def test_a_compare_given_no_radius_says_it_trains_plain_runs_only(tmp_path):
    from raise_plugin.harness.compare_report import compare_report
    from tasks import get_task

    config = tiny(tmp_path / "c", epsilons="", ablations=False, seeds=(0,))  # as --epsilons "" gives it
    report = compare_report(config, get_task("ovrp"), plan_variants(("eoh",), ()), {}, [], {})
    assert report.splitlines()[0] == "# Plain compare (no RAISE run) on ovrp: eoh, budget 4"  # was "RAISE compare"
    assert "Methods eoh; no eps (no radius given: plain runs only); budget 4 samples" in report  # was "eps ;"


@pytest.mark.parametrize("field, value, message", [
    ("task", "tsp", "task"), ("methods", ("sgp",), "methods"), ("epsilons", (0.0,), "epsilons"),
    ("budget", 0, "budget"), ("pop_size", 1, "pop_size"), ("seeds", (), "seeds"),
    ("aggregation", "median", "aggregation"), ("adversary_objective", "regret:nope", "adversary_objective"),
    ("inner_draws", 0, "inner_draws"), ("projection", "cube", "projection"),
])
def test_bad_configs_name_the_field(tmp_path, field, value, message):
    with pytest.raises(UserError, match=message):
        tiny(tmp_path, **{field: value})


def test_every_radius_is_checked_against_the_task_s_reach_before_any_job(tmp_path):
    # only the first was: a compare with --epsilons 0.002,5 trained its plain and eps=0.002 rows, then its eps=5
    # jobs failed, saying "(a plain run is --no-robust)", a flag compare does not have
    with pytest.raises(UserError, match=r"^epsilons: 5 is beyond the largest distance ovrp's distributions can reach "
                                        r"from its nominal histograms \(0\.188\)$"):
        tiny(tmp_path, epsilons=(0.002, 5.0))


def test_each_method_is_checked_for_several_programs_in_flight_before_any_job(tmp_path):
    assert tiny(tmp_path, methods=("eoh", "reevo"), programs_in_flight=3).runs.engine.programs_in_flight == 3
    with pytest.raises(UserError, match="method 'hillclimb' evaluates one program at a time, not 2"):
        tiny(tmp_path, methods=("eoh", "hillclimb"), programs_in_flight=2)  # the second method: each is checked


def test_every_run_of_a_compare_takes_its_programs_in_flight_and_is_reused_only_with_as_many(tmp_path):
    from raise_plugin.harness.reuse import plan_reuse
    from tasks import get_task

    out = tmp_path / "cmp"
    plain = dict(methods=("eoh",), epsilons=(), ablations=False, seeds=(0,))
    compared = run_compare(tiny(out, programs_in_flight=2, **plain), quiet=True)
    assert not compared.failures and json.loads((out / "compare.json").read_text())["programs_in_flight"] == 2
    assert [json.loads((run / "config.json").read_text())["programs_in_flight"] for run in (out / "runs").iterdir()
            ] == [2]
    # the run depends on k: one made with two in flight is trained again for one
    plan = plan_reuse(tiny(out, **plain), get_task("ovrp"), plan_variants(("eoh",), (), False), out)
    assert plan.finished == 0 and "settings differ: programs_in_flight 2 (here 1)" in plan.line(str(out))


def test_compare_defaults_to_five_seeds_and_the_demo_to_three_on_the_public_set():
    import argparse

    from raise_plugin.commands.compare import add_compare_arguments, config_from
    from raise_plugin.commands.demo import PRESET

    compare, demo = argparse.ArgumentParser(), argparse.ArgumentParser()
    add_compare_arguments(compare)
    add_compare_arguments(demo, **PRESET)
    assert config_from(compare.parse_args([])).study.seeds == (0, 1, 2, 3, 4) == CompareConfig().study.seeds
    assert config_from(demo.parse_args([])).study.seeds == (0, 1, 2)
    # the demo's numbers are the same on every machine (docs/results.md has them); a compare's runs train
    # on a set of the installation's own unless told otherwise, and a flag moves the demo's too
    assert config_from(demo.parse_args([])).runs.instance_seed == "public"
    assert config_from(compare.parse_args([])).runs.instance_seed == "private"
    assert config_from(demo.parse_args(["--instance-seed", "private"])).runs.instance_seed == "private"


def test_the_demo_help_says_what_the_demo_runs(capsys):
    from raise_plugin.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser("demo").parse_args(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("EoH plain and with RAISE on ovrp (eps 0.002, population 10, tau 5), a budget of 200 samples, "
            "seeds 0-2, on the task's public nominal set (the same numbers on every machine)") in text
    assert ("raise-ahd compare --task ovrp --methods eoh --epsilons 0.002 --budget 200 --pop-size 10 --tau 5 "
            "--seeds 3 --instance-seed public --out demo-out") in text
    assert "reuses what demo-out holds" in text


def test_convergence_figure_draws_each_runs_validation_trace(compared):
    from raise_plugin.harness.figures import convergence_series
    from raise_plugin.rundir.reader import RunLog

    for key in ("eoh-plain", "eoh-raise-eps0.002"):
        s = convergence_series(RunLog.load(compared.out / "runs" / f"{key}-seed0"))
        assert s["validation"] and len(s["validation"]) == len(s["trace_generation"])
        assert s["baseline"]["name"] == "SP-Insert" and s["baseline"]["metric"] > 1
        assert all(b > 0 for b in s["best"])  # metrics (route-length ratios), not scores


def test_a_preset_fills_in_only_the_flags_left_out():
    import argparse

    from raise_plugin.commands.compare import add_compare_arguments, config_from

    parser = argparse.ArgumentParser()
    add_compare_arguments(parser)
    args = parser.parse_args(["--preset", "obp-validated", "--seeds", "2"])
    args.given = {"preset", "seeds"}
    config = config_from(args)
    runs, study = config.runs, config.study
    assert (runs.task, study.epsilons, runs.adversary.inner_search.projection, runs.adversary.aggregation) == (
        "obp", (0.01,), "sphere", "balanced")
    assert runs.adversary.adversary_objective == "regret:baselines" and runs.budget.samples == 300
    assert study.seeds == (0, 1) and study.suite_instances == 1
    paper = parser.parse_args(["--preset", "paper-obp"])
    paper.given = {"preset"}
    assert config_from(paper).runs.budget.samples == 1000 and config_from(paper).study.epsilons == (0.002,)
    # each preset reproduces a table measured on the task's public nominal set, on any machine; a flag moves it
    for name in ("obp-validated", "paper-obp", "obp-1000"):
        preset = parser.parse_args(["--preset", name])
        preset.given = {"preset"}
        assert config_from(preset).runs.instance_seed == "public", name
    private = parser.parse_args(["--preset", "obp-1000", "--instance-seed", "private"])
    private.given = {"preset", "instance_seed"}
    assert config_from(private).runs.instance_seed == "private"


def test_a_run_is_reused_only_when_its_settings_and_code_version_match(compared, tmp_path, monkeypatch):
    import shutil

    from raise_plugin.harness import reuse
    from raise_plugin.harness.reuse import plan_reuse
    from tasks import get_task

    task, variants = get_task("ovrp"), plan_variants(("eoh",), (0.002,), True)
    out = tmp_path / "cmp"
    shutil.copytree(compared.out, out)
    plan = plan_reuse(tiny(out), task, variants, out)  # the same settings and code: everything kept
    assert (plan.finished, plan.evaluated, plan.moved) == (18, 21, [])
    # another budget: every run is trained again, never reused under this compare's heading
    plan = plan_reuse(tiny(out, budget=6), task, variants, out)
    # each run and its result moved aside, all counted; the baselines' results hold
    assert plan.finished == 0 and len(plan.moved) == 18 + 18 and plan.evaluated == 3
    assert "36 earlier runs or results did not match" in plan.line(str(out))
    assert "settings differ: budget 4 (here 6)" in plan.line(str(out))
    assert not list((out / "runs").iterdir()) and len(list(plan.superseded.glob("runs/*"))) == 18
    shutil.rmtree(out)
    shutil.copytree(compared.out, out)
    # other sandbox limits: the baselines' results too (they were kept, every instance invalid after a
    # compare at a timeout too short, and dropped every baseline from the tables)
    plan = plan_reuse(tiny(out, timeout=2.5), task, variants, out)
    assert plan.evaluated == 0 and plan.finished == 0
    assert [m for m in plan.moved if m.startswith("baseline-")] == [
        f"baseline-{b}: evaluated under other sandbox limits: timeout default (here 2.5)" for b in task.baselines]
    shutil.rmtree(out)
    shutil.copytree(compared.out, out)
    monkeypatch.setattr(reuse, "code_version", lambda: "9.9.9+src.000000000000")  # the code changed since
    plan = plan_reuse(tiny(out), task, variants, out)
    assert plan.finished == 0 and "trained by code version 0.1.0+src." in plan.line(str(out))
    shutil.rmtree(out)
    shutil.copytree(compared.out, out)
    accepted = plan_reuse(tiny(out, reuse="any"), task, variants, out)  # said, and kept
    assert accepted.finished == 18 and len(accepted.other_code) == 18 + 21
    assert "18 runs and 21 results of another code version accepted (--reuse any)" in accepted.line(str(out))


def test_a_file_where_a_run_s_folder_or_the_results_folder_goes_is_set_aside_and_said(compared, tmp_path):
    """A compare stopped on it: "raise-ahd: error: Not a directory: OUT/runs/eoh-plain-seed0", exit 1."""
    import shutil

    from raise_plugin.harness.reuse import plan_reuse
    from tasks import get_task

    task, variants = get_task("ovrp"), plan_variants(("eoh",), (0.002,), True)
    out = tmp_path / "cmp"
    shutil.copytree(compared.out, out)
    shutil.rmtree(out / "runs" / "eoh-plain-seed0")
    (out / "runs" / "eoh-plain-seed0").write_text("not a run")
    plan = plan_reuse(tiny(out), task, variants, out)
    assert plan.finished == 17 and "eoh-plain-seed0: a file, not a run directory" in plan.moved
    assert (plan.superseded / "runs" / "eoh-plain-seed0").read_text() == "not a run"
    assert "(a file, not a run directory" in plan.line(str(out))
    shutil.rmtree(out / "results")
    (out / "results").write_text("")
    plan = plan_reuse(tiny(out), task, variants, out)
    assert "results: a file, not a folder" in plan.moved and plan.evaluated == 0 and plan.finished == 17
    assert (plan.superseded / "results").is_file() and not (out / "results").exists()


def test_the_report_lists_each_runs_settings_and_code_version(compared):
    from raise_plugin.harness.provenance import code_version, recorded_code_version

    report = compared.report.read_text()
    assert report.splitlines()[0] == "# RAISE compare on ovrp: eoh, budget 4"
    assert f"This compare's code version: `{code_version()}`" in report
    assert "| variant | seed | budget | population | tau | eps | LLM | code version |" in report
    assert f"| RAISE-EoH (eps=0.002) | 1 | 4 | 2 | 1 | 0.002 | offline | {code_version()} |" in report
    assert recorded_code_version(compared.out / "runs" / "eoh-plain-seed0") == code_version()


def test_gp_is_refused_before_any_job_on_a_task_it_cannot_evolve(tmp_path, fresh_registry):
    from pathlib import Path

    source = (Path(__file__).parents[2] / "examples" / "load_balance.py").read_text()
    for old, new in (('def least_loaded(job, loads):', 'def least_loaded(job, state):\n    loads = state["loads"]'),
                     ('def fullest_that_fits(job, loads):', 'def fullest_that_fits(job, state):\n    loads = state["loads"]'),
                     ('def priority(job: int, loads: np.ndarray) -> np.ndarray:',
                      'def priority(job: int, state: dict) -> np.ndarray:\n    loads = state["loads"]'),
                     ('decide(priority, job, loads.copy(), len(loads))',
                      'decide(priority, job, {"loads": loads.copy()}, len(loads))')):
        assert old in source
        source = source.replace(old, new)
    (tmp_path / "lb_dict.py").write_text(source)
    config = tiny(tmp_path / "out", task=f"{tmp_path / 'lb_dict.py'}:LoadBalance", methods=("eoh", "gp"),
                  ablations=False)
    with pytest.raises(UserError, match="methods: gp cannot run on load_balance: no argument of priority has one "
                                        "value per candidate; GP evolves .* no job was started"):
        run_compare(config, quiet=True)
    assert not (tmp_path / "out" / "runs").exists()


def test_gp_without_deap_is_refused_before_any_job_with_a_pip_command_that_works(tmp_path, monkeypatch, capsys):
    """Without DEAP a compare of gp trained its other methods, evaluated the baselines and failed every GP job
    (exit 1, its folder written), where `run --method gp` refuses at once; both named 'raise-plugin[gp]',
    which no package index holds."""
    import raise_plugin.methods.gp_trees as gp_trees
    from raise_plugin.cli import main

    monkeypatch.setattr(gp_trees, "deap_gp", None)
    with pytest.raises(UserError, match=r"^methods: the gp method needs DEAP: pip install 'deap>=1.4' \(the plugin's "
                                        r"gp extra\); no job was started$"):
        run_compare(tiny(tmp_path / "out", methods=("eoh", "gp"), ablations=False), quiet=True)
    assert not (tmp_path / "out").exists()
    assert main(["run", "--task", "ovrp", "--method", "gp", "--no-robust", "--budget", "4", "--pop-size", "2",
                 "--no-progress", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "raise-ahd: error: the gp method needs DEAP: pip install 'deap>=1.4' (the plugin's gp extra)")
    assert not (tmp_path / "run").exists()


def test_every_table_is_markdown_csv_and_latex_titled_by_task_and_study_with_holm_marks(compared):
    out = compared.out
    for name in (*compared.tables, "table_significance"):
        assert {out / f"{name}{s}" for s in (".md", ".csv", ".tex")} <= set(compared.files)
        latex = (out / f"{name}.tex").read_text()
        assert "\\toprule" in latex and "\\bottomrule" in latex and "Holm" in latex
    for table in compared.tables.values():
        assert not table.title.startswith("Table") and table.title.endswith("(eoh, budget 4, 2 seeds)")
        assert "Holm-adjusted p < 0.05" in table.markdown()
    assert compared.tables["table3_ovrp"].title.startswith("OVRP: route length")
    t3 = compared.tables["table3_ovrp"]
    raw = [t.raw_p for t in t3.tests.values()]
    assert all(t.p >= t.raw_p for t in t3.tests.values()) and len(raw) == len(t3.tests)
    rows = list(csv.DictReader((out / "table3_ovrp.csv").open()))
    assert len(rows) == len(t3.methods) * len(t3.columns) and rows[0]["method"] == t3.methods[0]


def test_compare_takes_the_run_s_controls_from_flags_or_a_config_file_and_hands_them_to_every_job(tmp_path):
    import argparse

    from raise_plugin.commands.compare import add_compare_arguments, config_from
    from raise_plugin.errors import UserError

    parser = argparse.ArgumentParser()
    add_compare_arguments(parser)
    path = tmp_path / "study.toml"
    path.write_text('task = "ovrp"\nbudget = 40\n[engine.sandbox]\nmemory_mb = 512\ntimeout = 4.0\n'
                    '[llm]\nllm_timeout = 30.0\n[prices]\nsome-model = [1.0, 2.0]\n')
    args = parser.parse_args(["--config", str(path), "--budget", "30", "--output-mb", "1", "--max-llm-calls", "200",
                              "--max-tokens", "500", "--price", "other=0.5,1", "--programs-in-flight", "2"])
    args.given = {"config", "budget", "output_mb", "max_llm_calls", "max_tokens", "price", "programs_in_flight"}
    config = config_from(args)
    # a flag wins over the file
    assert (config.runs.task, config.runs.budget.samples, config.study.max_llm_calls) == ("ovrp", 30, 200)
    run = dict(config.run_fields("eoh", True, 0.002, 0))
    assert (run["memory_mb"], run["output_mb"], run["timeout"], run["llm_timeout"], run["max_tokens"],
            run["programs_in_flight"]) == (512, 1, 4.0, 30.0, 500, 2)
    assert run["prices"] == {"some-model": [1.0, 2.0], "other": [0.5, 1.0]}
    assert "max_llm_calls" not in run  # a cap of the whole study: each run is given what is left when it starts
    assert config.evaluation_limits() == {"timeout": 4.0, "limits": (("memory_mb", 512), ("output_mb", 1))}
    path.write_text("seed = 3\n")
    args = parser.parse_args(["--config", str(path)])
    with pytest.raises(UserError, match="compare does not take 'seed'"):
        config_from(args)


def _spent(run_dir, requests, cost):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "llm_usage.json").write_text(json.dumps({"backend": "openai", "model": "m", "total": {
        "requests": requests, "input_tokens": 10 * requests, "output_tokens": 5 * requests, "cost_usd": cost}}))


def test_the_caps_of_a_compare_hold_for_the_sum_over_its_runs(tmp_path):
    from raise_plugin.harness.job_place import JobFailed
    from raise_plugin.harness.study_budget import StudyBudget, study_ledger

    dirs = {name: tmp_path / name for name in ("a", "b", "c", "d")}
    _spent(dirs["a"], 6, 0.6)  # finished before this compare
    _spent(dirs["b"], 1, 0.1)  # interrupted: resumed with what it spent counted
    budget = StudyBudget(1.0, None, dirs, slots=1)
    assert budget.grant("b") == {"max_cost_usd": pytest.approx(0.1 + 0.3)}  # its own 0.1 and all that is left
    budget.release("b", {"requests": 3, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.35})
    assert budget.grant("c") == {"max_cost_usd": pytest.approx(0.05)}
    budget.release("c", {"requests": 1, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.05})
    with pytest.raises(JobFailed, match=r"not started: the study's --max-cost-usd is reached \(\$1.0000 of \$1"):
        budget.grant("d")
    # runs under way at once share what is left: together never more than the cap
    calls = StudyBudget(None, 20, dirs, slots=2)  # 7 requests spent before: 13 left
    first, second = calls.grant("c"), calls.grant("d")
    assert (first, second) == ({"max_llm_calls": 6}, {"max_llm_calls": 7})
    ledger = study_ledger(dirs)
    assert ledger["total"] == {"requests": 7, "input_tokens": 70, "output_tokens": 35, "cost_usd": 0.7}
    assert ledger["runs"]["c"]["requests"] == 0


def test_a_training_job_is_given_its_caps_as_it_starts_or_fails_in_one_line(tmp_path):
    import concurrent.futures as cf

    from raise_plugin.harness.compare_jobs import TrainJob
    from raise_plugin.harness.study_budget import CappedPlace, StudyBudget

    class Place:
        slots, kind = 1, "here"
        submitted = []

        def submit(self, job):
            self.submitted.append(job)
            future = cf.Future()
            future.set_result(type("Outcome", (), {"llm_spent": {"requests": 4, "input_tokens": 0,
                                                                   "output_tokens": 0, "cost_usd": 0.0}})())
            return future

    place = CappedPlace(Place(), StudyBudget(None, 4, {"x": tmp_path / "x", "y": tmp_path / "y"}, 1))
    assert place.slots == 1 and place.kind == "here"
    place.submit(TrainJob("x", "x", (), str(tmp_path), "t"))
    assert Place.submitted[0].caps == (("max_llm_calls", 4),)
    refused = place.submit(TrainJob("y", "y", (), str(tmp_path), "t"))
    assert "the study's --max-llm-calls is reached (4 of 4 requests" in str(refused.exception())
    assert len(Place.submitted) == 1


def test_a_compare_writes_its_llm_ledger_over_every_run(compared):
    ledger = json.loads((compared.out / "llm_ledger.json").read_text())
    assert set(ledger["runs"]) == {p.name for p in (compared.out / "runs").iterdir() if p.is_dir()}
    recorded = [json.loads((compared.out / "runs" / name / "summary.json").read_text()).get("llm_usage") or {}
                for name in ledger["runs"]]
    assert ledger["total"]["requests"] == sum((u.get("total") or {}).get("requests", 0) for u in recorded)
    assert ledger["total"]["cost_usd"] == 0  # offline: the sampler's answers cost nothing
    assert compared.out / "llm_ledger.json" in compared.files


@pytest.mark.slow  # a start of a browser on the compare above
def test_a_browser_shows_the_compare_page_with_its_tables_and_every_figure_embedded(compared, browser):
    import numpy as np

    page = compared.out / "report.html"
    assert page in compared.files
    source = page.read_text()
    assert "<script" not in source and 'src="http' not in source and "<link" not in source  # nothing fetched
    dom, shot = browser(page)
    assert "<title>RAISE compare on ovrp: eoh, budget 4</title>" in dom and "What is significant" in dom
    assert "<th>5-vehicle</th>" in dom and "RAISE-EoH (eps=0.002)" in dom and "<h2>LLM usage</h2>" in dom
    sources = re.findall(r'<img\b[^>]*\bsrc="([^"]*)"', dom)
    assert len(sources) == 2 and all(s.startswith("data:image/png;base64,") for s in sources)  # both figures
    pixels = (np.asarray(shot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    assert shot.shape[1] == 1280 and len(np.unique(pixels, axis=0)) > 8  # not a blank page


def test_figures_of_another_format_do_not_stand_beside_the_new_ones(compared, tmp_path):
    """A re-run in svg left the png figures of the run before, which a reader would take for current."""
    import shutil

    out = tmp_path / "cmp"
    shutil.copytree(compared.out, out)
    result = run_compare(tiny(out, figure_formats="svg"), quiet=True)  # nothing trained again
    figures = sorted(p.name for p in out.iterdir() if p.stem in ("convergence", "adversarial_distributions"))
    assert figures == ["adversarial_distributions.svg", "convergence.svg"]
    assert {p.name for p in result.files} >= set(figures)
    with pytest.raises(UserError, match="^figure_formats: give one or more of png, pdf, svg$"):
        tiny(out, figure_formats="")


def test_a_rerun_that_trains_again_moves_the_earlier_report_aside_with_the_runs(compared, tmp_path, monkeypatch,
                                                                                  capsys):
    """Run again with another budget, a compare moves the earlier runs aside at once, but its report,
    tables and figures stayed until the new ones were written: while it trained, and for good were it
    interrupted, the folder's report described runs no longer there. They now go with the runs."""
    import shutil

    from raise_plugin.harness import compare

    out = tmp_path / "cmp"
    shutil.copytree(compared.out, out)
    earlier = {p.name for p in out.iterdir() if p.is_file() and p.name != "compare.json" and p.name[0] != "."}
    assert {"report.md", "report.html", "results.csv", "convergence.png", "table3_ovrp.md"} <= earlier

    class Interrupted(Exception):
        pass

    def interrupt(*args, **kwargs):
        raise Interrupted

    monkeypatch.setattr(compare, "_train_and_evaluate", interrupt)
    with pytest.raises(Interrupted):
        run_compare(tiny(out, budget=12), quiet=False)
    assert [p.name for p in out.iterdir() if p.is_file() and p.name[0] != "."] == ["compare.json"]  # its settings
    stamp = next((out / "superseded").iterdir())
    assert {p.name for p in stamp.iterdir() if p.is_file()} == earlier
    assert (stamp / "report.md").read_text() == (compared.out / "report.md").read_text()
    assert "the earlier report, tables and figures, which describe them, moved there too" in capsys.readouterr().out


def test_tables_an_earlier_compare_wrote_and_this_one_does_not_are_moved_aside(compared, tmp_path):
    """A re-run without the ablations (or on another task) left the earlier table4_ablation (or
    table3 of the other task) beside the new tables, which a reader would take for current. They
    are moved to the re-run's superseded folder, said on the console and in the report."""
    import shutil

    out = tmp_path / "cmp"
    shutil.copytree(compared.out, out)
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        result = run_compare(tiny(out, ablations=False))  # nothing trained again
    stale = {f"table4_ablation{suffix}" for suffix in (".md", ".csv", ".tex")}
    assert not stale & {p.name for p in out.iterdir()}
    assert not stale & {p.name for p in result.files}
    aside = [p for p in (out / "superseded").glob("*/table4_ablation.*")]
    assert {p.name for p in aside} == stale
    assert aside[0].read_text() == (compared.out / aside[0].name).read_text()
    stamp = aside[0].parent.name
    assert f"moved to {out / 'superseded' / stamp}" in said.getvalue()
    report = (out / "report.md").read_text()
    assert "table4_ablation.md" in report and f"`{stamp}`" in report
    assert {p.name for p in out.iterdir() if p.name.startswith("table")} == \
        {p.name for p in result.files if p.name.startswith("table")}


@pytest.mark.parametrize("damage, now", [
    (lambda data: b"", "0 now"),                                            # emptied
    (lambda data: data[: data.rindex(b"\n", 0, -1) + 1], "1 now"),          # cut short
    (lambda data: data + data.splitlines(keepends=True)[-1], "3 now"),      # a row repeated
    (lambda data: data + b"garbage,,\r\n", "3 now"),                        # a line added
    (lambda data: data.replace(b"1.25", b"0.25", 1), "2 now"),              # a value edited
    (lambda data: data + b"\xff\xfe\r\n", "not UTF-8 text now"),            # bytes that are not text
])
def test_a_results_file_changed_since_its_evaluation_is_evaluated_again_never_reused(tmp_path, damage, now):
    """A results file is reused only as its suite evaluation wrote it: its record keeps its rows and
    digest, and one that does not match them is moved aside and evaluated again, said in the line."""
    from raise_plugin.harness.compare_jobs import ROW_FIELDS
    from raise_plugin.harness.provenance import result_meta, write_result_meta
    from raise_plugin.harness.results_csv import write_rows
    from raise_plugin.harness.reuse import plan_reuse
    from tasks import get_task

    task, out = get_task("ovrp"), tmp_path / "cmp"
    config = tiny(out)
    for name in task.baselines:
        csv_path = out / "results" / f"baseline-{name}.csv"
        write_rows(csv_path, [dict.fromkeys(ROW_FIELDS, "x") | {"instance": k, "metric": 1.25} for k in range(2)])
        write_result_meta(csv_path, result_meta(config.study.suite_instances, f"baseline-{name}",
                                                sandbox=config.evaluation_limits()))
    variants = plan_variants(("eoh",), (0.002,), False)
    assert plan_reuse(config, task, variants, out).evaluated == len(task.baselines)  # as written: reused
    first = next(iter(task.baselines))
    damaged = out / "results" / f"baseline-{first}.csv"
    damaged.write_bytes(damage(damaged.read_bytes()))
    plan = plan_reuse(config, task, variants, out)
    assert plan.evaluated == len(task.baselines) - 1 and not damaged.exists()
    assert plan.moved == [f"baseline-{first}: its results file is not the one its suite evaluation "
                          f"wrote (2 rows then, {now})"]
    assert "did not match (its results file is not the one its suite evaluation wrote" in plan.line(str(out))
