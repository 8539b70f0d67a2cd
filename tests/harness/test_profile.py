"""Robustness profile: worst metric within eps grows with eps; outputs are valid files."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from raise_plugin.cli import main
from raise_plugin.harness.profile_files import save_profile
from raise_plugin.harness.robustness_profile import plot_profile, plot_worst_distributions, robustness_profile
from raise_plugin.engine.suite import Heuristic
from tasks import get_task

PNG = b"\x89PNG\r\n\x1a\n"
EPS = [0.001, 0.003, 0.01]


@pytest.fixture(scope="module")
def profile():
    heuristics = [Heuristic("SP-Insert", baseline="SP-Insert"), Heuristic("NF-Insert", baseline="NF-Insert")]
    return robustness_profile("ovrp", heuristics, EPS, [0, 1, 2], inner_population=4, inner_generations=2, workers=2,
                              progress=False, projection="sphere")


def test_worst_case_grows_with_eps_up_to_the_seed_spread(profile):
    for h in profile.heuristics():
        stats = [profile.summary(h, e) for e in EPS]
        for (m0, s0), (m1, s1) in zip(stats, stats[1:]):
            assert m1 >= m0 - max(s0, s1) - 1e-12, (h, stats)
        assert stats[-1][0] >= profile.nominal[h]


def test_a_heuristic_or_radius_the_profile_lacks_is_named_not_nan(profile):
    """summary("zzz", eps) gave (nan, nan) and worst_distribution an array of NaN, as for failed searches."""
    assert profile.summary("SP-Insert", EPS[0])[1] == pytest.approx(float(np.std(profile.worst("SP-Insert", EPS[0]),
                                                                                ddof=1)))  # the table's sd
    for args in (("SP-insert", EPS[0]), ("SP-Insert", 0.5), ("SP-Insert", str(EPS[0]))):  # a string: ValueError
        for read in (profile.summary, profile.worst_distribution, profile.worst, profile.half_width):
            with pytest.raises(KeyError, match=r"the profile has no .* it has SP-Insert, NF-Insert at eps "):
                read(*args)


def test_points_stay_inside_their_ball(profile):
    for p in profile.points:
        assert p.distance <= p.epsilon + 1e-9
        assert abs(sum(p.distribution) - 1) < 1e-9


def test_each_worst_distribution_is_drawn_against_the_centre_of_its_ball(profile):
    """Not against the mean of the nominal histograms: d is measured from the nearest one, so that is the
    histogram a reader holds the distribution against."""
    from raise_plugin.adversary import nearest
    from tasks import get_task

    task = get_task("ovrp")
    assert np.allclose(profile.nominal_histograms, [task.histogram(i) for i in task.nominal_instances()])
    fig = plot_worst_distributions(profile, "NF-Insert")
    for ax, e in zip(fig.axes, sorted(EPS)):
        worst = max((p for p in profile.points if p.heuristic == "NF-Insert" and p.epsilon == e),
                    key=lambda p: p.metric)
        index, d = nearest(worst.distribution, np.array(profile.nominal_histograms))
        assert d == pytest.approx(worst.distance, abs=1e-9)  # the centre its search projected it onto
        centre = next(patch for patch in ax.patches if patch.get_label().startswith("nearest nominal histogram"))
        assert np.allclose(centre.get_data().values, profile.nominal_histograms[index])
        assert ax.get_title(loc="left").endswith(f"to nominal no. {index + 1} of {len(profile.nominal_histograms)}")
    assert "against its nearest nominal histogram (the centre of its eps-ball)" in fig.get_suptitle()


def test_profile_is_deterministic_under_seeds(profile):
    again = robustness_profile("ovrp", [Heuristic("NF-Insert", baseline="NF-Insert")], EPS[:1], [0, 1],
                               inner_population=4, inner_generations=2, workers=1, progress=False, projection="sphere")
    for p in again.points:
        twin = next(q for q in profile.points if (q.heuristic, q.epsilon, q.seed) == (p.heuristic, p.epsilon, p.seed))
        assert twin.metric == p.metric and twin.distribution == p.distribution


def test_files_and_one_series_per_heuristic(profile, tmp_path):
    fig = plot_profile(profile, tmp_path / "p.png")
    (legend,) = fig.legends  # below the panel, outside the data
    assert [t.get_text() for t in legend.get_texts()] == ["SP-Insert", "NF-Insert"]
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG
    written = save_profile(profile, tmp_path / "out")
    for path in written:
        assert path.exists()
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == PNG
    data = json.loads((tmp_path / "out" / "profile.json").read_text())
    assert len(data["points"]) == 2 * len(EPS) * 3 and data["epsilons"] == EPS
    assert data["shift"] == "demand"


def test_the_worst_distributions_figure_names_the_shift_quantity_and_saves_only_with_a_path(profile, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = plot_worst_distributions(profile, "NF-Insert")
    assert len(fig.axes) == len(EPS)  # one panel per eps
    assert fig.axes[-1].get_xlabel() == "demand (1 to 10)"  # OVRP's shift dimension in its own units
    assert list(tmp_path.iterdir()) == []


def test_cli_profile_errors_are_one_line(capsys):
    # in this process, as tests/commands/test_hostile_cli.py runs every command's bad input
    for extra, message in ((["--compare", "nope"], "unknown baseline"), ([], "nothing to profile"),
                           (["--compare", "all", "--epsilons", "x"], "--epsilons")):
        try:
            code = main(["profile", "--task", "ovrp", *extra])
        except SystemExit as exc:  # argparse
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_run_stopped_before_its_first_summary_is_named_a_run_to_resume(tmp_path, capsys):
    """A plain run killed mid-way keeps no summary.json (it writes one at a refresh or its end): profile said it
    was 'neither a run directory (summary.json) nor an llm4ad log'."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"task": "ovrp", "method": "eoh"}))
    (run / "samples.jsonl").write_text("")
    assert main(["profile", "--task", "ovrp", str(run), "--no-progress"]) == 2
    assert capsys.readouterr().err == (f"raise-ahd: error: {run}: a run directory with no summary.json yet (stopped "
                                       f"before it wrote one); raise-ahd resume {run} goes on to its best program\n")


