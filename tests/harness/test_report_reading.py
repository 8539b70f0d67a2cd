"""Tables and reports that cannot be misread: a printed p agrees with its mark, ± means one thing
(the 95 % Student-t half-width over seeds) everywhere, a profile compares like with like, every
table names its metric, unit and direction, a plain run is never called robust, and the words
on few seeds follow the real number of seeds."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from raise_plugin.commands.run import print_summary
from raise_plugin.commands.select import candidates_table
from raise_plugin.engine.suite import Heuristic
from raise_plugin.harness.compare_config import CompareConfig, StudySettings
from raise_plugin.harness.compare_jobs import TrainOutcome
from raise_plugin.harness.compare_report import compare_report
from raise_plugin.harness.compare_tables import write_tables
from raise_plugin.harness.significance import significance, significance_markdown, significance_summary
from raise_plugin.harness.robustness_profile import Profile, ProfilePoint, robustness_profile
from raise_plugin.harness.stats import Comparison, bootstrap_ci, format_p, format_signed, mean_half_width
from raise_plugin.harness.variants import plan_variants
from tasks import get_task

TASKS = ("obp", "ojsp", "ovrp", "knapsack", "cvrp")


def comparison(p: float, low: float = -0.2, high: float = -0.1, seeds: int = 5) -> Comparison:
    return Comparison("RAISE-EoH", "BestFit", "best baseline", (low + high) / 2, low, high, p, 50, seeds, 0, "seeds")


def printed_p(text: str) -> str:
    """The p a table row or a sentence prints."""
    return re.search(r"(?:p = |\| )(< 0\.001|[01]\.\d+)(?: \||,)", text).group(1)


@pytest.mark.parametrize("p, significant", [(0.04994, True), (0.05, False), (0.0501, False)])
def test_a_printed_p_and_its_verdict_agree_at_the_boundary(p, significant):
    c = comparison(p)
    assert c.significant is significant
    row = significance_markdown([c], "t").splitlines()[4]
    sentence = significance_summary([c], 5)[0]
    for text in (row, sentence):
        shown = printed_p(text)
        assert (float(shown) < 0.05) is significant, (p, text)
        assert ("significant**" in text or "better, significant" in text) is significant
    assert printed_p(row) == printed_p(sentence) == {0.04994: "0.0499", 0.05: "0.050", 0.0501: "0.0501"}[p]


def test_p_is_printed_with_as_many_digits_as_its_side_of_alpha_needs():
    assert format_p(0.049996) == "0.049996" and format_p(0.0495) == "0.0495" and format_p(0.0502) == "0.0502"
    assert format_p(0.2) == "0.200" and format_p(0.0004) == "< 0.001" and format_p(math.nan) == "—"
    # where the test rejects on p alone (the interval includes 0), the sentence says so with p below alpha
    sentence = significance_summary([comparison(0.04994, low=-0.2, high=0.1)], 5)[0]
    assert "not significant" in sentence and "p = 0.0499" in sentence and "alone would call it significant" in sentence


def test_an_interval_called_significant_never_prints_a_bound_of_zero():
    c = comparison(0.001, low=0.0004, high=0.02)
    assert c.significant
    assert "[+0.0004, +0.020]" in significance_markdown([c], "t")
    assert format_signed(-0.00002) == "−0.00002"
    # zero unsigned: an interval [0.000, +0.001] includes 0, which "[+0.000, +0.001]" hid
    assert format_signed(0.0) == format_signed(-0.0) == "0.000"


def rows_for(task_name: str, seeds=(0, 1), shift=0.0) -> list[dict]:
    """Results of two baselines (one seed) and of EoH and RAISE-EoH (``seeds``) on one dataset of
    each test family at the task's first test size."""
    task = get_task(task_name)
    size = task.test_suite()[0].params
    params = ";".join(f"{k}={v}" for k, v in size.items())
    rng = np.random.default_rng(3)
    rows = []
    for method, method_seeds, offset in ((list(task.baselines)[0], (0,), 0.0), (list(task.baselines)[1], (0,), 0.2),
                                         ("EoH", seeds, -0.1), ("RAISE-EoH (eps=0.002)", seeds, -0.1 + shift)):
        for s in method_seeds:
            for family in ("uniform", "normal", "lognormal", "exponential", "triangular"):
                for i in range(4):
                    rows.append({"method": method, "seed": s, "family": family, "params": params, "instance": i,
                                 "metric": 1.0 + offset + 0.01 * rng.random(), "valid": True})
    return rows


