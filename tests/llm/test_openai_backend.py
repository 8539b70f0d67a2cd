"""The OpenAI-compatible back-end against a local chat-completions server (real ``openai`` client)."""
import threading

import pytest

from raise_plugin.errors import UserError
from raise_plugin.llm import LLMAborted, LLMConfigError, OpenAIBackend, Price, make_llm


def backend(server, **kw):
    delays = []
    options = dict(base_url=server.base_url, api_key="test-key", timeout=0.5, backoff_base=0.01,
                   backoff_max=0.05, sleep=lambda s: delays.append(s), seed=0)
    options.update(kw)
    llm = OpenAIBackend(kw.pop("model", "gpt-5-mini"), **{k: v for k, v in options.items() if k != "model"})
    return llm, delays


def test_answer_is_returned_and_tokens_and_cost_add_up(server):
    llm, _ = backend(server)
    assert llm.draw_sample("hello there") == "echo: hello there"
    assert llm.draw_sample([{"role": "system", "message": ""}, {"role": "user", "message": "hi"}]) == "echo: hi"
    total = llm.usage.total()
    assert (total.calls, total.failures, total.retries) == (2, 0, 0)
    assert (total.input_tokens, total.output_tokens) == (12 + 11, 14)
    assert total.cost_usd == pytest.approx((23 * 0.25 + 14 * 2.00) / 1e6)
    # the host's empty system message is dropped, 'message' becomes 'content'
    assert server.requests[-1]["messages"] == [{"role": "user", "content": "hi"}]


def test_rate_limits_and_server_errors_are_retried_and_counted(server):
    llm, delays = backend(server, retry_after_max=0.02)
    server.script("429", "500", "500", "ok")
    assert llm.draw_sample("x").startswith("echo")
    assert llm.retries == 3 and llm.failures == 0 and llm.calls == 1
    assert len(server.requests) == 4
    assert delays[0] == pytest.approx(0.01)  # Retry-After honoured (server says 0.01 s)
    assert all(0 <= d <= 0.05 for d in delays)  # back-off bounded by backoff_max


def test_backoff_grows_exponentially_with_jitter_and_is_capped(server):
    llm, delays = backend(server, max_attempts=6, backoff_base=0.001, backoff_max=0.004)
    server.script(*["500"] * 5)
    assert llm.draw_sample("x").startswith("echo")
    assert len(delays) == 5
    for n, d in enumerate(delays):
        cap = min(0.004, 0.001 * 2 ** n)
        assert cap * 0.5 <= d <= cap


def test_exhausted_retries_give_a_counted_failure_not_a_crash(server):
    llm, delays = backend(server, max_attempts=3)
    server.script("500", "500", "500")
    assert llm.draw_sample("x") == ""
    assert (llm.calls, llm.failures, llm.retries) == (1, 1, 2)


def test_slow_answers_time_out_and_are_retried(server):
    llm, _ = backend(server, timeout=0.3)
    server.slow_seconds = 1.0
    server.script("slow")
    assert llm.draw_sample("x").startswith("echo")
    assert llm.retries == 1


@pytest.mark.parametrize("behaviour", ["empty", "none", "nochoices", "malformed"])
def test_empty_or_malformed_answers_are_counted_failures(server, behaviour):
    llm, _ = backend(server)
    server.script(behaviour)
    assert llm.draw_sample("x") == ""
    assert (llm.calls, llm.failures, llm.retries) == (1, 1, 0)
    assert llm.draw_sample("y").startswith("echo")  # the back-end keeps working


@pytest.mark.parametrize("behaviour,words", [("401", "refused the API key"), ("404", "not found")])
def test_bad_key_or_unknown_model_raise_one_line_error_then_abort(server, behaviour, words):
    llm, _ = backend(server)
    server.script(behaviour)
    with pytest.raises(LLMConfigError) as info:
        llm.draw_sample("x")
    message = str(info.value)
    assert words in message and "\n" not in message and isinstance(info.value, UserError)
    assert len(server.requests) == 1  # never retried
    with pytest.raises(LLMAborted):  # later calls stop even loops that swallow Exception
        llm.draw_sample("x")
    assert len(server.requests) == 1


