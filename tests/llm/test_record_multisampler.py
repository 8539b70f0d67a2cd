"""Record and replay with several samplers: answers are keyed by prompt and occurrence, not by
call order, and a replay of a multi-sampler recording reproduces its programs with any number
of samplers."""
import json
import threading

import pytest

from raise_plugin.config import RunConfig
from raise_plugin.llm import OfflineSampler, RecordingLLM, ReplayLLM, ReplayMissError, make_llm
from raise_plugin.llm.record import ReplayExhausted
from raise_plugin.runner import start_run

PROMPT = "Create a new heuristic.\nImplement the following Python function:\ndef priority(item, bins):\n"


def _in_threads(calls):
    """Run each call in its own thread, all alive together (as a run's samplers are)."""
    start, end = threading.Barrier(len(calls)), threading.Barrier(len(calls))
    results = [None] * len(calls)

    def one(i, call):
        start.wait()
        results[i] = call()
        end.wait()

    threads = [threading.Thread(target=one, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_answers_are_keyed_by_prompt_and_occurrence_not_by_call_order(tmp_path):
    path = tmp_path / "r.jsonl"
    llm = RecordingLLM(OfflineSampler(seed=1, task="obp"), path)
    first = llm.draw_sample(PROMPT)
    other = llm.draw_sample(PROMPT + "# another prompt\n")
    second = llm.draw_sample(PROMPT)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["occurrence"], x["samplers"]) for x in lines] == [(0, 1), (0, 1), (1, 1)]
    replay = ReplayLLM(path)
    assert not replay.stand_ins  # one sampler recorded it: a prompt it lacks is an error
    assert [replay.draw_sample(PROMPT), replay.draw_sample(PROMPT)] == [first, second]
    with pytest.raises(ReplayMissError, match="asked 3 times but recorded 2"):  # while an answer is left
        replay.draw_sample(PROMPT)
    assert replay.draw_sample(PROMPT + "# another prompt\n") == other


def test_a_recording_knows_it_was_made_by_several_samplers(tmp_path):
    path = tmp_path / "r.jsonl"
    llm = RecordingLLM(OfflineSampler(seed=1, task="obp"), path)
    _in_threads([lambda i=i: llm.draw_sample(PROMPT + f"# {i}\n") for i in range(3)])
    assert max(json.loads(x)["samplers"] for x in path.read_text().splitlines()) == 3
    replay = make_llm(f"replay:{path}")
    assert replay.stand_ins and replay.samplers == 3 and "3 samplers" in replay.describe()


def test_a_prompt_the_recording_lacks_gets_the_earliest_unclaimed_answer_then_none(tmp_path):
    path = tmp_path / "r.jsonl"
    llm = RecordingLLM(OfflineSampler(seed=1, task="obp"), path)
    answers = [llm.draw_sample(PROMPT + f"# {i}\n") for i in range(3)]
    replay = ReplayLLM(path, stand_ins=True, grace=0.0)
    assert replay.draw_sample(PROMPT + "# 1\n") == answers[1]          # its own answer first
    assert replay.draw_sample("never recorded") == answers[0]         # then the earliest unclaimed
    assert replay.draw_sample(PROMPT + "# 0\n") == answers[2]         # its own was taken: a stand-in
    assert replay.substituted == 2 and all(replay.claimed)
    with pytest.raises(ReplayExhausted):                               # every answer served, grace over
        replay.draw_sample(PROMPT + "# 2\n")
    patient = ReplayLLM(path, stand_ins=True, grace=60.0)
    for i in range(3):
        patient.draw_sample(PROMPT + f"# {i}\n")
    assert patient.draw_sample("one more") == "" and patient.unanswered == 1  # no sample: the run winds down


def _run(tmp_path, name, samplers, budget, llm=None, record=None):
    config = RunConfig(task="ovrp", robust=False, budget=budget, pop_size=4, num_samplers=samplers, nominal=2,
                       seed=3, out=str(tmp_path / name), record=record, host_profiler=False,
                       validation_trace=False)
    start_run(config, llm=llm).run()
    return [json.loads(line)["program"] for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_three_sampler_run_replays_its_programs_with_three_samplers_and_with_one(tmp_path):
    recording = tmp_path / "llm.jsonl"
    recorded = _run(tmp_path, "recorded", 3, 12, record=str(recording))
    answers = len(recording.read_text().splitlines())
    assert 12 <= len(recorded) <= answers
    replays = {}
    for samplers in (3, 1):
        llm = ReplayLLM(recording)
        assert llm.stand_ins
        replays[samplers] = _run(tmp_path, f"replay{samplers}", samplers, answers, llm=llm)
        assert all(llm.claimed) and len(replays[samplers]) == answers  # each recorded answer served once
    assert set(replays[3]) == set(replays[1])
    # the recorded run may lose the samples under way when its budget is reached (at most one per
    # other sampler); the replays keep every recorded answer
    assert set(recorded) <= set(replays[1]) and len(set(replays[1]) - set(recorded)) <= 2
