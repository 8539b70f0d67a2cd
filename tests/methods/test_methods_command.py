"""``raise-ahd methods``: every registered method with the adapter robust() wraps it by, the host's
multi-objective methods as not wrapped, and a method that asks its back-end nothing said to."""
from __future__ import annotations

from raise_plugin.cli import main
from raise_plugin.methods import HOST_MULTI_OBJECTIVE, METHODS


def test_every_method_is_listed_with_how_it_is_wrapped(capsys):
    assert main(["methods"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert set(lines) == set(METHODS) | set(HOST_MULTI_OBJECTIVE)
    assert "llm4ad.EoH" in lines["eoh"] and "population (every member and pending sample re-scored" in lines["eoh"]
    assert "programs database with islands" in lines["funsearch"] and "incumbent" in lines["hillclimb"]
    assert lines["nsga2"].split(None, 2)[2].startswith("not wrapped: multi-objective")
    assert lines["gp"].endswith("; asks no LLM: writes its own programs")
    assert [name for name, line in lines.items() if "asks no LLM" in line] == ["gp"]
