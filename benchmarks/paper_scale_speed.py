"""The paper-scale robust run, timed with and without each speed-up: exact early rejection,
the compiled evaluation path (``--jit``) and one or two cores for the evaluations.

Each variant is the same CLI run (``raise-ahd run --task obp --budget 1000 --seed 0``, the
task's defaults) in a fresh process; the script prints, per variant, the wall time, the
instance evaluations by purpose (outer, inner searches, re-scoring: summary.json's compute
section), the candidates rejected early and the instance evaluations that saved, what the
compiled path reports, and whether every variant ended on the same best program and final
population (they must: none of the three changes a result).

    python benchmarks/paper_scale_speed.py                              # 1000 samples: early rejection on/off
    python benchmarks/paper_scale_speed.py --budget 300                 # a 300-sample slice
    python benchmarks/paper_scale_speed.py --budget 300 --jit --cores 1,2
    python benchmarks/paper_scale_speed.py --budget 300 --jit -- --jit-after 0   # every program compiled at once

``--jit`` and ``--cores`` multiply the variants (on/off, process:1/process:2); an option the
CLI does not know yet is skipped with a note. Run it on an otherwise idle machine: other work
on the cores is measured too. ``--json FILE`` keeps the figures.
"""
from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from raise_plugin.engine.compiled import tally_line
from bench_args import at_least, each_at_least, opened, output_file, run_or_exit, task_name


def _cli_knows(flag: str) -> bool:
    done = subprocess.run([sys.executable, "-m", "raise_plugin.cli", "run", "--help"], capture_output=True, text=True)
    return flag in done.stdout


def _run(args, out: Path, early_reject: str | None, jit: bool | None, cores: str | None) -> dict:
    cmd = [sys.executable, "-m", "raise_plugin.cli", "run", "--task", args.task, "--budget", str(args.budget),
           "--seed", str(args.seed), "--out", str(out), "--no-progress"]
    if early_reject is not None:
        cmd += ["--early-reject" if early_reject == "on" else "--no-early-reject"]
    if jit is not None:
        cmd += ["--jit" if jit else "--no-jit"]
    if cores is not None:
        cmd += ["--executor", f"process:{cores}"]
    cmd += args.extra
    start = time.perf_counter()
    run_or_exit(cmd, stdout=subprocess.DEVNULL)
    return _figures(out, early_reject, jit, cores, time.perf_counter() - start)


def _figures(out: Path, early_reject, jit, cores, seconds: float) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    populations = [json.loads(line) for line in (out / "population.jsonl").read_text().splitlines() if line.strip()]
    final = [(m["program_id"], m["score"]) for m in populations[-1]["members"]] if populations else []
    c = summary.get("compute") or {}
    samples = max(1, int(summary.get("samples") or 0))
    return {
        "early_reject": early_reject, "jit": jit, "cores": cores, "out": str(out), "wall_seconds": seconds,
        "samples": summary.get("samples"), "best": (summary.get("best") or {}).get("program_id"),
        "best_score": (summary.get("best") or {}).get("robust_score"), "final_population": final,
        "outer": c.get("outer_evaluations"), "inner": c.get("inner_evaluations"),
        "rescore": c.get("rescore_evaluations"), "total": c.get("total_evaluations"),
        "rejected_early": c.get("rejected_early", 0), "evaluations_saved": c.get("evaluations_saved", 0),
        "rejected_share": c.get("rejected_early", 0) / samples, "early_rejection": summary.get("early_rejection"),
        "compiled": _compiled(out),
        "seconds_per_sample": seconds / samples,
    }


def _compiled(out: Path) -> dict:
    """What the compiled path reported (``compiled.json``, written by a run with ``--jit``)."""
    path = out / "compiled.json"
    return json.loads(path.read_text()) if path.exists() else {}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=task_name, default="obp")
    parser.add_argument("--budget", type=at_least(1), default=1000)
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--jit", action="store_true", help="also with and without --jit")
    parser.add_argument("--cores", type=each_at_least(1),
                        help="comma-separated worker counts for --executor process:N, e.g. 1,2 "
                             "(default: the CLI's default executor)")
    parser.add_argument("--early-reject", choices=("both", "on", "off"), default="both")
    parser.add_argument("--out", help="directory for the runs (default: a temporary one)")
    parser.add_argument("--json", type=output_file, help="write the figures to this file")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="after --: more flags for every run")
    args = parser.parse_args(argv)
    args.extra = [a for a in args.extra if a != "--"]

    early = [None]
    if _cli_knows("--early-reject"):
        early = ["on", "off"] if args.early_reject == "both" else [args.early_reject]
    else:
        print("note: this CLI has no --early-reject; runs use its default", file=sys.stderr)
    jits = [None]
    if args.jit:
        if _cli_knows("--jit"):
            jits = [False, True]
        else:
            print("note: this CLI has no --jit; skipped", file=sys.stderr)
    cores = [str(c) for c in args.cores] if args.cores else [None]

    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="paper-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for e, j, c in itertools.product(early, jits, cores):
        name = f"er-{e or 'default'}_jit-{'default' if j is None else ('on' if j else 'off')}_cores-{c or 'default'}"
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.append(_run(args, root / name, e, j, c))
        r = rows[-1]
        print(f"{name:44s} {r['wall_seconds']:8.1f} s  {r['seconds_per_sample']:.3f} s/sample  "
              f"outer {r['outer']}  inner {r['inner']}  rescore {r['rescore']}  "
              f"rejected early {r['rejected_early']} ({100 * r['rejected_share']:.1f} % of samples), "
              f"{r['evaluations_saved']} evaluations saved"
              + (f"  compiled path: {tally_line(r['compiled'])}" if r["compiled"] else ""), flush=True)
    said = {str(r["early_rejection"]) for r in rows if r["early_rejection"]}
    for line in sorted(said):
        print(f"early rejection: {line}")
    same = all(r["best"] == rows[0]["best"] and r["final_population"] == rows[0]["final_population"] for r in rows)
    print(f"same best program and final population in every variant: {'yes' if same else 'NO'} "
          f"(best {rows[0]['best']}, robust score {rows[0]['best_score']})")
    if args.json:
        with opened(args.json) as fh:
            fh.write(json.dumps({"task": args.task, "budget": args.budget, "seed": args.seed, "same_result": same,
                                 "runs": rows}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
