"""What shaped a compare's run or result: its settings and the code's version, recorded beside it
and compared before a re-run reuses it.

The code version is the package's version and a hash of the plugin's and the tasks' sources
(``raise_plugin/`` and ``tasks/``, every ``*.py`` and ``*.c``, sorted by path), computed once per
process. A training run's is written to ``RUN/code_version.json`` when it starts (its settings
are in the ``config.json`` the run writes itself); a suite evaluation's results file
``results/<name>.csv`` gets ``results/<name>.json`` with the code version, the suite size, the rows
and the SHA-256 of the file as written (a file emptied, cut short or edited since is evaluated again) and
what it evaluated: a baseline's name, or a run's name, the state the run was in (``run_state``) and
a hash of the program it handed on, so that a result whose run has changed since (a run a cap
stopped, resumed later) is not taken for the new program's.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
from pathlib import Path

import raise_plugin
import tasks
from raise_plugin.config import RunConfig
from raise_plugin.llm.endpoint import recorded_settings_of
from raise_plugin.resolve import started, task_defaults
from raise_plugin.rundir.files import RunDirectoryDamaged
from raise_plugin.rundir.reader import load_config, read_summary

__all__ = ["CODE_FILE", "code_version", "record_code_version", "recorded_code_version", "expected_run_config",
           "run_differences", "run_state", "result_meta", "write_result_meta", "read_result_meta", "run_change",
           "result_file_change", "sandbox_record",
           "IGNORED_FIELDS"]

CODE_FILE = "code_version.json"
# where and how fast a run ran, never what it found: results do not depend on them (tested in the engine);
# and the share of a study's caps it was given as it started (a finished run is what it is, whatever its share);
# and whether it was let start when it could not refresh (what it ran is in its other settings)
IGNORED_FIELDS = ("out", "executor", "workers", "record", "max_cost_usd", "max_llm_calls", "allow_no_refresh")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``"<package version>+src.<12 hex digits>"``: the package's version and a SHA-256 of the
    sources of ``raise_plugin/`` and ``tasks/`` (each file's path and bytes, sorted by path)."""
    digest = hashlib.sha256()
    for package in (raise_plugin, tasks):
        root = Path(package.__file__).resolve().parent
        files = sorted(p for pattern in ("*.py", "*.c") for p in root.rglob(pattern) if "__pycache__" not in p.parts)
        for path in files:
            digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return f"{raise_plugin.__version__}+src.{digest.hexdigest()[:12]}"


def record_code_version(run_dir: Path) -> None:
    """``RUN/code_version.json``: the code that started the run and, when another code version
    continued it, each one that did."""
    path = Path(run_dir) / CODE_FILE
    now = code_version()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    if not data.get("code_version"):
        data = {"code_version": now, "resumed_by": []}
    elif now != data["code_version"] and now not in data.get("resumed_by", []):
        data.setdefault("resumed_by", []).append(now)
    else:
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def recorded_code_version(run_dir: Path) -> str | None:
    """The code version that trained the run (``None``: recorded by none, older code); a run continued
    by other code versions reads ``"A, resumed by B"``."""
    try:
        data = json.loads((Path(run_dir) / CODE_FILE).read_text())
    except (OSError, ValueError):
        return None
    version = data.get("code_version")
    later = [v for v in data.get("resumed_by", []) if v != version]
    return f"{version}, resumed by {', '.join(later)}" if version and later else version


def expected_run_config(run_fields: tuple) -> dict:
    """The ``config.json`` a run of ``run_fields`` (``CompareConfig.run_fields``) writes, as the run
    itself would resolve it (its defaults, its endpoint), but the fields in ``IGNORED_FIELDS``."""
    config = RunConfig(**dict(run_fields))
    task = tasks.get_task(config.task)  # a compare's task, checked before its runs are planned
    config = config.with_unset(task_defaults(task))
    data = recorded_settings_of(started(config, task).to_dict())
    if config.instance_seed == "drawn":  # a new seed at every run: any recorded one is this setting's
        data.pop("instance_seed")
    return {k: v for k, v in data.items() if k not in IGNORED_FIELDS}


