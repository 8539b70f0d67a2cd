"""Whatever the endpoint does, ``raise-ahd run`` ends: bounded time, exit status, one-line reason,
and a ledger whose request count equals the requests the endpoint received.

Each case runs the CLI in this process against the misbehaving server (``chat_server.py``) on
127.0.0.1, with a 6-sample plain run as a new user would start it. The misbehaviours record the
back-off waits between attempts rather than sleep through them (the back-off's schedule is
checked there); the unreachable endpoints wait for real, since their bound in seconds is what
they check.
"""
from __future__ import annotations

import json
import re
import socket
import time

import pytest

from raise_plugin.cli import main
from raise_plugin.llm import OfflineSampler, OpenAIBackend

ENDPOINT_FAILED = 3


def offline_answers(task="ovrp"):
    """A model that answers with real programs: the offline sampler behind the HTTP endpoint."""
    sampler = OfflineSampler(seed=0, task=task)
    return lambda prompt: sampler.draw_sample(prompt)


def run_cli(tmp_path, base_url, *flags, budget=6, model="test-model", monkeypatch=None):
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    start = time.monotonic()
    code = main(["run", "--task", "ovrp", "--no-robust", "--budget", str(budget), "--pop-size", "4",
                 "--nominal", "1", "--llm", f"openai:{model}", "--out", str(out), "--no-progress",
                 "--no-validation-trace", "--no-host-profiler", *flags])
    return code, time.monotonic() - start, out


def journal(out):
    lines = [json.loads(line) for line in (out / "llm_requests.jsonl").read_text().splitlines()]
    return lines, sum(e["e"] == "sent" for e in lines)


CASES = [  # behaviour, flags, words of the reason, requests the endpoint receives
    ("500", [], "HTTP 500", 10),
    ("429", [], "rate-limited", 10),
    ("malformed", [], "not JSON", 10),
    ("prose", [], "without a usable program", 10),
    ("wrong", [], "without a usable program", 10),
    ("empty", [], "an empty answer", 10),
    ("none", [], "an empty answer", 10),
    ("nochoices", [], "no choices", 10),
    ("cut", [], "stopped mid-way", 10),
    ("context", [], "longer than the model's context", 10),
    ("hang", ["--llm-timeout", "0.25"], "no answer within 0.25 s", 10),
    ("endless", ["--llm-timeout", "0.25"], "did not end within 0.25 s", 10),
    ("length", ["--max-tokens", "30"], "without a usable program", 10),
    ("401", [], "refused the API key", 1),
    ("404", [], "not found", 1),
]


@pytest.mark.parametrize("behaviour, flags, words, requests", CASES, ids=[c[0] for c in CASES])
def test_a_misbehaving_endpoint_ends_the_run_with_one_line_and_every_request_counted(
        tmp_path, monkeypatch, capsys, behaviour, flags, words, requests):
    from llm_chat_server import ChatServer

    waits = []  # the back-off between attempts, recorded: every wait the backend asks for, in order
    monkeypatch.setitem(OpenAIBackend.__init__.__kwdefaults__, "sleep", waits.append)
    with ChatServer(answer=offline_answers()) as server:
        server.default = behaviour
        code, seconds, out = run_cli(tmp_path, server.base_url, *flags, monkeypatch=monkeypatch)
        received = len(server.requests)
        caps = server.max_tokens_seen
    err = capsys.readouterr().err
    assert code == ENDPOINT_FAILED and seconds < 60
    last = err.strip().splitlines()[-1]
    assert last.startswith("raise-ahd: error: the run stopped: ") and words in last
    assert "Traceback" not in err
    assert received == requests
    events, sent = journal(out)
    assert sent == received  # the ledger counts what the endpoint received
    summary = json.loads((out / "summary.json").read_text())
    usage = json.loads((out / "llm_usage.json").read_text())
    assert summary["failure"] and summary["samples"] == 0
    assert usage["total"]["requests"] == received == usage["total"]["calls"] + usage["total"]["retries"]
    # one wait before each retry, none after the last request: the server's Retry-After, else the
    # back-off's min(8, 0.5 * 2**attempt) jittered by 0.5 to 1
    assert len(waits) == usage["total"]["retries"]
    assert set(waits) == {0.01} if behaviour == "429" else all(0.25 <= w <= 8.0 for w in waits), waits
    assert sum(usage["failures_by_kind"].values()) >= 1
    # every call ends one way: an answer, or a failure (the bound reached between its attempts ends it too)
    answered = sum(e["e"] == "done" and e["kind"] in ("ok", "length") for e in events)
    assert usage["total"]["calls"] == answered + usage["total"]["failures"] >= 1
    if behaviour == "length":
        assert caps == [30] * received  # the completion-token cap reaches the endpoint


