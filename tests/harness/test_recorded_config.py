"""A run's ``config.json`` has one reader (``rundir.reader.load_config``): the harness's readers of a
recorded run (rerank's nominal seed, reuse's differences, the compare's and the run's pages) take
its one-line errors and its tolerance, and no other module opens the file."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from raise_plugin.harness.provenance import run_differences
from raise_plugin.harness.rerank import run_nominal_seed
from raise_plugin.harness.run_report import run_page
from raise_plugin.rundir.files import RunDirectoryDamaged

PACKAGE = Path(__file__).resolve().parents[2] / "raise_plugin"
DAMAGED = {"not JSON": "{\"task\": \"ovrp\",", "a list": "[1, 2]", "not UTF-8": b"\xff\xfe{"}


def _write(folder: Path, content) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    return folder


@pytest.mark.parametrize("kind", DAMAGED)
def test_a_damaged_config_is_skipped_for_the_nominal_seed_as_a_missing_one(tmp_path, kind):
    run = _write(tmp_path / "study" / "run", DAMAGED[kind])
    assert run_nominal_seed(run) is None  # no readable config here or above: the task's public set
    _write(tmp_path / "study", json.dumps({"instance_seed": "17"}))
    assert run_nominal_seed(run) == 17  # the folder above records it (a host log folder inside a run)
    _write(run, json.dumps({"instance_seed": "public"}))
    assert run_nominal_seed(run) is None


@pytest.mark.parametrize("kind", DAMAGED)
def test_reuse_reads_a_damaged_config_as_none_recorded(tmp_path, kind):
    run = _write(tmp_path / "run", DAMAGED[kind])
    assert run_differences(run, {"budget": 40}) == ["no config.json"]
    assert run_differences(tmp_path / "missing", {"budget": 40}) == ["no config.json"]
    _write(run, json.dumps({"budget": 30, "task": "ovrp"}))
    assert run_differences(run, {"budget": 40, "task": "ovrp"}) == ["budget 30 (here 40)"]


@pytest.mark.parametrize("kind", DAMAGED)
def test_a_run_page_of_a_damaged_config_is_refused_in_one_line_naming_the_file(tmp_path, kind):
    run = _write(tmp_path / "run", DAMAGED[kind])
    with pytest.raises(RunDirectoryDamaged) as caught:
        run_page(run, summary={"finished": True})
    message = str(caught.value)
    assert "\n" not in message and str(run / "config.json") in message and "damaged" in message


def _config_reads(source: str) -> list[int]:
    """The lines of ``source`` that read (``read_text``, ``read_bytes``, ``open``) a path spelled
    with ``"config.json"``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("read_text", "read_bytes", "open"):
            opened = [func.value] if isinstance(func, ast.Attribute) and name != "open" else node.args[:1]
            if any(isinstance(n, ast.Constant) and n.value == "config.json" for a in opened for n in ast.walk(a)):
                lines.append(node.lineno)
    return lines


def test_no_module_but_the_run_directory_reader_reads_a_config_json():
    assert _config_reads('seed = json.loads((folder / "config.json").read_text()).get("instance_seed")') == [1]
    assert _config_reads('with open(Path(run) / "config.json") as f:\n    data = json.load(f)') == [1]
    readers = {str(path.relative_to(PACKAGE.parent)): _config_reads(path.read_text())
               for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "rundir" / "reader.py"}
    assert {path: lines for path, lines in readers.items() if lines} == {}
