"""The run directory: an append-only, crash-safe record of a run, and its reader for resume.

    RUN_DIR/
      config.json             the RunConfig (written once)
      samples.jsonl           one line per sample: program, score, per-instance metrics, instance-set version
      scores.jsonl            one line per program re-scored after the instance set changed
      population.jsonl        one line per generation: members and scores right after survival
      instances/index.jsonl   one line per instance (origin, distance, provenance) and per set version
      instances/<id>.npz      each instance's arrays
      checkpoint.json         generation, instance set, callback states, selection RNG (after each generation)
      summary.json            samples, generations, refreshes, best program, instance set, LLM usage
      llm_usage.json          the LLM back-end's ledger, when it keeps one
      host/                   the host's own EoHProfiler logs (CLI runs)
      lock                    the writer's advisory lock (fcntl.flock) and who holds it

Every JSONL line is flushed and fsync'd before the run goes on; JSON files are replaced
atomically. A line cut short by a kill is ignored on reading and cut off before appending;
a write the disk refuses (full, read-only) leaves its file as it was and stops the run in one
line (``durable.WriteFailed``).

One module per job: ``files`` (JSON-safe values, atomic JSON, JSONL lines, instance
archives), ``lock`` (``RunLock``: one writing process per directory), ``writer``
(``RunDirectory``, the recorder a run writes to), ``reader`` (``RunLog``, everything read back
for resume) and ``repair`` (each record checked; damaged ones dropped or rebuilt, each repair
reported in one line).
"""
