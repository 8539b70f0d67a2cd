"""Record and replay: a recorded run replays identically; a missing prompt is a clear error."""
import json
import tempfile

import numpy as np
import pytest
from llm4ad.method.eoh import EoH

from raise_plugin.errors import UserError
from raise_plugin.llm import (OfflineSampler, RecordingLLM, ReplayLLM, ReplayMissError, UnknownBackendError,
                              make_llm, prompt_hash)
from raise_plugin.llm.record import ReplayExhausted
from tasks import get_task


class _Log:
    """Collects (prompt hash, response) in call order around any back-end."""

    def __init__(self, inner):
        self.inner, self.seen = inner, []
        self.do_auto_trim, self.debug_mode = inner.do_auto_trim, inner.debug_mode

    def draw_sample(self, prompt, *args, **kwargs):
        response = self.inner.draw_sample(prompt, *args, **kwargs)
        self.seen.append((prompt_hash(prompt), response))
        return response


def eoh_run(llm, samples=24):
    task = get_task("obp")
    instance = task.make_instance(task.nominal_instances()[0]["items"][:400], None)
    np.random.seed(0)
    with tempfile.TemporaryDirectory() as log_dir:
        from llm4ad.method.eoh import EoHProfiler
        method = EoH(llm=llm, evaluation=task.evaluation(instances=[instance], safe_evaluate=False),
                     profiler=EoHProfiler(log_dir=log_dir, create_random_path=False),
                     max_generations=None, max_sample_nums=samples, pop_size=4)
        method.run()


def test_a_recorded_run_replays_with_the_same_responses(tmp_path):
    path = tmp_path / "run.jsonl"
    recorded = _Log(RecordingLLM(OfflineSampler(seed=2), path))
    eoh_run(recorded)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == len(recorded.seen) > 10
    assert {"hash", "operator", "prompt", "response", "usage"} <= set(lines[0])
    replayed = _Log(ReplayLLM(path))
    eoh_run(replayed)
    assert replayed.seen == recorded.seen
    assert replayed.inner.usage.total().calls == len(lines)


def test_repeated_prompts_replay_in_recorded_order_then_fail_by_hash(tmp_path):
    """While recorded answers are left, a prompt the recording does not hold (or holds fewer
    times) is a miss; once every answer is replayed, the next prompt ends the replay cleanly:
    the recorded run asked no more."""
    path = tmp_path / "r.jsonl"
    llm = make_llm("offline:4", record=path)
    prompt = "Create a new heuristic.\nImplement the following Python function:\ndef priority(item, bins):\n"
    other = "Create a new heuristic.\nImplement the following Python function:\ndef priority(item, bins, n):\n"
    answers = [llm.draw_sample(prompt) for _ in range(3)] + [llm.draw_sample(other)]
    assert len(set(answers)) == 4
    replay = make_llm(f"replay:{path}")
    assert [replay.draw_sample(prompt) for _ in range(3)] == answers[:3]
    with pytest.raises(ReplayMissError, match=prompt_hash(prompt)[:16]) as info:
        replay.draw_sample(prompt)
    assert "asked 4 times but recorded 3" in str(info.value)
    with pytest.raises(ReplayMissError, match="not in the recording"):
        replay.draw_sample([{"role": "user", "content": "never asked"}])
    assert replay.draw_sample(other) == answers[3]
    with pytest.raises(ReplayExhausted, match="all 4 recorded answers are replayed; the recorded run asked no more"):
        replay.draw_sample(prompt)


def test_chat_message_prompts_are_recorded_and_replayed(tmp_path):
    path = tmp_path / "chat.jsonl"
    messages = [{"role": "user", "content": "Reflection: respond with some hints for bin packing."}]
    answer = make_llm("offline", record=path).draw_sample(messages)
    assert make_llm(f"replay:{path}").draw_sample(messages) == answer


def test_bad_recordings_and_specs_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(UserError, match="line 1"):
        make_llm(f"replay:{bad}")
    with pytest.raises(UserError, match="no such recording"):
        make_llm(f"replay:{tmp_path / 'missing.jsonl'}")
    with pytest.raises(UserError, match="not a run directory"):
        make_llm(f"replay:{tmp_path}")
    for spec in ("gpt", "replay", "offline:x"):
        with pytest.raises(UnknownBackendError) as info:
            make_llm(spec)
        assert "\n" not in str(info.value)
    with pytest.raises(UnknownBackendError, match="options not understood"):
        make_llm("offline", model="x")


def test_a_recording_that_is_not_text_is_a_one_line_error(tmp_path):
    noise = tmp_path / "noise.jsonl"
    noise.write_bytes(bytes(range(256)) * 4 + b"\n")
    with pytest.raises(UserError, match="line 1 is not a recorded answer") as info:
        make_llm(f"replay:{noise}")
    assert "\n" not in str(info.value)
    listed = tmp_path / "listed.jsonl"
    listed.write_text('[1, 2]\n{"hash": "a", "response": "x"}\n')
    with pytest.raises(UserError, match="line 1 is not a recorded answer"):
        make_llm(f"replay:{listed}")


def test_a_recording_that_holds_no_answer_is_a_one_line_error(tmp_path):
    # it was taken, and its first prompt was "not in the recording"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"hash": "ab", "resp')
    for source in (empty, torn, "/dev/null"):
        with pytest.raises(UserError, match=f"^replay:{source}: the recording holds no answer"):
            make_llm(f"replay:{source}")


def test_a_last_line_torn_by_a_kill_is_passed_over_as_a_resume_cuts_it(tmp_path):
    whole = [json.dumps({"hash": prompt_hash(f"p{i}"), "response": f"r{i}"}) for i in range(3)]
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(whole) + "\n" + whole[0][:17])
    replay = make_llm(f"replay:{torn}")
    assert replay.size == 3 and [replay.draw_sample(f"p{i}") for i in range(3)] == ["r0", "r1", "r2"]
    # a line that is not an answer with a newline after it was written whole: it is no tear
    torn.write_text("\n".join(whole) + "\n" + whole[0][:17] + "\n")
    with pytest.raises(UserError, match="line 4 is not a recorded answer"):
        make_llm(f"replay:{torn}")


def test_auto_is_offline_without_an_endpoint():
    llm = make_llm("auto")
    assert isinstance(llm, OfflineSampler) and "NO LLM" in llm.describe()
