"""Dask's own lines off the console: a Dask executor's process sends them where its other lines go, and the
workers of a LocalCluster it starts, which share its console, say neither theirs nor the sandbox's note."""
from __future__ import annotations

import logging
import subprocess
import sys
import warnings

import pytest

from raise_plugin.engine.executors import DaskExecutor


def _what_the_worker_says():
    from raise_plugin.errors import SandboxNote

    on_console = [type(h).__name__ for h in logging.getLogger("distributed").handlers
                  if type(h) is logging.StreamHandler]
    with warnings.catch_warnings(record=True) as said:
        warnings.warn("a note", SandboxNote)  # as the sandbox's pool says it, under the filters the worker has
    return on_console, len(said)


def test_dask_lines_go_where_the_process_lines_go_not_to_the_console(tmp_path):
    """A worker restarted, a client reconnecting (with its tracebacks): distributed's own handler printed them
    on the console of compare and evaluate, which say in their own lines what failed. (In a process of its
    own: distributed gives its loggers no handler where the root logger has one, as under pytest.)"""
    pytest.importorskip("distributed")
    script = """if True:
        import logging
        import distributed  # which gives its loggers a handler to stderr, as the root logger has none yet
        from raise_plugin.engine.executors import DaskExecutor

        logging.basicConfig(filename=r"%s", format="%%(name)s - %%(message)s")  # this process's own log
        with DaskExecutor("local", workers=1, processes=False):
            logging.getLogger("distributed.nanny").warning("Restarting worker")
            logging.getLogger("distributed.client").error("Failed to reconnect to scheduler after 10.00 seconds")
    """ % (tmp_path / "log.txt")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    said = (tmp_path / "log.txt").read_text().splitlines()
    assert {"distributed.nanny - Restarting worker",
            "distributed.client - Failed to reconnect to scheduler after 10.00 seconds"} <= set(said), said


def test_the_workers_of_a_local_cluster_keep_off_the_console_they_share():
    """Each worker of `evaluate --executor dask://local:2` said the sandbox's note again, as Python's
    two-line warning, after the command had said it; and Dask's lines from them reached the console."""
    pytest.importorskip("distributed")
    with DaskExecutor("local", workers=1) as dask:
        assert list(dask.client.run(_what_the_worker_says).values()) == [([], 0)]
