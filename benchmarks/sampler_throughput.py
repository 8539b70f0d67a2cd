"""Samples per second against a slow LLM endpoint, by number of sampler threads.

Starts a chat-completions server on 127.0.0.1 that waits ``--delay`` seconds per request
and then answers as the offline program sampler would (so every answer is a valid program),
and runs ``raise-ahd run --llm openai:...`` against it with 1 and with N samplers. Prints
samples per second and the ratio. The evaluation (OVRP by default) is cheap, so the
endpoint's latency is what the sampler threads hide.

    python benchmarks/sampler_throughput.py --samplers 1,8 --delay 1 --budget 48
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_args import at_least, each_at_least, non_negative, run_or_exit, task_name  # noqa: E402


def chat_server_class():
    spec = importlib.util.spec_from_file_location("chat_server", ROOT / "tests" / "llm" / "chat_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ChatServer


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", type=task_name, default="ovrp")
    p.add_argument("--samplers", type=each_at_least(1), default=[1, 8])
    p.add_argument("--delay", type=non_negative, default=1.0, help="seconds the endpoint takes per request")
    p.add_argument("--budget", type=at_least(1), default=48)
    p.add_argument("--pop-size", type=at_least(2), default=8)
    args = p.parse_args(argv)

    from raise_plugin.llm.offline import OfflineSampler
    sampler, lock = OfflineSampler(seed=0, task=args.task), threading.Lock()

    def answer(prompt: str) -> str:
        with lock:
            return sampler.draw_sample(prompt)

    exe = str(Path(sys.executable).with_name("raise-ahd"))
    rates = {}
    with chat_server_class()(answer=answer, delay=args.delay) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-local-benchmark"}
        for n in args.samplers:
            out = Path(tmp) / f"samplers{n}"
            started = time.perf_counter()
            run_or_exit([exe, "run", "--task", args.task, "--no-robust", "--llm", "openai:bench-model",
                         "--budget", str(args.budget), "--pop-size", str(args.pop_size), "--num-samplers", str(n),
                         "--no-validation-trace", "--no-progress", "--out", str(out)], env=env,
                        stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - started
            summary = json.loads((out / "summary.json").read_text())
            seconds = summary["seconds"]  # the run's own clock: process start-up left out
            rates[n] = summary["samples"] / seconds
            print(f"{n} sampler(s): {summary['samples']} samples in {seconds:.1f} s of run ({wall:.1f} s with "
                  f"start-up), {rates[n]:.2f} samples/s, {summary['llm_usage']['total']['calls']} LLM calls",
                  flush=True)
    first = min(rates)
    for n, rate in rates.items():
        if n != first:
            print(f"{n} samplers / {first}: {rate / rates[first]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