@pytest.mark.parametrize("task_name", TASKS)
def test_every_compare_table_names_its_metric_unit_and_direction_and_what_its_plus_minus_is(task_name, tmp_path):
    task = get_task(task_name)
    study = StudySettings(methods=("eoh",), epsilons=(0.002,), ablations=False)
    variants = plan_variants(study.methods, study.epsilons)
    tables, _, files = write_tables(study, task, variants, rows_for(task_name), tmp_path)
    assert task.metric_unit and task.metric_label == f"{task.metric_name} ({task.metric_unit}), lower is better"
    for path in (f for f in files if f.suffix == ".md"):  # the .csv and .tex beside them hold the same cells
        text = path.read_text()
        caption = text.split("\n\n")[1] if path.name != "table_significance.md" else text.splitlines()[0]
        assert task.metric_label in caption, (path.name, caption)
    for table in tables.values():
        caption = table.markdown().split("\n\n")[1]
        assert caption.startswith(f"Metric: {task.metric_label}.")
        assert "± the half-width of its 95 % Student-t interval over seeds" in caption and "(2 seeds)" in caption
        assert "std" not in table.markdown() and "standard deviation" not in table.markdown()


def test_the_plus_minus_of_a_table_is_the_t_half_width_of_its_cell(tmp_path):
    rows = rows_for("ovrp", seeds=(0, 1, 2))
    tables, _, _ = write_tables(StudySettings(methods=("eoh",), epsilons=(0.002,), ablations=False),
                                get_task("ovrp"), plan_variants(("eoh",), (0.002,)), rows, tmp_path)
    table = tables["table_all_distributions"]
    i = table.methods.index("EoH")
    per_seed = [np.mean([r["metric"] for r in rows if r["method"] == "EoH" and r["seed"] == s
                         and r["family"] == "uniform"]) for s in (0, 1, 2)]
    assert table.cell(i, 0).startswith(f"{np.mean(per_seed):.3f} ± {mean_half_width(per_seed):.3f}")
    assert "(3 seeds)" in table.caption()


def hand_profile() -> Profile:
    points = [ProfilePoint("h", 0.01, s, m, 0.005, [1.0]) for s, m in ((0, 1.0), (1, 2.0))]
    return Profile("ovrp", [0.01], [0, 1], {"h": 0.8}, points, [1.0], {"h": 1.3}, 5)


def test_the_profile_states_its_metric_and_its_plus_minus_is_the_t_half_width():
    text = hand_profile().markdown()
    assert f"Metric: {get_task('ovrp').metric_label}." in text
    assert "Student-t interval over seeds" in text and "std" not in text
    assert f"| eps=0.01: worst instance found | 1.500 ± {mean_half_width([1.0, 2.0]):.3f} |" in text  # 6.353


def test_the_profile_compares_the_worst_instance_found_with_the_worst_nominal_instance():
    profile = robustness_profile("ovrp", [Heuristic("SP-Insert", baseline="SP-Insert")], [0.01], [0],
                                 inner_population=2, inner_generations=1, workers=1, progress=False)
    task = get_task("ovrp")
    nominal = [task.evaluate(task.baselines["SP-Insert"], inst) for inst in task.nominal_instances()]
    assert profile.nominal_worst["SP-Insert"] == pytest.approx(max(nominal))
    assert profile.nominal["SP-Insert"] == pytest.approx(np.mean(nominal))
    assert profile.nominal_count == len(nominal)
    text = profile.markdown()
    assert f"| nominal: worst instance | {max(nominal):.3f} |" in text
    assert f"| nominal: mean over the set | {np.mean(nominal):.3f} |" in text
    assert f"worst of its {len(nominal)} instances" in text and "with adversary seed 0" in text
    assert profile.to_json()["nominal_worst"] == profile.nominal_worst


