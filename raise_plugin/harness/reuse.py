"""What a compare reuses of the work an earlier compare left in its folder: only runs and results
whose every setting and code version match (``--reuse matching``), none (``never``), or those of
another code version too (``any``, said in the report); and a run's result only while the run is in
the state it was evaluated in (``provenance.run_change``), under every choice. What does not match
is moved aside to ``OUT/superseded/<time>/`` (never deleted) and done again.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from raise_plugin.harness.compare_jobs import run_finished
from raise_plugin.harness.provenance import (code_version, expected_run_config, read_result_meta,
                                             recorded_code_version, result_file_change, run_change,
                                             run_differences, sandbox_record)
from raise_plugin.harness.variants import result_name
from raise_plugin.settings import SETTINGS, section_of

__all__ = ["ReusePlan", "plan_reuse", "set_aside", "set_aside_tables", "set_aside_report"]


@dataclass
class ReusePlan:
    """What an earlier compare's folder holds and what of it this compare keeps."""

    runs: int = 0                     # training runs planned
    finished: int = 0                 # finished runs kept
    interrupted: int = 0              # unfinished runs kept, to resume
    results: int = 0                  # suite evaluations planned
    evaluated: int = 0                # results kept
    provisional: int = 0              # of those, results of unfinished runs: kept only if resuming changes nothing
    moved: list[str] = field(default_factory=list)     # what was moved aside, each "name: why"
    other_code: list[str] = field(default_factory=list)  # kept under --reuse any: "name (code version)"
    tables_aside: list[str] = field(default_factory=list)  # an earlier compare's tables this one does not write
    report_aside: list[str] = field(default_factory=list)  # its report, tables and figures, when runs were moved
    superseded: Path | None = None

    def line(self, out_name: str) -> str | None:
        """The one line said before any job starts; ``None`` when the folder held nothing."""
        if not (self.finished or self.interrupted or self.evaluated or self.moved):
            return None
        kept = [f"{self.finished} of {self.runs} training runs finished",
                f"{self.evaluated} of {self.results} suite evaluations"]
        if self.interrupted:
            kept.append(f"{self.interrupted} interrupted run{'s' if self.interrupted > 1 else ''} to resume"
                        + self._provisional())
        text = f"{out_name} holds an earlier compare; reusing {', '.join(kept)}"
        if self.moved:
            reasons = sorted({why for _, why in (m.split(": ", 1) for m in self.moved)})
            text += (f"; {len(self.moved)} earlier run{'s' if len(self.moved) > 1 else ''} or result"
                     f"{'s' if len(self.moved) > 1 else ''} did not match ({'; '.join(reasons[:3])}"
                     f"{'; ...' if len(reasons) > 3 else ''}) and {'are' if len(self.moved) > 1 else 'is'} done "
                     f"again, the earlier ones moved to {self.superseded}")
        if self.other_code:
            runs = sum(not o.startswith("results/") for o in self.other_code)
            results = len(self.other_code) - runs
            text += f"; {runs} runs and {results} results of another code version accepted (--reuse any)"
        return text + f" (to start afresh, delete {out_name} or give another --out)"

    def _provisional(self) -> str:
        """What becomes of the suite evaluations of the runs to resume, said after their count."""
        p, several = self.provisional, self.provisional > 1
        if not p:
            return ""
        if self.interrupted == 1:
            return " (its suite evaluation is done again if resuming changes the run)"
        return (f" (the suite evaluation{'s' if several else ''} of {p} of them {'are' if several else 'is'} done "
                f"again if resuming changes {'their runs' if several else 'its run'})")


def plan_reuse(config, task, variants, out: Path) -> ReusePlan:
    """Check every run directory and results file an earlier compare left in ``out`` against this
    compare's settings and code version; move aside what is not to be reused (``config.study.reuse``,
    the setting ``reuse``: see the module's docstring)."""
    reuse = config.study.reuse
    now = code_version()
    stamp = Path(out) / "superseded" / time.strftime("%Y%m%d-%H%M%S")
    plan = ReusePlan(superseded=stamp)
    study = config.study
    cells = [(v, s) for v in variants for s in study.seeds]
    plan.runs = len(cells)
    dropped_runs, run_of, unfinished = set(), {}, set()
    for folder in ("runs", "results"):  # a file where the compare's folder goes: in its way, set aside
        if (out / folder).exists() and not (out / folder).is_dir():
            _move(out / folder, stamp / folder)
            plan.moved.append(f"{folder}: a file, not a folder")
    for v, s in cells:
        name = f"{v.key}-seed{s}"
        path = out / "runs" / name
        run_of[result_name(v.key, s, study.select_on)] = path
        if not (path / "config.json").exists():
            if path.exists() and not path.is_dir():  # a file where the run's folder goes: in its way, set aside
                _move(path, stamp / "runs" / name)
                plan.moved.append(f"{name}: a file, not a run directory")
            elif path.exists() and any(path.iterdir()) and reuse == "never":
                _move(path, stamp / "runs" / name)
            continue
        why = _run_mismatch(path, config.run_fields(v.method, v.robust, v.epsilon, s, v.switches), now, reuse)
        if why:
            _move(path, stamp / "runs" / name)
            plan.moved.append(f"{name}: {why}")
            dropped_runs.add(result_name(v.key, s, study.select_on))
            continue
        if recorded_code_version(path) != now:
            plan.other_code.append(f"{name} ({recorded_code_version(path) or 'code version not recorded'})")
        if run_finished(path):
            plan.finished += 1
        else:
            plan.interrupted += 1
            unfinished.add(result_name(v.key, s, study.select_on))
    names = [f"baseline-{b}" for b in task.baselines] + [result_name(v.key, s, study.select_on) for v, s in cells]
    sandbox = config.evaluation_limits()
    plan.results = len(names)
    for name in names:
        csv = out / "results" / f"{name}.csv"
        if not csv.exists():
            continue
        why = ("its run is trained again" if name in dropped_runs
               else _result_mismatch(csv, study.suite_instances, now, reuse, sandbox)
               or (run_change(csv, run_of[name]) if name in run_of else None))
        if why:
            set_aside(csv, stamp)
            plan.moved.append(f"{name}: {why}")  # a retrained run's result too: the line counts all it moves
            continue
        meta = read_result_meta(csv) or {}
        if meta.get("code_version") != now:
            plan.other_code.append(f"results/{name}.csv ({meta.get('code_version')})")
        plan.evaluated += 1
        plan.provisional += name in unfinished
    return plan


