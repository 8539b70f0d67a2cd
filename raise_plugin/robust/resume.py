"""Checkpoints: what a run saves at every generation end, and how it continues from a run directory."""
from __future__ import annotations

from llm4ad.base import Function, TextFunctionProgramConverter

from ..rundir.files import RunDirectoryDamaged, save_instance
from .hooks import Callback
from .instances import InstanceEntry
from .tags import retag

__all__ = ["Checkpoints", "function_from_record", "state_keys"]


def state_keys(callbacks: list[Callback]) -> list[str]:
    """Checkpoint keys: a callback's ``state_key``, with ``#2``, ``#3``... for later ones sharing it."""
    keys, seen = [], {}
    for cb in callbacks:
        key = cb.state_key
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    return keys


def function_from_record(sample: dict, duplicate: bool = False) -> Function:
    """A host ``Function`` rebuilt from a recorded sample, scored ``-inf`` until re-scored."""
    f = TextFunctionProgramConverter.text_to_function(sample["function"])
    f.algorithm = sample.get("algorithm") or ""
    f.score = float("-inf")
    rejected = None
    if sample.get("rejected") and sample.get("score") is not None:  # stopped early: kept so on its set
        rejected = (int(sample["instance_set"]), float(sample["score"]))
    # the docstring as registered (a prompt may clear it: see PopulationShape)
    retag(f, key=sample["program"], duplicate=duplicate, rejected=rejected, docstring=f.docstring)
    return f