def write_run(path, robust: bool, score: float = -1.25):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"task": "ovrp", "robust": robust, "budget": 8, "pop_size": 4,
                                                  "tau": 1, "epsilon": 0.002}))  # a plain run records them too
    summary = {"finished": True, "samples": 8, "budget": 8, "generations": 2, "refreshes": 2 if robust else 0,
               "best": {"program_id": "abc", "robust_score": score}, "evaluations": 40, "seconds": 1.0,
               "instance_set": [{"origin": "nominal"}] + ([{"origin": "adversarial", "distance": 0.001}] * robust)}
    (path / "summary.json").write_text(json.dumps(summary))
    return summary


def test_a_plain_run_is_never_labelled_robust(tmp_path, capsys):
    plain, robust = tmp_path / "eoh-plain-seed0", tmp_path / "eoh-raise-eps0.002-seed0"
    print_summary(write_run(plain, robust=False), plain)
    printed = capsys.readouterr().out
    metric = "mean route length (ratio to Clarke-Wright's)"
    assert "robust" not in printed and "on the nominal set" in printed and "-1.25" in printed
    assert f"best            1.25: {metric} on the nominal set, lower is better (abc; host score -1.25)" in printed
    print_summary(write_run(robust, robust=True), robust)
    assert (f"best robust     1.25: {metric} on the nominal set grown by adversarial instances, lower is better "
            "(abc; host score -1.25)") in capsys.readouterr().out

    outcome = TrainOutcome("eoh-plain-seed0", "trained", 1.0, 8, 0, -1.25, robust=False)
    assert "robust" not in outcome.summary() and outcome.summary().endswith(
        "best 1.25: mean metric on the nominal set, lower is better (host score -1.25)")
    named = TrainOutcome("r", "trained", 1.0, 8, 2, -1.25, recorded={"task": "ovrp", "aggregation": "min"})
    assert named.summary().startswith("trained, 8 samples, 2 refreshes, best robust 1.25")
    once = TrainOutcome("r", "trained", 1.0, 8, 1, -1.25, recorded={"task": "ovrp"})
    assert once.summary().startswith("trained, 8 samples, 1 refresh, best robust 1.25")  # was '1 refreshes'
    assert named.summary().endswith("best robust 1.25: worst route length (ratio to Clarke-Wright's) on the nominal "
                                    "set grown by adversarial instances, lower is better (host score -1.25)")

    task = get_task("ovrp")
    variants = plan_variants(("eoh",), (0.002,))
    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(0.002,), budget=8, pop_size=4, tau=1,
                           inner_population=4, inner_generations=1, seeds=(0,), llm="offline", select_on="robust")
    report = compare_report(config, task, variants, {}, [], {("eoh-plain", 0): plain,
                                                              ("eoh-raise-eps0.002", 0): robust})
    runs = report.split("## Runs")[1]
    assert "best robust" not in runs and "| 8 | 2 | 0 | nominal set | 1.2500 |" in runs
    assert "| 8 | 2 | 2 | nominal + adversarial | 1.2500 |" in runs
    # tau and eps only where the adversary ran: a plain run's recorded ones are its task's defaults, unused
    assert "| EoH | 0 | 8 | 4 |  |  | " in runs and "| RAISE-EoH (eps=0.002) | 0 | 8 | 4 | 1 | 0.002 | " in runs
    assert f"Metric: {task.metric_label}." in report

    selection = {"program_id": "abc", "robust_best": "abc", "candidates": [
        {"program_id": "abc", "robust_score": -1.25, "validation_metric": 1.31},
        {"program_id": "def", "robust_score": -1.30, "validation_metric": None}]}
    shown = candidates_table(selection, task, robust=False, per_dataset=1)
    assert "robust" not in shown and "nominal score (higher is better)" in shown
    assert "validation (lower is better)" in shown and task.metric_label in shown
    assert "<- chosen (the run's best)" in shown and "failed" in shown
    labelled = candidates_table(selection, task, robust=True, per_dataset=1)
    assert "robust score (higher is better)" in labelled and "(robust best)" in labelled


