"""The HTML pages: one self-contained file (no script, nothing fetched, figures embedded), every text
escaped, the failures shown where something failed, and what a real browser renders of them."""
from __future__ import annotations

import html
import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.compare_report import (FIGURE_WORDS, compare_report, cost_rows, figure_lines, no_llm_note,
                                                 run_rows)
from raise_plugin.harness.html_page import inline, markdown_html
from raise_plugin.harness.html_report import compare_page
from raise_plugin.harness.run_report import run_page, write_run_page
from raise_plugin.harness.variants import plan_variants
from tasks import get_task

ALT = html.escape(FIGURE_WORDS["convergence"], quote=True)  # the convergence figure's text, as the page escapes it
HOSTILE = '</pre><script>alert("x")</script><img src=x onerror=alert(1)> & | done'


def hostile_run(folder):
    """A small RAISE run directory whose program, reasons and LLM name hold markup."""
    folder.mkdir()
    config = {"task": "ovrp", "method": "eoh", "robust": True, "epsilon": 0.002, "seed": 0, "budget": 6,
              "pop_size": 2, "llm": f"openai:{HOSTILE}"}
    (folder / "config.json").write_text(json.dumps(config))
    ids = [f"p{k}" for k in range(6)]
    samples = [{"sample": k + 1, "program_id": pid, "program": HOSTILE, "function": HOSTILE, "generation": k // 2,
                "score": -1.5 + 0.05 * k,
                "error": None if k % 3 else f"{HOSTILE} (sample {k})"} for k, pid in enumerate(ids)]
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    populations = [{"generation": g, "samples": 2 * (g + 1), "instance_set": 0,
                    "members": [{"program_id": ids[2 * g + 1], "score": -1.4 + 0.1 * g},
                                {"program_id": ids[2 * g + 2] if g < 2 else ids[0], "score": -1.6 + 0.1 * g}]}
                   for g in range(3)]
    (folder / "population.jsonl").write_text("".join(json.dumps(p) + "\n" for p in populations))
    summary = {"finished": False, "stopped": None, "failure": f"the endpoint failed: {HOSTILE}", "samples": 6,
               "budget": 6, "generations": 3, "refreshes": 0, "evaluations": 30, "seconds": 1.5,
               "best": {"program_id": "p5", "robust_score": -1.2, "algorithm": HOSTILE,
                        "program": f"def priority(x):\n    return '{HOSTILE}'\n"},
               "llm_usage": {"backend": "openai", "model": HOSTILE, "priced": True,
                             "total": {"requests": 9, "calls": 6, "retries": 3, "failures": 3, "input_tokens": 1200,
                                       "output_tokens": 800, "cost_usd": 0.0123},
                             "failures_by_kind": {"timeout": 2, HOSTILE: 1}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_a_run_page_escapes_every_text_and_shows_its_failures_costs_and_convergence(tmp_path):
    page = run_page(hostile_run(tmp_path / "run"))
    assert "<script" not in page and "<img src=x" not in page and "onerror=alert(1)>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert 'class="failures"' in page and "The run stopped" in page and "2 of 6 samples failed" in page
    assert "<svg" in page and "Convergence of RAISE-EoH (eps=0.002) on ovrp" in page  # drawn without matplotlib
    assert "0.0123" in page and "1200" in page and ">timeout<" in page
    assert 'src="http' not in page and 'href="http' not in page and "<link" not in page  # nothing fetched


def test_a_run_page_draws_the_trained_set_in_its_aggregations_terms_and_the_validation_suite_beside_its_rule(
        tmp_path):
    """A worst-case regret run's training curve is a regret, not the metric; its validation trace is the
    metric, drawn on a chart of its own beside the rule the trace carries (the tables' reference)."""
    folder = hostile_run(tmp_path / "run")
    config = {**json.loads((folder / "config.json").read_text()), "aggregation": "regret:sp-insert:min"}
    (folder / "config.json").write_text(json.dumps(config))
    chosen = {"name": "SP-Insert", "metric": 1.3}
    (folder / "validation.jsonl").write_text("".join(json.dumps(
        {"generation": g, "validation_metric": 1.4 - 0.01 * g, "best_baseline": chosen}) + "\n" for g in (0, 2)))
    page = run_page(folder).replace("&#x27;", "'")  # the page escapes every quote
    assert "worst route length (ratio to Clarke-Wright's) regret against sp-insert, lower is better" in page
    chart = page[page.index("Its best program on the validation suite"):]
    assert get_task("ovrp").metric_label in chart[:2000]
    assert "SP-Insert (best classical rule on the validation suite)" in chart
    replaced = {"name": "UW-Insert", "metric": 1.5}  # a trace recorded before: the best of the paper's baselines
    (folder / "validation.jsonl").write_text(json.dumps(
        {"generation": 0, "validation_metric": 1.4, "best_baseline": replaced}) + "\n")
    assert "UW-Insert (best of the task&#x27;s baselines on the instances traced)" in run_page(folder)


@pytest.mark.parametrize("methods, backend, said", [
    (["eoh"], "offline", "No LLM was used: programs came from the offline program sampler, an LLM-free search that "
                         "rewrites parent programs."),
    (["gp"], "offline", "No LLM was used: GP writes its own."),
    (["gp"], "openai:some-model", "No LLM was used: GP writes its own."),  # GP asks its back-end nothing
    (["gp", "eoh", "moh"], "offline:3", "No LLM was used: the programs of EoH, MoH came from the offline program "
                                        "sampler, an LLM-free search that rewrites parent programs; GP writes its "
                                        "own."),
    (["gp", "eoh"], "openai:some-model", None)])  # EoH's came from the LLM
def test_who_wrote_the_programs_where_no_llm_did(methods, backend, said):
    assert no_llm_note(methods, backend) == said


def test_a_gp_run_page_does_not_credit_the_sampler(tmp_path):
    folder = hostile_run(tmp_path / "run")
    (folder / "config.json").write_text(json.dumps({**json.loads((folder / "config.json").read_text()),
                                                    "method": "gp", "llm": "offline"}))
    page = run_page(folder)
    assert "No LLM was used: GP writes its own." in page and "offline program sampler" not in page


def test_a_runs_best_on_its_set_of_zero_prints_as_zero_not_minus_zero(tmp_path):
    """A run whose best matches its reference (a regret of 0, a host score of 0) is at 0, not below it."""
    variants = plan_variants(["eoh"], [0.002])
    run_dirs = {}
    for variant, score in zip(variants, (0.0, -1.25)):
        path = tmp_path / variant.key
        path.mkdir()
        (path / "config.json").write_text(json.dumps({"task": "obp", "method": "eoh", "budget": 8, "llm": "offline"}))
        (path / "summary.json").write_text(json.dumps({"finished": True, "samples": 8, "best": {"robust_score": score}}))
        run_dirs[(variant.key, 0)] = path
    assert [row[12] for row in run_rows(variants, run_dirs)] == ["0.0000", "1.2500"]


def test_the_cost_table_counts_failed_requests_not_failed_calls(tmp_path):
    """Three HTTP 500s, one call retried twice, that the failure bound then ended: three failed requests."""
    variants = plan_variants(["eoh"], [])
    path = tmp_path / "run"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"task": "ovrp", "method": "eoh", "budget": 8, "llm": "openai:m"}))
    usage = {"backend": "openai", "model": "m", "priced": False,
             "total": {"requests": 3, "calls": 1, "retries": 2, "failures": 1, "unusable": 0}}
    (path / "summary.json").write_text(json.dumps({"finished": False, "samples": 0, "llm_usage": usage,
                                                   "failure": "the run stopped: 3 LLM requests in a row ..."}))
    row = cost_rows(variants, {(variants[0].key, 0): path})[0]
    assert row[3:5] == [3, 3]  # requests, failed requests