def test_profile_of_a_run_directory_and_of_its_llm4ad_log(tmp_path):
    from raise_plugin.config import RunConfig
    from raise_plugin.runner import start_run

    run = tmp_path / "run"
    start_run(RunConfig(task="ovrp", method="eoh", robust=False, budget=8, pop_size=4, out=str(run))).run()
    cmd = [sys.executable, "-m", "raise_plugin.cli", "profile", str(run), str(run / "host"), "--task", "ovrp",
           "--epsilons", "0.01", "--adversary-seeds", "1", "--inner-population", "2", "--inner-generations", "1", "--workers", "1",
           "--out", str(tmp_path / "p"), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "p" / "profile.json").read_text())
    assert set(data["nominal"]) == {"run", "host"}
    # the run's best program and the host log's best sample are the same heuristic
    assert data["nominal"]["run"] == pytest.approx(data["nominal"]["host"])


def test_a_heuristic_that_fails_everywhere_is_invalid_in_the_table_null_in_the_json_and_exits_1(tmp_path, capsys):
    raises = tmp_path / "raises.py"
    raises.write_text("def select_next_node(customer_features, candidate_insertions):\n    raise ValueError('x')\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's "invalid value encountered" was printed
        code = main(["profile", str(raises), "--task", "ovrp", "--epsilons", "0.002", "--adversary-seeds", "1",
                     "--inner-population", "4", "--inner-generations", "1", "--workers", "1", "--no-progress",
                     "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 1 and "raise-ahd profile: the heuristic given (raises) invalid on every instance" in err  # was 0
    assert "| eps=0.002: worst instance found | invalid |" in out  # was "inf"
    # with why: the search's own failure (it said only "the heuristic fails there")
    assert "raises: 1 of 1 searches failed: invalid on the worst instance found: priority raised " \
           "ValueError: x" in out
    text = (tmp_path / "out" / "profile.json").read_text()
    assert "NaN" not in text and "Infinity" not in text  # JSON that every parser reads: invalid is null
    point = json.loads(text)["points"][0]
    assert point["metric"] is None and point["reason"].endswith("invalid on the worst instance found: "
                                                                "priority raised ValueError: x")


def test_two_files_of_one_name_are_named_by_their_paths_and_one_file_given_twice_is_refused(tmp_path, capsys):
    # runs/a/best.py and runs/b/best.py were refused ("best named twice; name them apart with
    # Heuristic(name, code=...)", a fix only Python has), where evaluate names them by their paths
    template = get_task("ovrp").template_program
    files = [tmp_path / run / "best.py" for run in ("a", "b")]
    for f in files:
        f.parent.mkdir()
        f.write_text(template)
    flags = ["--task", "ovrp", "--epsilons", "0.002", "--adversary-seeds", "1", "--inner-population", "4",
             "--inner-generations", "1", "--workers", "1", "--no-progress", "--out", str(tmp_path / "out")]
    assert main(["profile", *map(str, files), *flags]) == 0
    out = capsys.readouterr().out
    assert f"| instance | {files[0]} | {files[1]} |" in out
    again = tmp_path / "a" / ".." / "a" / "best.py"
    assert main(["profile", str(files[0]), str(again), *flags[:-1], str(tmp_path / "out2")]) == 2
    assert capsys.readouterr().err == f"raise-ahd: error: heuristics: {again} given twice\n"
    assert not (tmp_path / "out2").exists()


def test_the_projection_a_profile_refuses_is_not_offered(tmp_path, capsys):
    """--help offered none, which the profile then refused: only what it takes is offered now."""
    assert main(["profile", "--help"]) == 0 and "--projection {paper,sphere}" in capsys.readouterr().out
    assert main(["profile", str(tmp_path / "h.py"), "--task", "obp", "--projection", "none"]) == 2
    assert "invalid choice: 'none' (choose from 'paper', 'sphere')" in capsys.readouterr().err


def test_regret_of_a_task_s_only_baseline_is_refused_before_any_search(tmp_path, fresh_registry, capsys):
    # its references are the task's other baselines: every search failed with "the search raised ValueError:
    # objective='regret' needs at least one reference heuristic (references=...)"
    example = (Path(__file__).resolve().parents[2] / "examples" / "load_balance.py").read_text()
    (tmp_path / "one.py").write_text(example + '\nLoadBalance.baselines = {"LeastLoaded": least_loaded}\n')
    code = main(["profile", "--task", f"{tmp_path / 'one.py'}:LoadBalance", "--compare", "all",
                 "--adversary-objective", "regret:baselines", "--no-progress", "--out", str(tmp_path / "p")])
    assert code == 2 and capsys.readouterr().err == (
        "raise-ahd: error: --adversary-objective: regret:baselines measures LeastLoaded against no baseline, it "
        "being load_balance's only one; profile it with metric\n")
    assert not (tmp_path / "p").exists()


CHEAPEST = "def priority(customer_features, candidate_insertions):\n    return -candidate_insertions[:, 2]\n"
# a program that, once called, makes the task score every instance 0.0 in its process
PATCHES_THE_TASK = ("def priority(customer_features, candidate_insertions):\n    import tasks.ovrp\n"
                    "    tasks.ovrp.OVRPTask.evaluate = lambda *args: 0.0\n    return -candidate_insertions[:, 2]\n")


def test_a_searched_program_runs_in_its_own_process_never_in_the_worker_that_scores():
    """A profile's searches ran each program in the worker itself: a program that patched the task there
    scored its worst instance 0.0 and every search after it in that worker too, and one raising
    GeneratorExit ended the profile with a traceback. They run in program processes, as a run's do."""
    def profiled(*programs):
        heuristics = [Heuristic(name, code=code) for name, code in programs]
        return robustness_profile("ovrp", heuristics, [0.01], [0], inner_population=4, inner_generations=1, workers=1,
                                  progress=False, projection="sphere")

    alone = profiled(("cheapest", CHEAPEST)).worst("cheapest", 0.01)
    after = profiled(("patches", PATCHES_THE_TASK), ("exits", "def priority(a, b):\n    raise GeneratorExit\n"),
                     ("cheapest", CHEAPEST))
    assert after.worst("cheapest", 0.01) == alone and alone[0] > 1.0
    assert after.worst("patches", 0.01) == alone  # its decisions are the cheapest insertion's
    exits = [p for p in after.points if p.heuristic == "exits"]
    assert not np.isfinite(exits[0].metric) and "the program raised GeneratorExit" in exits[0].reason, exits