def set_aside_tables(out: Path, written: list[Path], plan: ReusePlan) -> list[str]:
    """An earlier compare's tables in ``out`` that this one did not write (``written``: of another
    task, or the ablation table of a compare that had ablations), moved to ``plan.superseded``
    (never deleted), which a reader would otherwise take for current; their names, also kept in
    ``plan.tables_aside``."""
    now = {path.name for path in written}
    stale = sorted(_tables(out) - now)
    for name in stale:
        _move(out / name, plan.superseded / name)
    plan.tables_aside += stale
    return stale


def set_aside_report(out: Path, plan: ReusePlan, outputs: tuple[str, ...]) -> list[str]:
    """An earlier compare's ``outputs`` in ``out`` (its report, results table, ledger, figures) and its
    tables, moved to ``plan.superseded`` with the runs and results ``plan`` moved there: they describe
    those, and would stand beside the runs done again until this compare ends (for good, were it
    interrupted). Nothing when nothing was moved. Their names, also kept in ``plan.report_aside``."""
    if not plan.moved:
        return []
    names = sorted({name for name in outputs if (out / name).is_file()} | _tables(out))
    for name in names:
        _move(out / name, plan.superseded / name)
    plan.report_aside += names
    return names


def _tables(out: Path) -> set[str]:
    """The names of the table files (Markdown, CSV, LaTeX) a compare's folder holds."""
    return {path.name for path in out.glob("table*") if path.is_file() and path.suffix in (".md", ".csv", ".tex")}


def set_aside(csv: Path, stamp: Path) -> None:
    """Move the result ``csv`` and its record of what shaped it to ``stamp/results/`` (never deleted)."""
    for part in (csv, csv.with_suffix(".json")):
        if part.exists():
            _move(part, stamp / "results" / part.name)


# what only a robust run's inner loop reads: a plain run trained under other values is the same run (tau and
# tau_unit are not here: they set the interval of a plain run's validation trace too)
ROBUST_ONLY = frozenset(("epsilon", "adversary_objective", "allow_no_refresh", "max_adversarial",
                         "instances_per_refresh", *(name for name, setting in SETTINGS.items()
                                                    if section_of(name)[-1] == "inner_search")))


def _run_mismatch(path: Path, run_fields: tuple, now: str, reuse: str) -> str | None:
    """Why the run in ``path`` is not to be reused, or ``None``; a plain run's is not its robust-only
    settings' (``ROBUST_ONLY``)."""
    if reuse == "never":
        return "--reuse never"
    expected = expected_run_config(run_fields)
    if not dict(run_fields).get("robust", True):
        expected = {k: v for k, v in expected.items() if k not in ROBUST_ONLY}
    differences = run_differences(path, expected)
    if differences:
        return "settings differ: " + ", ".join(differences[:3]) + (", ..." if len(differences) > 3 else "")
    recorded = recorded_code_version(path)
    if recorded != now and reuse != "any":
        return (f"trained by code version {recorded} (this one is {now})" if recorded else
                f"trained by code that recorded no version (this one is {now})")
    return None


def _result_mismatch(csv: Path, suite_instances: int | None, now: str, reuse: str, sandbox: dict) -> str | None:
    if reuse == "never":
        return "--reuse never"
    meta = read_result_meta(csv)
    if meta is None:
        return "evaluated by code that recorded no version"
    changed = result_file_change(csv, meta)
    if changed:
        return changed
    if meta.get("suite_instances") != suite_instances:
        shown = lambda n: "all" if n is None else n  # noqa: E731
        return (f"suite instances per dataset {shown(meta.get('suite_instances'))} "
                f"(here {shown(suite_instances)})")
    recorded, here = meta.get("sandbox"), sandbox_record(sandbox)
    if recorded is not None and recorded != here:  # a result of earlier code, which recorded none, holds
        before = {"timeout": recorded.get("timeout"), **recorded.get("limits", {})}
        after = {"timeout": here["timeout"], **here["limits"]}
        shown = lambda v: "default" if v is None else v  # noqa: E731
        return "evaluated under other sandbox limits: " + ", ".join(
            f"{k} {shown(before.get(k))} (here {shown(after.get(k))})"
            for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k))
    if meta.get("code_version") != now and reuse != "any":
        return f"evaluated by code version {meta.get('code_version')} (this one is {now})"
    return None


def _move(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), str(target))
