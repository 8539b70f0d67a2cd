"""Selection discipline: nothing in the harness selects or ranks heuristics on the test suite."""
from __future__ import annotations

import pytest

from raise_plugin.errors import UserError
from raise_plugin.harness.final_programs import best_program
from raise_plugin.harness.robustness_profile import robustness_profile
from raise_plugin.harness.rerank import RankedProgram, rerank
from raise_plugin.selection import check_selection_suite, selects_on
from raise_plugin.validation import select_final

REFUSED = "the test suite is for the final report only"


def test_the_test_suite_is_refused_in_one_line():
    with pytest.raises(UserError, match=REFUSED) as info:
        check_selection_suite("test")
    assert "\n" not in str(info.value)
    assert check_selection_suite("validation") == "validation"
    with pytest.raises(UserError, match="choose from robust"):
        check_selection_suite("nominal", allowed=("robust",))


def test_every_selecting_function_refuses_the_test_suite_before_any_work(tmp_path):
    program = RankedProgram("p", "def priority(x):\n    return x\n", 0.0)
    calls = [lambda: rerank("ovrp", [program], select_on="test"),
             lambda: robustness_profile("ovrp", [], [0.01], [0], select_on="test"),
             lambda: best_program(tmp_path / "no-such-run", select_on="test"),
             lambda: select_final(tmp_path / "no-such-run", None, select_on="test")]
    for call in calls:
        with pytest.raises(UserError, match=REFUSED):
            call()
    assert rerank.select_on == ("robust",) and robustness_profile.select_on == ("nominal",)
    assert "test" not in best_program.select_on and select_final.select_on == ("validation",)


def test_the_guard_passes_a_legal_suite_through():
    @selects_on("validation", "nominal")
    def pick(scores):
        return max(scores)

    assert pick([1, 3, 2]) == 3 and pick([1], select_on="nominal") == 1
    with pytest.raises(UserError, match=REFUSED):
        pick([1], select_on="test")


def test_a_compare_asked_to_select_on_the_test_suite_says_so_once_as_the_docs_show(tmp_path, capsys):
    """`select_on = "test"` in a compare's --config said "select_on: select_on='test' refused: ..."."""
    from pathlib import Path

    from raise_plugin.cli import main

    (tmp_path / "study.toml").write_text('select_on = "test"\n')
    assert main(["compare", "--task", "ovrp", "--config", str(tmp_path / "study.toml"),
                 "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err.strip()
    assert said == ("raise-ahd: error: select_on='test' refused: the test suite is for the final report only; "
                    "select on the nominal or validation suite")
    assert said in (Path(__file__).resolve().parents[2] / "docs" / "harness.md").read_text()
    assert not (tmp_path / "out").exists()