def test_concurrent_threads_share_one_backend_safely(server):
    # Ten scripted failures in all, so with eleven attempts per call no thread can run out,
    # however the six threads interleave on the server's script.
    llm, _ = backend(server, max_attempts=11)
    server.script(*["429", "ok", "500", "ok"] * 5)
    results, errors = [], []

    def work(i):
        try:
            for j in range(5):
                results.append(llm.draw_sample(f"thread {i} call {j}"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 30 and all(r.startswith("echo") for r in results)
    total = llm.usage.total()
    assert total.calls == 30 and total.retries == 10 and total.failures == 0
    assert total.input_tokens == sum(len(f"thread {i} call {j}".split()) + 10 for i in range(6) for j in range(5))


def test_usage_is_kept_per_operator_and_prices_are_settable(server):
    llm, _ = backend(server, model="my-local-model")
    assert not llm.usage.priced
    llm.set_price("my-local", Price(1.0, 10.0))  # prefix entries price dated model names
    assert llm.usage.priced
    llm.draw_sample("Please ... different parameter settings of the score function provided.")
    llm.draw_sample("anything", operator="crossover")
    per_op = llm.usage.to_dict()["per_operator"]
    assert set(per_op) == {"m2", "crossover"}
    assert per_op["crossover"]["cost_usd"] == pytest.approx((11 * 1.0 + 7 * 10.0) / 1e6)


def test_configuration_comes_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("RAISE_LLM_MODEL", "env-model")
    llm = make_llm("auto")
    assert isinstance(llm, OpenAIBackend) and llm.model == "env-model"
    assert llm.draw_sample("x").startswith("echo")
    assert server.requests[-1]["model"] == "env-model"
    assert make_llm("openai:other").model == "other"


def test_missing_model_or_key_is_a_one_line_error():
    with pytest.raises(LLMConfigError, match="no model"):
        OpenAIBackend()
    with pytest.raises(LLMConfigError, match="no API key"):
        OpenAIBackend("gpt-5-mini")


def test_a_key_read_with_its_line_end_is_used_and_one_that_cannot_be_sent_is_refused_unshown(server, monkeypatch):
    """A key ending in a newline or a carriage return (a file, a Windows .env) failed every request with
    the HTTP client's "Illegal header value b'Bearer sk-...\\n'", the whole key in the console and in every
    record; a non-ASCII one was retried as an answer cut mid-way."""
    for given in ("sk-NLKEY456\n", "sk-CRKEY123\r", "  sk-SPACED  "):
        monkeypatch.setenv("OPENAI_API_KEY", given)
        llm, _ = backend(server, api_key=None)
        assert llm.draw_sample("x").startswith("echo")
        assert server.authorizations[-1] == f"Bearer {given.strip()}"
    for bad in ("sk-KEY\u00e9789", "sk-A\nB"):
        with pytest.raises(LLMConfigError, match=r"^the API key \(OPENAI_API_KEY, or api_key\) holds a control or a "
                                                 r"non-ASCII character: .*\(it is not shown\)$") as caught:
            backend(server, api_key=bad)
        assert bad[3:7] not in str(caught.value)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_refused_key_stops_a_host_eoh_run_instead_of_looping(server, tmp_path):
    from llm4ad.method.eoh import EoH, EoHProfiler

    from tasks import get_task

    llm, _ = backend(server)
    server.default = "401"
    profiler = EoHProfiler(log_dir=str(tmp_path), create_random_path=False)
    method = EoH(llm=llm, evaluation=get_task("obp").evaluation(safe_evaluate=False), profiler=profiler,
                 max_generations=None, max_sample_nums=4, pop_size=2)
    finished = threading.Event()
    runner = threading.Thread(target=lambda: (method.run(), finished.set()), daemon=True)
    runner.start()
    runner.join(timeout=20)
    assert finished.is_set()
    assert len(server.requests) == 1 and llm.failures == 1