def test_the_markdown_of_a_report_becomes_tags_only_after_escaping():
    assert inline("**bold** <u>second</u> `code` [t.md](t.md)") == (
        '<strong>bold</strong> <u>second</u> <code>code</code> <a href="t.md">t.md</a>')
    assert inline("[x](javascript:alert(1))") == "[x](javascript:alert(1))"  # only relative files are linked
    assert inline("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    body = "\n".join(markdown_html("| a | b |\n|---|---:|\n| x \\| y | 1.5 |\n", "."))
    assert "<td>x | y</td>" in body and '<td class="num">1.5</td>' in body


def test_a_figure_written_as_png_and_pdf_is_embedded_and_its_pdf_linked(tmp_path):
    # make demo writes both: its page showed "!convergence" as a link, the figure not embedded, since the
    # image line was followed by the line naming its PDF
    files = [tmp_path / "convergence.png", tmp_path / "convergence.pdf"]
    for f in files:
        f.write_bytes(b"\x89PNG\r\n\x1a\n" if f.suffix == ".png" else b"%PDF-1.4")
    body = "\n".join(markdown_html("\n".join(figure_lines(files)), tmp_path))
    assert body.count(f'<img alt="{ALT}" src="data:image/png;base64,') == 1
    assert '<a href="convergence.pdf">PDF</a>' in body and "!<a" not in body


def test_a_figure_written_as_svg_alone_is_embedded(tmp_path):
    svg = tmp_path / "convergence.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>')
    body = "\n".join(markdown_html("\n".join(figure_lines([svg])), tmp_path))
    assert body.count(f'<img alt="{ALT}" src="data:image/svg+xml;base64,') == 1


def test_a_compare_pages_figures_say_in_words_what_they_show(tmp_path):
    """A reader who cannot see the pictures heard "convergence" and "adversarial_distributions", the files'
    names, as each figure's text and caption."""
    files = [tmp_path / f"{stem}.png" for stem in ("convergence", "adversarial_distributions")]
    for f in files:
        f.write_bytes(b"\x89PNG\r\n\x1a\n")
    body = "\n".join(markdown_html("\n".join(figure_lines(files)), tmp_path))
    alts = re.findall(r'<img alt="([^"]*)"', body)
    assert len(alts) == 2 and all(len(alt.split()) >= 8 for alt in alts), alts
    assert alts[0].startswith("Convergence: each variant&#x27;s best program, generation by generation")
    assert alts[1].startswith("Adversarial distributions: the distributions each RAISE run&#x27;s adversary found")
    assert "<figcaption>Convergence: each variant" in body and "(convergence.png)</figcaption>" in body


def failed_compare_page(tmp_path):
    """The page of a compare whose one training job failed with a reason full of markup."""
    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(0.002,), budget=8, pop_size=4, tau=1,
                           inner_population=4, inner_generations=1, seeds=(0,), llm="offline", select_on="robust")
    failed = SimpleNamespace(kind="train", label="EoH, seed 0", error=f"{HOSTILE}\nsecond line", retry_helps=False)
    report = compare_report(config, get_task("ovrp"), plan_variants(("eoh",), (0.002,)), {}, [], {},
                            failures=[failed])
    (tmp_path / "report.md").write_text(report)
    path = tmp_path / "report.html"
    path.write_text(compare_page(report, tmp_path))
    return path