def run_differences(run_dir: Path, expected: dict) -> list[str]:
    """The settings where the run recorded in ``run_dir`` differs from ``expected``
    (``expected_run_config``), each as ``"budget 40 (here 30)"``; ``["no config.json"]`` when it
    recorded none."""
    try:
        recorded = load_config(Path(run_dir))
    except RunDirectoryDamaged:
        return ["no config.json"]
    if not set(expected) & set(recorded):
        return ["its config.json records none of them"]
    out = []
    for key, value in expected.items():
        if key in recorded and _same(recorded[key], value):
            continue
        shown = recorded.get(key, "not recorded")
        out.append(f"{key} {shown} (here {value})")
    return out


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def run_state(run_dir: Path) -> dict | None:
    """The state of the run in ``run_dir`` its final program comes from, as its ``summary.json`` says:
    ``samples``, ``finished`` and ``best_program_id``; ``None`` for a run that wrote no summary."""
    summary = read_summary(Path(run_dir))
    if summary is None:
        return None
    return {"samples": summary.get("samples"), "finished": bool(summary.get("finished")),
            "best_program_id": (summary.get("best") or {}).get("program_id")}


def result_meta(suite_instances: int | None, evaluated: str, run: dict | None = None,
                program: str | None = None, *, sandbox: dict | None = None) -> dict:
    """What shaped a suite evaluation: the code, the suite's size, the sandbox it ran in (``sandbox``:
    ``CompareConfig.evaluation_limits``, as ``sandbox_record`` writes it) and what it evaluated (a
    baseline's name, or the run directory's name with its own code version, the run's state,
    ``run_state``, and the SHA-256 of the program it handed on)."""
    meta = {"code_version": code_version(), "suite_instances": suite_instances, "evaluated": evaluated}
    if sandbox is not None:
        meta["sandbox"] = sandbox_record(sandbox)
    if run is not None:
        meta["run"] = run
    if program is not None:
        meta["program_sha256"] = hashlib.sha256(program.encode()).hexdigest()
    return meta


def run_change(csv_path: Path, run_dir: Path) -> str | None:
    """Why the result ``csv_path`` no longer shows the final program of its run in ``run_dir`` (the run
    has other samples or another best since it was evaluated), or ``None``. A result of earlier code,
    which recorded no run state, holds while its run's ``summary.json`` is not newer than it."""
    recorded = (read_result_meta(csv_path) or {}).get("run")
    summary = Path(run_dir) / "summary.json"
    if recorded is None:
        try:
            written_after = summary.stat().st_mtime_ns > Path(csv_path).stat().st_mtime_ns
        except OSError:
            return None
        return ("its run was written after its suite evaluation (a result of earlier code, which recorded no "
                "run state)") if written_after else None
    now = run_state(run_dir)
    if now is None:
        return None
    if now["samples"] != recorded.get("samples"):
        return (f"its run changed since its suite evaluation ({recorded.get('samples')} samples then, "
                f"{now['samples']} now)")
    if now["best_program_id"] != recorded.get("best_program_id"):
        return (f"its run's best program changed since its suite evaluation ({recorded.get('best_program_id')} "
                f"then, {now['best_program_id']} now)")
    return None


def sandbox_record(sandbox: dict) -> dict:
    """``CompareConfig.evaluation_limits`` as a result's record holds it (JSON's own values)."""
    return json.loads(json.dumps({"timeout": sandbox.get("timeout"), "limits": dict(sandbox.get("limits") or ())}))


def write_result_meta(csv_path: Path, meta: dict) -> None:
    """``meta`` (``result_meta``) as the record beside the results file ``csv_path``, with the rows
    that file holds and its SHA-256, which a re-run checks it against (``result_file_change``)."""
    data = Path(csv_path).read_bytes()
    meta = {**meta, "rows": _csv_rows(data), "csv_sha256": hashlib.sha256(data).hexdigest()}
    Path(csv_path).with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")


def result_file_change(csv_path: Path, meta: dict) -> str | None:
    """Why the results file ``csv_path`` is not the one its record ``meta`` describes (emptied, cut
    short, a row repeated, added or edited since its suite evaluation wrote it), or ``None``; a
    record of earlier code, which kept no digest of its file, is taken at its word."""
    digest = meta.get("csv_sha256")
    if digest is None:
        return None
    try:
        data = Path(csv_path).read_bytes()
    except OSError as exc:
        return f"its results file cannot be read ({exc.strerror or exc})"
    if hashlib.sha256(data).hexdigest() == digest:
        return None
    rows = _csv_rows(data)
    return (f"its results file is not the one its suite evaluation wrote ({meta.get('rows')} rows then, "
            f"{'not UTF-8 text' if rows is None else rows} now)")


def _csv_rows(data: bytes) -> int | None:
    """The rows of results below the header in the CSV text ``data``; ``None``: not UTF-8 text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return max(0, sum(1 for row in csv.reader(io.StringIO(text, newline="")) if row) - 1)


def read_result_meta(csv_path: Path) -> dict | None:
    try:
        return json.loads(Path(csv_path).with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
