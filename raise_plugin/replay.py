"""A recorded run replayed from its run directory: its settings, read once from its ``config.json``,
with those given here over them, its answers replayed, and the line that says what the replay took."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .config import ConfigError, RunConfig, check_names
from .errors import UserError
from .instance_seeds import resolve_instance_seed
from .llm.record import ReplayLLM
from .llm.recording import Recording, read_recording, run_directory_of
from .resolve import recorded_settings, robust_defaults
from .rundir.files import RunDirectoryDamaged
from .rundir.reader import load_config, load_summary
from .settings import default

__all__ = ["RecordedRun", "replaying", "ends_as_recorded", "NOT_REPLAYED"]

# settings a replay of a run directory does not take from the recorded run
NOT_REPLAYED = ("llm", "out", "record", "base_url")


@dataclass(frozen=True)
class RecordedRun:
    """A run directory to replay: where it is, the settings its ``config.json`` records (with
    those it left unset made explicit, ``recorded_settings``) and its journal of answers."""

    directory: Path
    settings: Mapping[str, Any]
    recording: Recording

    @classmethod
    def read(cls, run_dir: str | Path) -> "RecordedRun":
        """The run recorded in ``run_dir``; one line (``ConfigError``) when it is not a run directory
        with a journal of answers, or its ``config.json`` cannot be read."""
        source = Path(run_dir)
        try:  # one line when it is neither a run directory nor holds a journal of answers, or a line is none
            recording = read_recording(source)
        except UserError as exc:
            raise ConfigError(str(exc)) from None
        if run_directory_of(source) is None:
            raise ConfigError(f"replaying {source}: not a run directory (a --record file replays with "
                              f"llm='replay:{source}' and the recorded run's settings given again)")
        try:
            settings = recorded_settings(load_config(source, whole=True))
        except RunDirectoryDamaged as exc:
            raise ConfigError(f"replaying {source}: {exc}") from None
        return cls(source, MappingProxyType(settings), recording)

    def config(self, **overrides) -> RunConfig:
        """The recorded run again: its settings with ``overrides`` (not ``None``) over them, and its
        recorded answers replayed (``llm`` is ``replay:`` and the directory's absolute path). With one
        sampler it reproduces the run: the same prompts, samples and scores. Not taken from the
        recording: ``out`` (the run's own directory; give a new one, else the default), ``record``
        (the recorded run's file is not appended to) and ``base_url`` (no endpoint is called)."""
        check_names(overrides, f"replaying {self.directory}, the settings given")
        if overrides.get("llm") is not None:
            raise ConfigError(f"replaying {self.directory}: its llm is the replay of its answers, not "
                              f"{overrides['llm']!r}")
        data = {k: v for k, v in self.settings.items() if k not in NOT_REPLAYED}
        data["llm"] = f"replay:{self.directory.resolve()}"
        data.update({k: v for k, v in overrides.items() if v is not None})
        return RunConfig.from_dict(data, source=str(self.directory / "config.json"))

    def line(self, config: RunConfig) -> str:
        """One line saying what the replay ``config`` takes from this run: the recorded settings (task,
        method, robust or plain, seed, budget, and those not at their defaults), those given here
        instead, and how many answers it replays."""
        mine = config.to_dict()
        usual = {**{n: default(n) for n in mine}, **robust_defaults(config.task),  # the default seed, as it resolves
                 "instance_seed": resolve_instance_seed(default("instance_seed"), config.task, config.seed)}
        names = [n for n in mine if n not in NOT_REPLAYED and n in self.settings]
        kept = [_words(n, mine[n]) for n in names if self.settings[n] == mine[n]
                and (n in ("task", "method", "robust", "seed", "budget") or mine[n] != usual.get(n))]
        given = [f"{_words(n, mine[n])} (recorded {_value(n, self.settings[n])})" for n in names
                 if self.settings[n] != mine[n]]
        answers = len(self.recording.answers)
        return (f"replaying {self.directory.resolve()}: its settings ({', '.join(kept)}) and its {answers} recorded answers"
                + (f"; given here: {', '.join(given)}" if given else ""))


def ends_as_recorded(llm) -> None:
    """Tell a replay of a run directory (``llm``, or the back-end it records) the failure its run
    ended on, read from its ``summary.json``: where its answers end, the replay ends on it too
    (``ReplayLLM.failed_there``); a run that stopped cleanly, or has not ended, leaves it unset."""
    replay = llm if isinstance(llm, ReplayLLM) else getattr(llm, "inner", None)
    if not isinstance(replay, ReplayLLM) or replay.run_dir is None:
        return
    try:
        summary = load_summary(replay.run_dir) or {}
    except RunDirectoryDamaged:
        return  # a damaged summary says nothing of how the run ended: the replay ends as one that stopped
    replay.failed_there = summary.get("failure") or None


def replaying(run_dir: str | Path, **overrides) -> RunConfig:
    """The run recorded in ``run_dir`` again, from that directory alone (``RecordedRun.config``):
    its settings with ``overrides`` (not ``None``) over them, its recorded answers replayed."""
    return RecordedRun.read(run_dir).config(**overrides)


def _words(name: str, value) -> str:
    """A setting and its value as the replay line says it: ``budget 12``, ``robust``, ``jit off``."""
    return _value(name, value) if name == "robust" else f"{name.replace('_', ' ')} {_value(name, value)}"


def _value(name: str, value) -> str:
    if name == "robust":
        return "robust" if value else "plain"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)