def test_a_compare_page_lists_its_failed_jobs_escaped(tmp_path):
    page = failed_compare_page(tmp_path).read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert '<section class="failures">' in page and "<h2>Failed jobs</h2>" in page
    assert "| done second line" in page  # the reason on one line, its | kept
    assert "<title>RAISE compare on ovrp: eoh, budget 8</title>" in page


def colours(shot: np.ndarray) -> int:
    """How many distinct colours a screenshot holds (1: a blank page)."""
    pixels = (np.asarray(shot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    return len(np.unique(pixels, axis=0))


@pytest.mark.slow  # two starts of a browser: about 12 s on 2 shared cores
def test_a_browser_shows_the_run_page_and_the_failures(tmp_path, browser):
    run = hostile_run(tmp_path / "run")
    dom, shot = browser(write_run_page(run))
    assert "RAISE run: RAISE-EoH (eps=0.002) on ovrp, seed 0" in dom and "<script" not in dom
    assert "Failures" in dom and "2 of 6 samples failed" in dom and "cost (USD)" in dom
    assert "Convergence of RAISE-EoH" in dom and '&lt;/pre&gt;&lt;script&gt;alert("x")' in dom
    assert shot.shape[1] == 1280 and colours(shot) > 8  # not a blank page
    dom, shot = browser(failed_compare_page(tmp_path))
    assert "Failed jobs" in dom and "cannot help" in dom and "<script" not in dom and colours(shot) > 8
    assert "<img" not in dom  # this compare drew no figure


def test_a_compare_whose_every_training_job_failed_says_why_nothing_is_significant(tmp_path):
    """Its report and page went from the failed jobs to the tables: no "What is significant" at all, though the
    failed jobs' note spoke of the "tests below"."""
    page = failed_compare_page(tmp_path).read_text()
    report = (tmp_path / "report.md").read_text()
    said = ("No comparison: no method has results on the test suite beside valid results of a baseline or of its "
            "plain twin (Failed jobs, above, says why).")
    assert f"## What is significant\n\n{said}\n" in report
    assert f"<h2>What is significant</h2>\n<p>{said}</p>" in page
    assert page.index("<h2>Failed jobs</h2>") < page.index("<h2>What is significant</h2>") < page.index("<h2>Tables")