class Checkpoints:
    _callbacks_taken = False  # whether this run has reset its callbacks (``take_callbacks``)

    def take_callbacks(self) -> None:
        """The first time this run uses its callbacks (``restore``, or ``run``'s start): each forgets what an
        earlier run left in it (``Callback.reset``), so a callback shared by runs, or given again, starts
        each as a new one does; a resumed run then restores their states."""
        if not self._callbacks_taken:
            self._callbacks_taken = True
            for cb in self.callbacks:
                cb.reset()

    def state_dict(self) -> dict:
        """Checkpoint: generation, samples, instance set, callback states and the selection RNG."""
        entries, version = self._instances.state()
        state = {
            "generation": self.generation,
            "samples": self.samples,
            "instance_set_version": version,
            "instance_set": [e.instance_id for e in entries],
            "refreshes": self._refreshes,
            "compute": self.compute(),
            "rng": self._rng_state(),
            "callbacks": {key: cb.state_dict() for key, cb in self._checkpointed()},
            # the wrapped method's own state (ReEvo's reflections, PartEvo's niches, ...)
            "method": super().state_dict() if hasattr(super(), "state_dict") else None,
        }
        if state["rng"] is None:
            del state["rng"]
        return state

    def restore(self, log) -> None:
        """Continue from a run directory's records (``raise_plugin.rundir.reader.RunLog``), before ``run``.

        The instance set, callback states and selection RNG come from the last checkpoint;
        the members from the last generation record, plus every sample registered after it
        as pending; per-instance metrics from every sample and re-score line. Members are
        then scored on the restored set (evaluating what a kill left missing). When a
        generation ended after the last checkpoint, its ``on_generation_end`` fires again at
        the start of ``run`` (the adversarial callback skips refreshes it already made).
        """
        self.take_callbacks()
        ckpt = log.checkpoint or {}
        built = {e.instance_id: e for e in self._instances.state()[0]}  # the nominal set, built afresh
        nominal_ids = log.sets[0]["members"] if log.sets else list(built)
        ids = ckpt.get("instance_set") or nominal_ids
        entries = [self._recorded_entry(log, i, built) for i in ids]
        by_id = {e.instance_id: e for e in entries}
        self._instances.restore(entries, int(ckpt.get("instance_set_version", 0)),
                                [(by_id.get(i) or self._recorded_entry(log, i, built)).instance for i in nominal_ids])
        self._refreshes = int(ckpt.get("refreshes", 0))
        # the latest record of the work: the checkpoint, the last sample, or the summary (written at refreshes)
        summary = log.summary if isinstance(log.summary, dict) else {}
        self.restore_work(ckpt.get("compute"), log.samples[-1].get("work") if log.samples else None,
                          summary.get("compute") if isinstance(summary.get("compute"), dict) else None,
                          {k: summary.get(k) for k in ("evaluations", "evaluation_calls", "stale_samples_reevaluated")})
        first = self._restore_book(log)

        last = log.populations[-1] if log.populations else {"generation": 0, "samples": 0, "members": []}
        members, seen = [], set()
        for m in last["members"]:
            members.append(function_from_record(first[m["program_id"]], m["program_id"] in seen))
            seen.add(m["program_id"])
        pending = [function_from_record(s, bool(s.get("duplicate"))) for s in log.samples
                   if s["sample"] > last["samples"] and s.get("joined")]
        n = len(log.samples)
        for sample in log.samples:
            self.count_sampled(sample["program_id"])
        self._restore_members(members, pending, int(last["generation"]), n)
        self._tot_sample_nums = n
        profiler = self._profiler
        if profiler is not None:
            type(profiler)._num_samples = n
            if hasattr(type(profiler), "_cur_gen"):
                type(profiler)._cur_gen = self.generation
        self._rescore(entries)
        self._restore_generation_end()
        if ckpt.get("rng") is not None:
            self._method_state(log, self._set_rng_state, ckpt["rng"])
        states = ckpt.get("callbacks", {})
        for key, cb in self._checkpointed():
            if key in states:
                cb.load_state_dict(states[key])
            else:  # no checkpoint yet, or one rebuilt from the records: what they say of it
                cb.state_from_records(log, int(last["generation"]))
        if ckpt.get("method") is not None and hasattr(super(), "load_state_dict"):
            self._method_state(log, super().load_state_dict, ckpt["method"])
        if self.generation > int(ckpt.get("generation", 0)):
            self._catch_up = [self.snapshot()]
        if self._resume_mode_after_restore():
            self._resume_mode = True
        # one sampler in the EoH family: continue exactly after the last sample, the calls answered
        # after it served again from the journal; otherwise every answered call primes the back-end
        cursor = (log.samples[-1].get("cursor") or {}) if log.samples else {}
        exact = "loop" in cursor or not log.samples
        if self._llm_guard is not None:
            self._llm_guard.resume(int(cursor.get("llm_calls", 0)) if exact else None)
        if "loop" in cursor:
            self._resume_at(cursor)

    @staticmethod
    def _method_state(log, load, state) -> None:
        """``load(state)``, a part of the method's own state in the checkpoint, whose shape is the method's: one
        that cannot be read is refused in one line naming the file (a guess could sample what was sampled)."""
        try:
            load(state)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise RunDirectoryDamaged(f"{log.path / 'checkpoint.json'} is damaged (the method's state cannot be read: "
                                      f"{type(exc).__name__}: {exc}); restore it from a copy, or remove it to resume "
                                      "from the records, the random states starting afresh") from None

    @staticmethod
    def _recorded_entry(log, iid: str, built: dict[str, InstanceEntry]) -> InstanceEntry:
        """Instance ``iid`` as the run directory recorded it. A nominal instance is named by its
        content's digest, so one the directory lost (a kill before the index was written, an
        emptied index, a damaged file) is the one built afresh, written back; an adversarial one
        cannot be rebuilt, and its loss is one line naming the file."""
        meta = log.instances.get(iid)
        if meta is None and iid in built:
            return built[iid]
        if meta is None:
            raise RunDirectoryDamaged(f"{log.path / 'instances' / 'index.jsonl'}: instance {iid}, in the "
                                      "recorded instance set, is not listed; it cannot be rebuilt")
        try:
            instance = log.instance(iid)
        except RunDirectoryDamaged:
            if iid not in built:
                raise
            save_instance(log.path / "instances" / meta["file"], built[iid].instance)
            log.repaired(f"instances/{meta['file']} is damaged; the nominal instance {iid}, rebuilt, written "
                         "again")
            instance = built[iid].instance
        return InstanceEntry(iid, meta["origin"], instance, float(meta.get("distance") or 0.0),
                             meta.get("generation"), dict(meta.get("provenance") or {}))

    def _checkpointed(self) -> list:
        """``(key, callback)`` for the callbacks whose state goes into checkpoints."""
        kept = [cb for cb in self.callbacks if cb.checkpointed]
        return list(zip(state_keys(kept), kept))

    def _restore_book(self, log) -> dict[str, dict]:
        """Per-instance metrics from every sample and re-score line; the first sample of each program."""
        def store(rec, line):
            metrics = {k: v for k, v in (line.get("metrics") or {}).items() if v is not None}
            metrics.update({k: None for k in line.get("failed_on") or []})
            self._book.store(rec, metrics, line.get("error"), bool(line.get("broken")))

        first: dict[str, dict] = {}
        for s in log.samples:
            store(self._book.record(s["program"]), s)
            first.setdefault(s["program_id"], s)
        for line in log.scores:
            rec = self._book.get(line["program_id"])
            if rec is not None:
                store(rec, line)
        return first
