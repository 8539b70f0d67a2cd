"""The endpoint a run calls is recorded: config.json keeps the base URL the run started with (never
the key), and resume calls it whatever the shell's OPENAI_BASE_URL says; a base URL that differs,
given again or in the environment, is said in one line."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from llm_chat_server import ChatServer

from raise_plugin.cli import main
from raise_plugin.config import RunConfig
from raise_plugin.llm import OPENAI_API_URL, OfflineSampler
from raise_plugin.rundir.files import read_jsonl
from raise_plugin.runner import start_run

FLAGS = ["--task", "ovrp", "--no-robust", "--budget", "6", "--pop-size", "2", "--nominal", "1", "--seed", "0",
         "--no-progress", "--no-validation-trace", "--no-host-profiler"]
CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


def answering(model: OfflineSampler) -> ChatServer:
    return ChatServer(answer=lambda prompt: model.draw_sample(prompt))


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("raise-ahd: warning: ")]


def test_the_base_url_is_recorded_and_resume_calls_it_not_the_shell_s(tmp_path, monkeypatch, capsys):
    model = OfflineSampler(seed=0, task="ovrp")
    out = tmp_path / "run"
    with answering(model) as server, answering(model) as moved:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "secret-key-never-recorded")
        assert main(["run", *FLAGS, "--llm", "openai:m", "--max-llm-calls", "2", "--out", str(out)]) == 0
        config = json.loads((out / "config.json").read_text())
        assert config["base_url"] == server.base_url and len(server.requests) == 2
        assert not any(b"secret-key" in p.read_bytes() for p in out.rglob("*") if p.is_file())

        # the shell now points elsewhere (a closed port): resume calls the recorded endpoint and says so
        monkeypatch.setenv("OPENAI_BASE_URL", CLOSED)
        capsys.readouterr()
        assert main(["resume", str(out), "--max-llm-calls", "4", "--no-progress"]) == 0
        assert len(server.requests) == 4
        assert warnings_of(capsys.readouterr().err) == [
            f"raise-ahd: warning: OPENAI_BASE_URL is {CLOSED}, but the run started against {server.base_url}: it "
            f"continues against the recorded one (--base-url {CLOSED} moves it)"]

        # no OPENAI_BASE_URL at all: the recorded one, without a word
        monkeypatch.delenv("OPENAI_BASE_URL")
        assert main(["resume", str(out), "--max-llm-calls", "5", "--no-progress"]) == 0
        assert len(server.requests) == 5 and warnings_of(capsys.readouterr().err) == []

        # a base URL given again moves the run there, and config.json records it
        assert main(["resume", str(out), "--base-url", moved.base_url, "--max-llm-calls", "100", "--no-progress"]) == 0
        assert len(server.requests) == 5 and len(moved.requests) >= 1
        assert warnings_of(capsys.readouterr().err) == [
            f"raise-ahd: warning: base URL {moved.base_url} (given here) is used, not {server.base_url} the run "
            f"started with; config.json now records {moved.base_url}"]
        assert json.loads((out / "config.json").read_text())["base_url"] == moved.base_url
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] and len(read_jsonl(out / "samples.jsonl")) == 6


def test_a_run_directory_that_recorded_no_base_url_takes_the_shell_s_once_and_keeps_it(tmp_path, monkeypatch,
                                                                                        capsys):
    model = OfflineSampler(seed=0, task="ovrp")
    out = tmp_path / "old"
    with answering(model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["run", *FLAGS, "--llm", "openai:m", "--max-llm-calls", "2", "--out", str(out)]) == 0
        config = json.loads((out / "config.json").read_text())
        del config["base_url"]  # as written before the base URL was recorded
        (out / "config.json").write_text(json.dumps(config))
        capsys.readouterr()
        assert main(["resume", str(out), "--max-llm-calls", "3", "--no-progress"]) == 0
        assert len(server.requests) == 3
        assert warnings_of(capsys.readouterr().err) == [
            f"raise-ahd: warning: the run's config.json records no base URL (written before it was kept): it "
            f"continues against {server.base_url} (from OPENAI_BASE_URL), now recorded"]
        assert json.loads((out / "config.json").read_text())["base_url"] == server.base_url


def test_an_unset_base_url_is_the_environment_s_else_the_openai_api_and_only_openai_runs_record_one(
        tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    config = RunConfig(task="ovrp", llm="openai:m", robust=False, budget=2, pop_size=2, out=str(tmp_path / "a"))
    start_run(config).recorder.lock.release()
    assert json.loads((tmp_path / "a" / "config.json").read_text())["base_url"] == OPENAI_API_URL
    start_run(RunConfig(task="ovrp", robust=False, out=str(tmp_path / "b"))).recorder.lock.release()
    assert json.loads((tmp_path / "b" / "config.json").read_text())["base_url"] is None


def test_a_base_url_for_another_back_end_or_not_a_url_is_a_one_line_error(tmp_path, capsys):
    for flags, why in ((["--base-url", "http://127.0.0.1:8080/v1"], "only an openai back-end has an endpoint"),
                       (["--llm", "openai:m", "--base-url", "localhost:8080"], "must be an http:// or https:// URL"),
                       # a port that is no number was a traceback (ValueError), exit 1; one past 65535 was tried
                       (["--llm", "openai:m", "--base-url", "http://u:pw-7f3a@127.0.0.1:abc/v1"], "with a host"),
                       (["--llm", "openai:m", "--base-url", "http://127.0.0.1:99999/v1"], "port of at most 65535"),
                       (["--llm", "openai:m", "--base-url", "http:///v1"], "with a host")):
        assert main(["run", *FLAGS, *flags, "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "config field 'base_url'" in err and why in err and "pw-7f3a" not in err
    assert not Path(tmp_path / "r").exists()
    config = RunConfig(task="ovrp", llm="openai:m", base_url="HTTP://127.0.0.1:8080/v1")  # a scheme is any case
    assert config.llm.base_url == "HTTP://127.0.0.1:8080/v1"


def test_credentials_in_the_base_url_are_never_written_or_shown_and_resume_takes_them_again(tmp_path, monkeypatch,
                                                                                            capsys):
    """A base URL may carry credentials (``http://user:PASSWORD@host/v1``, or a token as the user):
    the run calls it as given, but config.json records it with ``***`` for them, and nothing the
    run prints or writes holds them (the run lock's record of its holder's command included). Resume then needs the URL again: from OPENAI_BASE_URL when
    that is the same URL (without a word), or --base-url; without either it is a one-line error."""
    model = OfflineSampler(seed=0, task="ovrp")
    out = tmp_path / "run"
    secret = "pw-never-written-7f3a"
    with answering(model) as server:
        url = server.base_url.replace("http://", f"http://user:{secret}@")
        shown = server.base_url.replace("http://", "http://***@")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        capsys.readouterr()
        # with the host's log (run_log.txt), which takes the HTTP client's lines, each with the URL it called
        args = ["run", *[f for f in FLAGS if f != "--no-host-profiler"], "--llm", "openai:m", "--base-url", url,
                "--max-llm-calls", "2", "--out", str(out)]
        monkeypatch.setattr(sys, "argv", ["raise-ahd", *args])  # the run lock records its holder's command
        assert main(args) == 0
        assert len(server.requests) == 2
        assert shown in (out / "lock").read_text() and secret not in (out / "lock").read_text()
        assert json.loads((out / "config.json").read_text())["base_url"] == shown
        printed = capsys.readouterr()
        assert secret not in printed.out + printed.err

        assert main(["resume", str(out), "--max-llm-calls", "3", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "without its credentials" in err[0] and shown in err[0], err
        assert len(server.requests) == 2

        monkeypatch.setenv("OPENAI_BASE_URL", url)
        assert main(["resume", str(out), "--max-llm-calls", "3", "--no-progress"]) == 0
        assert len(server.requests) == 3 and warnings_of(capsys.readouterr().err) == []

        monkeypatch.delenv("OPENAI_BASE_URL")
        args = ["resume", str(out), f"--base-url={url}", "--max-llm-calls", "4", "--no-progress"]
        monkeypatch.setattr(sys, "argv", ["raise-ahd", *args])
        assert main(args) == 0
        printed = capsys.readouterr()
        assert len(server.requests) == 4 and warnings_of(printed.err) == [] and secret not in printed.out + printed.err
        assert json.loads((out / "config.json").read_text())["base_url"] == shown
    assert "HTTP Request: POST http://***@" in (out / "host" / "run_log.txt").read_text()
    assert not [p.name for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_the_model_taken_from_the_environment_is_recorded_and_resume_asks_it(tmp_path, monkeypatch, capsys):
    """`--llm openai` with RAISE_LLM_MODEL recorded "openai" alone: a resume under another OPENAI_MODEL went on
    with that model, without a word, and its usage priced the whole run as the new one's."""
    out = tmp_path / "run"
    with answering(OfflineSampler(seed=0, task="ovrp")) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("RAISE_LLM_MODEL", "first-model")
        assert main(["run", *FLAGS, "--llm", "openai", "--base-url", server.base_url, "--max-llm-calls", "2",
                     "--out", str(out)]) == 0
        assert json.loads((out / "config.json").read_text())["llm"] == "openai:first-model"
        monkeypatch.delenv("RAISE_LLM_MODEL")
        monkeypatch.setenv("OPENAI_MODEL", "other-model")
        assert main(["resume", str(out), "--max-llm-calls", "4", "--no-progress"]) == 0
        assert [r["model"] for r in server.requests] == ["first-model"] * 4


def test_a_token_in_the_base_url_s_query_is_hidden_as_a_password_is():
    """A base URL may carry a key in its query (``...?key=SECRET``, ``&access_token=...``, as some
    proxies take it): config.json recorded it, and the lines that show URLs printed it. Its value is
    now hidden as a password's is, resume asks for the URL again, and other parameters stay."""
    from raise_plugin.credentials import hides_credentials, shown_text, shown_url
    from raise_plugin.llm.endpoint import recorded_settings_of

    secret = "tok-never-written-91c2"
    for url, shown in ((f"https://proxy.example/v1?key={secret}", "https://proxy.example/v1?key=***"),
                       (f"https://proxy.example/v1?api-version=2024-02-01&Access_Token={secret}#x",
                        "https://proxy.example/v1?api-version=2024-02-01&Access_Token=***#x"),
                       (f"https://u:{secret}@proxy.example/v1?api_key={secret}&sig={secret}",
                        "https://***@proxy.example/v1?api_key=***&sig=***")):
        assert shown_url(url) == shown and hides_credentials(shown) and not hides_credentials(url)
        assert recorded_settings_of({"base_url": url, "llm": "openai:m"})["base_url"] == shown
        assert shown_text(f"HTTP Request: POST {url} \"200 OK\"") == f"HTTP Request: POST {shown} \"200 OK\""
    plain = "https://proxy.example/v1?api-version=2024-02-01&keyring=a"
    assert shown_url(plain) == plain and not hides_credentials(plain) and shown_text(plain) == plain