@pytest.mark.parametrize("seeds, resamples, at_the_range", [(2, 3, True), (3, 10, True), (4, 35, False)])
def test_the_words_on_few_seeds_follow_the_real_number_of_seeds(seeds, resamples, at_the_range):
    rows = rows_for("ovrp", seeds=tuple(range(seeds)))
    comparisons = significance(rows, ["EoH", "RAISE-EoH (eps=0.002)"], list(get_task("ovrp").baselines),
                               {"RAISE-EoH (eps=0.002)": "EoH"})
    last = significance_summary(comparisons, seeds)[-1]
    assert last.startswith(f"Only {seeds} seeds") and f"With {seeds} seeds" in last
    assert f"only {resamples} distinct resamples" in last
    assert (f"about the range of the {seeds} per-seed means" in last) is at_the_range
    assert "with 3" not in last.lower() or seeds == 3
    # the comparisons' own seeds, not the count asked for: a seed without results is not counted
    assert significance_summary(comparisons, seeds + 1)[-1] == last


def test_the_bootstrap_interval_with_two_or_three_seeds_is_the_range_of_the_per_seed_means():
    # what the words above claim, checked on the bootstrap itself
    for per_seed in ([0.1, 0.5], [0.1, 0.3, 0.5]):
        diff = np.repeat(np.array(per_seed)[:, None], 4, axis=1)
        low, high, over = bootstrap_ci(diff)
        assert over == "seeds" and (low, high) == pytest.approx((min(per_seed), max(per_seed)))


def test_a_plain_run_under_the_balanced_aggregation_is_described_as_the_nominal_mean():
    from raise_plugin.harness.run_metric import best_line
    plain = best_line(-1.25, "abc", {"task": "ovrp", "robust": False, "aggregation": "balanced:0.3"})
    assert plain.startswith("1.25: mean route length (ratio to Clarke-Wright's) on the nominal set, lower is better")
    assert "weighted" not in plain  # it had no adversarial mean to weigh, and said it did
    robust = best_line(-1.25, "abc", {"task": "ovrp", "robust": True, "aggregation": "balanced:0.3"})
    assert "nominal and adversarial means weighted 0.7 and 0.3 on the nominal set grown" in robust


def test_report_md_shows_each_figure_once_as_its_png_and_links_its_other_formats():
    from pathlib import Path
    from raise_plugin.harness.compare_report import FIGURE_WORDS, figure_lines
    written = [Path("out") / name for name in ("convergence.png", "convergence.pdf", "profile.svg", "profile.pdf",
                                               "worst.pdf")]
    lines = figure_lines(written)
    # a figure written as SVG (and no PNG) is shown as its SVG: --figure-format svg left report.html without figures
    shown = FIGURE_WORDS["convergence"]  # the convergence figure's words; another figure's: its name
    assert lines == [f"![{shown}](convergence.png)", "(convergence also as [PDF](convergence.pdf))", "",
                     "![profile](profile.svg)", "(profile also as [PDF](profile.pdf))", "", "worst: [PDF](worst.pdf)", ""]
    assert not any(line.startswith("![") and line.endswith(".pdf)") for line in lines)  # it embedded the PDF


def test_a_best_score_of_zero_is_shown_as_0_not_minus_0():
    # a regret of 0 against the task's rule (OBP's default aggregation, a program that is that rule) read "-0"
    from raise_plugin.harness.run_metric import best_line
    line = best_line(0.0, "abc", {"task": "obp", "robust": True, "aggregation": "regret:bestfit:min"})
    assert line.startswith("0: ") and "host score 0)" in line
