"""What a robustness profile writes: profile.json, profile.md, profile.png and one worst-distribution PNG
per heuristic, each in a file of its own."""
from __future__ import annotations

import json
from pathlib import Path

from raise_plugin.harness.robustness_profile import Profile, plot_profile, plot_worst_distributions
from raise_plugin.rundir.files import jsonable

__all__ = ["save_profile"]


def save_profile(profile: Profile, out: str | Path) -> list[Path]:
    """profile.json, profile.md, profile.png and one worst-distribution PNG per heuristic, each its own file
    (``worst_distributions_a_b.png`` and ``..._a_b_2.png`` for heuristics named ``a b`` and ``a_b``); an earlier
    profile's worst-distribution PNGs in ``out`` that this one does not write are removed."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "profile.json", out / "profile.md", out / "profile.png"]
    (out / "profile.json").write_text(json.dumps(jsonable(profile.to_json()), indent=1))  # invalid: null
    (out / "profile.md").write_text(f"# Robustness profile on {profile.task}\n\n{profile.markdown()}\n")
    plot_profile(profile, out / "profile.png")
    for h, name in zip(profile.heuristics(), _file_names(profile.heuristics())):
        path = out / f"worst_distributions_{name}.png"
        plot_worst_distributions(profile, h, path)
        written.append(path)
    for stale in set(out.glob("worst_distributions_*.png")) - set(written):
        stale.unlink()
    return written


def _file_names(heuristics: list[str]) -> list[str]:
    """A name fit for a file per heuristic, each different (a number added where two would be the same)."""
    names: list[str] = []
    for h in heuristics:
        slug = "".join(c if c.isalnum() or c in "-_" else "_" for c in h)
        name, n = slug, 1
        while name.lower() in {m.lower() for m in names}:  # one file on a case-blind file system too
            n += 1
            name = f"{slug}_{n}"
        names.append(name)
    return names
