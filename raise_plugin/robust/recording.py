"""The run directory's writer as a callback: last in the list, so a generation's checkpoint is
written after every other callback (the adversary's refresh among them) has had its say."""
from __future__ import annotations

from ..durable import write_failure
from .hooks import Callback

__all__ = ["RunRecorder"]


class RunRecorder(Callback):
    """Writes a run's records to a ``raise_plugin.rundir.writer.RunDirectory`` as its events fire.

    Once the disk refuses a record (the run then stops), it writes none of the records that follow
    but the summary: a population or checkpoint written after a sample's refused line names a sample
    the run directory does not hold, which a resume took for damage."""

    checkpointed = False

    def __init__(self, directory):
        self.directory = directory
        self._population_generation = -1  # the last generation whose population is recorded
        self.refused = False  # the disk refused a record

    def _record(self, write, *args) -> None:
        """``write(*args)``, unless the disk refused an earlier record."""
        if self.refused:
            return
        try:
            write(*args)
        except Exception as exc:
            self.refused = write_failure(exc) is not None
            raise

    def on_run_start(self, method, snapshot):
        self.directory.log_nominal([e for e in method.instance_entries() if e.origin == "nominal"])
        self._population_generation = self.directory.recorded_generation if snapshot.samples else -1

    def on_sample_evaluated(self, method, snapshot, sample):
        self._record(self.directory.log_sample, sample)

    def on_instances_updated(self, method, snapshot, update):
        self._record(self._log_update, method, snapshot, update)

    def _log_update(self, method, snapshot, update):
        # first: it holds the work done so far (the inner search, the re-scoring), which a resume
        # after a kill in the writes below starts its counters from
        self.directory.write_summary(method.summary())
        entries = method.instance_entries()
        by_id = {e.instance_id: e for e in entries}
        for view in update.added:
            if view.instance_id in by_id:
                self.directory.log_instance(by_id[view.instance_id], dict(update.arrays))
        self.directory.log_instance_set(update.version, entries, snapshot.refreshes)
        self.directory.log_scores(update.version, [(p, method.program_metrics(p.program_id)) for p in update.rescored],
                                  [e.instance_id for e in entries])

    def on_generation_end(self, method, snapshot):
        self._record(self._log_generation, method, snapshot)

    def _log_generation(self, method, snapshot):
        if snapshot.generation > self._population_generation:  # a resumed run's catch-up is recorded already
            self.directory.log_population(snapshot)
            self._population_generation = snapshot.generation
        self.directory.write_checkpoint(method.state_dict())

    def on_run_end(self, method, snapshot):
        self.directory.write_summary(method.summary(finished=method.stop_reason is None))

    def on_exception(self, method, snapshot, exc):
        self.directory.write_summary(method.summary())