def test_a_closed_port_fails_within_30_seconds_naming_the_endpoint(tmp_path, monkeypatch, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, seconds, out = run_cli(tmp_path, f"http://127.0.0.1:{port}/v1", monkeypatch=monkeypatch)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == ENDPOINT_FAILED and seconds < 30
    assert f"cannot reach the LLM at http://127.0.0.1:{port}/v1" in last and "connection failed" in last
    assert journal(out)[1] == 4  # one call's attempts, then the run stops


def test_a_wrong_host_fails_within_30_seconds(tmp_path, monkeypatch, capsys):
    code, seconds, _ = run_cli(tmp_path, "http://no-such-host.invalid/v1", monkeypatch=monkeypatch)
    assert code == ENDPOINT_FAILED and seconds < 30
    assert "cannot reach the LLM at http://no-such-host.invalid/v1" in capsys.readouterr().err


def test_the_failure_bound_is_configurable(tmp_path, monkeypatch, capsys):
    from llm_chat_server import ChatServer

    with ChatServer() as server:
        server.default = "prose"
        code, _, out = run_cli(tmp_path, server.base_url, "--max-failed-requests", "3", monkeypatch=monkeypatch)
        assert code == ENDPOINT_FAILED and len(server.requests) == 3
        assert "3 LLM requests in a row gave no usable program" in capsys.readouterr().err
        # a resumed run knows the streak from its journal: the same bound stops it before any request
        assert main(["resume", str(out), "--no-progress"]) == ENDPOINT_FAILED and len(server.requests) == 3
        assert main(["resume", str(out), "--max-failed-requests", "5", "--no-progress"]) == ENDPOINT_FAILED
        assert len(server.requests) == 5 and journal(out)[1] == 5
    assert "5 LLM requests in a row gave no usable program" in capsys.readouterr().err


def test_a_run_resumed_on_another_endpoint_does_not_carry_the_failures_of_the_first(tmp_path, monkeypatch, capsys):
    # before, the resume sent nothing and said the new endpoint's requests had failed
    from llm_chat_server import ChatServer

    with ChatServer() as failing, ChatServer(answer=offline_answers()) as healthy:
        failing.default = "500"
        code, _, out = run_cli(tmp_path, failing.base_url, "--max-failed-requests", "3", monkeypatch=monkeypatch)
        assert code == ENDPOINT_FAILED and len(failing.requests) == 3
        assert main(["resume", str(out), "--base-url", healthy.base_url, "--no-progress"]) == 0
        received = len(failing.requests) + len(healthy.requests)
        assert len(healthy.requests) == 6 and len(failing.requests) == 3
    usage = json.loads((out / "llm_usage.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] and summary["samples"] == 6
    assert usage["total"]["requests"] == received == journal(out)[1]
    assert [e["at"] for e in journal(out)[0] if e["e"] == "endpoint"] == [failing.base_url, healthy.base_url]


def test_a_cap_reached_while_the_endpoint_is_dead_says_the_requests_failed(tmp_path, monkeypatch, capsys):
    # a resume onto an endpoint that is down spent its raised cap on failed requests and said only
    # "the cap is reached", as a clean stop says it
    from llm_chat_server import ChatServer

    with ChatServer(answer=offline_answers()) as server:
        code, _, out = run_cli(tmp_path, server.base_url, "--max-llm-calls", "2", monkeypatch=monkeypatch)
        assert code == 0 and len(server.requests) == 2
    with socket.socket() as s:  # the server is gone; nobody listens on a fresh port either
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    monkeypatch.setitem(OpenAIBackend.__init__.__kwdefaults__, "sleep", lambda seconds: None)
    capsys.readouterr()
    assert main(["resume", str(out), "--max-llm-calls", "4", "--base-url", dead, "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert "the cap of 4 LLM requests is reached (4 sent, retries included; the last 2 in a row gave no usable " \
           "program, the last: " in summary["stopped"] and not summary["finished"]
    assert "the last 2 in a row gave no usable program" in capsys.readouterr().out


def test_a_replay_of_a_run_that_failed_on_its_endpoint_ends_as_it_did(tmp_path, monkeypatch, capsys):
    # the replay said "all answers replayed" and exited 0: the failed requests are in no journal of answers
    from llm_chat_server import ChatServer

    monkeypatch.setitem(OpenAIBackend.__init__.__kwdefaults__, "sleep", lambda seconds: None)
    with ChatServer(answer=offline_answers()) as server:
        server.default = "500"
        server.script("ok", "ok", "ok")
        code, _, out = run_cli(tmp_path, server.base_url, "--max-failed-requests", "3", monkeypatch=monkeypatch)
    assert code == ENDPOINT_FAILED
    failure = json.loads((out / "summary.json").read_text())["failure"]
    capsys.readouterr()
    assert main(["run", "--llm", f"replay:{out}", "--out", str(tmp_path / "again"), "--no-progress"]) == ENDPOINT_FAILED
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("raise-ahd: error: the run stopped: ") and "all 3 recorded answers are replayed" in last
    assert f"the recorded run failed there ({failure})" in last
    again = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert again["samples"] == json.loads((out / "summary.json").read_text())["samples"] and again["failure"]


def test_unusable_answers_between_usable_ones_count_but_the_run_finishes(tmp_path, monkeypatch, capsys):
    from llm_chat_server import ChatServer

    with ChatServer(answer=offline_answers()) as server:
        server.script("prose", "ok", "wrong", "ok", "500", "ok", "nochoices", "ok", "ok", "ok")
        code, _, out = run_cli(tmp_path, server.base_url, monkeypatch=monkeypatch)
        received = len(server.requests)
    assert code == 0
    usage = json.loads((out / "llm_usage.json").read_text())
    assert usage["total"]["requests"] == received
    assert usage["total"]["unusable"] == 2 and usage["failures_by_kind"]["unusable"] == 2
    assert usage["failures_by_kind"]["http_500"] == 1 and usage["failures_by_kind"]["no_choices"] == 1
    printed = capsys.readouterr().out
    assert "failure events by kind:" in printed and "unusable 2" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 6 and summary["finished"] and summary["failure"] is None


@pytest.mark.parametrize("retry_after", ["soon", "Thu, 99 Foo 2026 25:61:00 GMT"])
def test_a_rate_limit_asking_no_time_we_can_read_is_backed_off_as_one_asking_none(tmp_path, monkeypatch, capsys,
                                                                                   retry_after):
    # a Retry-After neither seconds nor an HTTP date made the request raise past its ledger: the run
    # then asked again at once, without end, none of it counted as a failure
    from llm_chat_server import ChatServer

    waits = []
    monkeypatch.setitem(OpenAIBackend.__init__.__kwdefaults__, "sleep", waits.append)
    with ChatServer(answer=offline_answers(), retry_after=retry_after) as server:
        server.script("429", "429", "ok")
        code, _, out = run_cli(tmp_path, server.base_url, monkeypatch=monkeypatch)
        received = len(server.requests)
    assert code == 0, capsys.readouterr().err
    usage = json.loads((out / "llm_usage.json").read_text())
    assert received == 8 and usage["total"]["requests"] == journal(out)[1] == received
    assert usage["total"]["retries"] == 2 and usage["failures_by_kind"] == {"rate_limited": 2}
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0 and len(waits) == 2  # the back-off's own


def test_a_request_that_raises_in_the_client_is_a_counted_failure_and_the_bound_ends_the_run(tmp_path, monkeypatch,
                                                                                              capsys):
    from llm_chat_server import ChatServer
    from raise_plugin.llm import openai_request

    def broken(body, status):
        raise RuntimeError("a fault in reading the answer")

    monkeypatch.setattr(openai_request, "_parse", broken)
    with ChatServer(answer=offline_answers()) as server:
        code, seconds, out = run_cli(tmp_path, server.base_url, monkeypatch=monkeypatch)
        received = len(server.requests)
    err = capsys.readouterr().err
    assert code == ENDPOINT_FAILED and received == 10 and journal(out)[1] == received
    assert "the request failed in the client (RuntimeError: a fault in reading the answer)" in err.splitlines()[-1]
    assert json.loads((out / "llm_usage.json").read_text())["failures_by_kind"] == {"client_error": 10}


@pytest.mark.parametrize("cap", [1, 5])
def test_max_llm_calls_caps_the_requests_the_endpoint_receives_retries_included(tmp_path, monkeypatch, capsys,
                                                                                cap):
    from llm_chat_server import ChatServer

    with ChatServer(answer=offline_answers()) as server:
        server.script("500", "ok", "429", "ok", "ok", "ok", "ok", "ok")
        code, _, out = run_cli(tmp_path, server.base_url, "--max-llm-calls", str(cap), monkeypatch=monkeypatch)
        received = len(server.requests)
    assert code == 0 and received == cap  # a cap reached is a clean stop, resumable
    assert journal(out)[1] == cap
    summary = json.loads((out / "summary.json").read_text())
    assert f"the cap of {cap} LLM requests is reached" in summary["stopped"] and summary["failure"] is None
    assert f"stopped early   the cap of {cap} LLM requests" in capsys.readouterr().out


def test_a_cost_cap_needs_a_price(tmp_path, monkeypatch, capsys):
    from llm_chat_server import ChatServer

    with ChatServer(answer=offline_answers()) as server:
        code, _, _ = run_cli(tmp_path, server.base_url, "--max-cost-usd", "0.001", monkeypatch=monkeypatch)
        assert code == 2 and not server.requests
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "has no known price" in err and "--price test-model=" in err
        # a resume keeps the run's prices (resume takes no --price): it is told what it can cap instead
        code, _, unpriced = run_cli(tmp_path / "unpriced", server.base_url, "--max-llm-calls", "2",
                                    monkeypatch=monkeypatch)
        assert code == 0 and len(server.requests) == 2
        assert main(["resume", str(unpriced), "--max-cost-usd", "0.001", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]  # after the sandbox's note, where it gives one
        assert err.startswith("raise-ahd: ") and "has no known price" in err and "--max-llm-calls" in err
        assert len(server.requests) == 2
        code, _, out = run_cli(tmp_path / "priced", server.base_url, "--max-cost-usd", "0.0001",
                               "--price", "test-model=10,10", monkeypatch=monkeypatch)
        received = len(server.requests) - 2  # after the unpriced run's two
    assert code == 0
    usage = json.loads((out / "llm_usage.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert "cost cap of $0.0001 is reached" in summary["stopped"]
    # no request starts once the cap is reached: the spend passes it by the last answer at most
    assert usage["total"]["requests"] == received and usage["total"]["cost_usd"] >= 0.0001
    assert usage["total"]["cost_usd"] - 0.0001 < usage["total"]["cost_usd"] / received + 1e-12


def test_a_replay_that_misses_a_prompt_stops_with_one_line_naming_it(tmp_path, monkeypatch, capsys):
    recorded = tmp_path / "recorded"
    assert main(["run", "--task", "ovrp", "--budget", "6", "--pop-size", "4", "--nominal", "1", "--out",
                 str(recorded), "--no-progress", "--no-validation-trace", "--no-host-profiler",
                 "--allow-no-refresh"]) == 0
    start = time.monotonic()
    code = main(["run", "--task", "ovrp", "--budget", "6", "--pop-size", "4", "--nominal", "1", "--seed", "5",
                 "--llm", f"replay:{recorded / 'llm_calls.jsonl'}", "--out", str(tmp_path / "replayed"),
                 "--no-progress", "--no-validation-trace", "--no-host-profiler", "--allow-no-refresh"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == ENDPOINT_FAILED and time.monotonic() - start < 60
    # the initial prompts have no parents, so the seed changes the first e1 prompt: the first miss
    assert re.search(r"replay .*llm_calls.jsonl: prompt [0-9a-f]{16} \(e1\) is not in the recording: this run asks "
                     r"prompts the recorded one did not \(were the recorded run's settings given again\? --llm "
                     rf"replay:{re.escape(str(recorded))} takes them from its run directory\)$", last)


def test_a_slow_endpoint_is_waited_for_and_the_run_says_so(caplog):
    from llm_chat_server import ChatServer
    from raise_plugin.llm import OpenAIBackend

    with ChatServer(slow_seconds=0.6) as server:
        server.default = "slow"
        llm = OpenAIBackend("m", base_url=server.base_url, api_key="k", timeout=5, wait_notice=0.2)
        with caplog.at_level("WARNING", logger="raise_plugin.llm"):
            assert llm.draw_sample("hello").startswith("echo")
    assert any("waiting for the LLM at " + server.base_url in r.getMessage() for r in caplog.records)
    assert llm.usage.total().seconds >= 0.6


def test_a_run_watched_at_a_terminal_says_it_waits_for_the_endpoint_and_backs_off(tmp_path, monkeypatch, capsys):
    # the host's log takes every logged line to RUN_DIR/host alone: the waits were said only there
    from llm_chat_server import ChatServer

    waits = []
    monkeypatch.setitem(OpenAIBackend.__init__.__kwdefaults__, "sleep", waits.append)
    monkeypatch.setitem(OpenAIBackend.__init__.__kwdefaults__, "wait_notice", 0.2)
    with ChatServer(answer=offline_answers(), retry_after="45", slow_seconds=0.6) as server:
        server.script("429", "slow")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        code = main(["run", "--task", "ovrp", "--no-robust", "--budget", "4", "--pop-size", "4", "--nominal", "1",
                     "--llm", "openai:test-model", "--base-url", server.base_url, "--out", str(tmp_path / "run"),
                     "--no-progress", "--no-validation-trace"])
    err = capsys.readouterr().err
    assert code == 0 and waits == [45.0]
    assert "LLM request failed (rate-limited" in err and "retry 1 in 45.00 s" in err
    assert f"waiting for the LLM at {server.base_url}" in err
    log = (tmp_path / "run" / "host" / "run_log.txt").read_text()
    assert "retry 1 in 45.00 s" in log and "waiting for the LLM" in log  # the host's log keeps them too


def test_an_answer_holding_half_a_character_becomes_a_sample(tmp_path, monkeypatch, capsys):
    # a lone surrogate escaped in the JSON (``\ud800``: a server that cut a character in two) could not be
    # journalled: every answer raised in the run's journal, and the run asked the endpoint again without end
    from llm_chat_server import ChatServer

    offline = offline_answers()
    with ChatServer(answer=lambda prompt: offline(prompt).replace("{", "{\ud800 ", 1)) as server:
        code, _, out = run_cli(tmp_path, server.base_url, "--max-llm-calls", "20", monkeypatch=monkeypatch)
        received = len(server.requests)
    assert code == 0 and "Traceback" not in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] and summary["samples"] == 6 and received == 6
    answers = [json.loads(line)["response"] for line in (out / "llm_calls.jsonl").read_text().splitlines()]
    assert len(answers) == 6 and all(a.startswith("{\ufffd ") for a in answers)
