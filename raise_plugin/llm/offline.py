"""The offline program sampler: an LLM-free search that answers operator prompts with new programs.

No language model is used. The sampler reads an operator prompt (EoH, ReEvo, PartEvo),
finds the parent programs and the function to implement in it, and writes a new
program by rule: new numeric constants for parameter-tuning prompts, a feature term
inserted, deleted or swapped for modification prompts, recombined terms of the
parents for crossover prompts, and classical baselines and their variations for
creation prompts (features and seeds: the task's library, ``offline_library``). Reflection
and summary prompts get a short hint instead of code. A task without a library gets the
generic path: its template and the parents varied as code (``offline_vary``). Reading the
prompt: ``offline_prompt``; programs as terms: ``offline_terms``.
"""
from __future__ import annotations

import ast
import hashlib
import logging
import threading
import time
from typing import Any

import numpy as np
from llm4ad.base import LLM

from tasks import Task

from .offline_library import (GENERIC_HINTS, Feature, TaskLibrary, TaskTemplate, knowledge_of, library_for_params,
                              library_for_task, template_for)
from .offline_prompt import PromptPrograms, header_of, parse_prompt
from .offline_terms import (TermProgram, perturb_constants, read_terms, render, rounded, shape_key, split_term,
                            without_docstring)
from .offline_vary import can_vary, vary
from .operators import infer_operator, operator_kind, prompt_text
from .usage import UsageLedger

__all__ = ["OfflineSampler", "NO_LLM_NOTICE", "nothing_to_vary", "notice_said", "say_notice"]

log = logging.getLogger("raise_plugin.llm")

NO_LLM_NOTICE = ("offline program sampler: NO LLM IS USED; programs are rule-based transformations "
                 "(constant perturbation, feature-term edits, recombination, classical seeds) "
                 "of the parents found in each prompt")

_warned = threading.Event()


def say_notice() -> None:
    """``NO_LLM_NOTICE``, once in a process."""
    if not _warned.is_set():
        _warned.set()
        log.warning(NO_LLM_NOTICE)


def notice_said() -> None:
    """Count ``NO_LLM_NOTICE`` as said in this process (a compare's job process: the compare said it)."""
    _warned.set()


def nothing_to_vary(task: Task) -> str | None:
    """Why the sampler can write nothing but copies of ``task``'s template, or ``None``: the task
    lends it no library, and its template holds no constant, ratio, difference or loop for the
    generic path to vary (so every variant of it, and of its copies, is the template again)."""
    known = knowledge_of(task)
    if not isinstance(known, TaskTemplate) or can_vary(known.source):
        return None
    return (f"the offline sampler finds no constant or ratio to vary in {known.task}'s template and has no "
            f"program library for it")


# -- the sampler -----------------------------------------------------------------

_CODE_HEAD = "```python\nimport numpy as np\n\n"


def _source_of(answer: str) -> str:
    """The program source inside one of this sampler's answers (``OfflineSampler._answer``)."""
    start = answer.find(_CODE_HEAD)
    end = answer.rfind("\n```")
    return answer[start + len(_CODE_HEAD):end] if 0 <= start < end else ""


class OfflineSampler(LLM):
    """LLM-free sampler: answers operator prompts with rule-made programs. No LLM is used.

    Args:
        seed: the answers depend only on ``seed``, the prompt and how often that prompt
            was asked before, so runs are reproducible (given the same prompts).
        task: the task name to assume when a prompt has no recognisable signature.
        novelty_tries: attempts to find a program this sampler has not written before.
    """

    def __init__(self, seed: int = 0, *, task: str | None = None, novelty_tries: int = 20,
                 do_auto_trim: bool = True):
        super().__init__(do_auto_trim=do_auto_trim)
        self.seed = int(seed)
        self.task = task
        self.novelty_tries = int(novelty_tries)
        self.usage = UsageLedger(backend="offline", model="none (no LLM)", priced=True)
        self._lock = threading.Lock()
        self._asked: dict[str, int] = {}
        self._written: set[str] = set()

    def describe(self) -> str:
        return f"{NO_LLM_NOTICE} (seed {self.seed})"

    # -- the host interface --------------------------------------------------------
    def draw_sample(self, prompt: str | Any, *args, operator: str | None = None, **kwargs) -> str:
        say_notice()  # at the first answer: a method that asks nothing (GP) is told no tale of programs
        text = prompt_text(prompt)
        op = operator or infer_operator(text)
        digest = hashlib.sha256(text.encode()).digest()
        with self._lock:
            nth = self._asked.get(text, 0)
            self._asked[text] = nth + 1
        rid = self.usage.begin_request(op)  # caps count offline calls as requests
        start = time.perf_counter()
        rng = np.random.default_rng([self.seed, int.from_bytes(digest[:8], "little"), nth])
        if operator_kind(op) == "text":
            answer = self._hint(text, rng)
        else:
            answer = self._program(text, op, nth, rng)
        self.usage.end_request(rid, seconds=time.perf_counter() - start)
        self.usage.set_last_call(op)
        return answer

    def prime(self, prompt: str | Any, response: str) -> None:
        """Take an answer given before (a resumed run's) as if this sampler had written it, so
        the answers that follow are the ones an uninterrupted run gets."""
        text = prompt_text(prompt)
        with self._lock:
            self._asked[text] = self._asked.get(text, 0) + 1
            source = _source_of(response)
            if source:
                self._written.add(source)

    # -- answers -------------------------------------------------------------------
    def _hint(self, text: str, rng: np.random.Generator) -> str:
        found = parse_prompt(text)
        lib = self._library(found)
        hints = lib.hints if lib else GENERIC_HINTS
        return f"{hints[int(rng.integers(len(hints)))]} (offline sampler, no LLM)"

    def _library(self, found: PromptPrograms) -> TaskLibrary | None:
        """The library of the task named (the authority: its library, or none, for the generic
        path), else that of the registered task whose heuristic takes the prompt's parameters
        (those of the function to write, else of the last parent)."""
        if self.task is not None:
            return library_for_task(self.task)
        lib = library_for_params(found.params)
        if lib is None and found.parents:
            head = header_of(found.parents[-1])
            lib = library_for_params(head[2]) if head else None
        return lib

    def _program(self, text: str, op: str, nth: int, rng: np.random.Generator) -> str:
        found = parse_prompt(text)
        lib = self._library(found)
        header, params = found.header, found.params
        if lib is not None and (header is None or len(params) != len(lib.params)):
            header, params = f"def {lib.function}({', '.join(lib.params)}):", list(lib.params)
        if lib is None:
            return self._generic(found, op, rng)
        parents = [p for p in (read_terms(src, lib, params) for src in found.parents) if p is not None]
        kind = operator_kind(op)
        source = ""
        for attempt in range(self.novelty_tries):
            if kind == "create" or (not parents and not found.parents):
                child, how = self._create(lib, nth + attempt * 7919 if attempt else nth, rng)
            elif not parents:
                # parents we cannot read as terms: tune their constants as they are
                child, how = None, "parameter perturbation of the parent code"
                source = self._perturbed_source(found.parents[int(rng.integers(len(found.parents)))],
                                                found, rng)
            elif kind == "perturb":
                child, how = self._perturb(parents[int(rng.integers(len(parents)))], lib, rng)
            elif kind == "crossover":
                child, how = self._crossover(parents, lib, rng, backbone=(op == "e2"), novel=(op == "e1"))
            else:
                child, how = self._modify(parents[int(rng.integers(len(parents)))], lib, rng)
            if child is not None:
                source = render(header, lib, params, child)
            with self._lock:
                if source not in self._written or attempt == self.novelty_tries - 1:
                    self._written.add(source)
                    break
        summary = self._summary(child, lib) if child is not None else "inherited scoring with new constants"
        return self._answer(f"{how}: {summary}", source)

    def _generic(self, found: PromptPrograms, op: str, rng: np.random.Generator) -> str:
        template = template_for(found.params, self.task)
        sources = found.parents or ([template.source] if template is not None else [])
        if sources:
            name = found.name or (template.function if template is not None else None)
            for attempt in range(self.novelty_tries):
                source, how = vary(sources[int(rng.integers(len(sources)))], name, rng)
                with self._lock:
                    if source not in self._written or attempt == self.novelty_tries - 1:
                        self._written.add(source)
                        break
            whose = "a parent" if found.parents else "the task's template"
            return self._answer(f"{how} of {whose} (a task without an offline library)", source)
        header = found.header or "def priority(*args):"
        arg = found.params[-1] if found.params else "args[-1]"
        src = f"{header}\n    return np.zeros(len({arg}))"
        return self._answer("constant scores (unknown task, nothing to transform)", src)

    @staticmethod
    def _answer(description: str, source: str) -> str:
        description = description.replace("{", "(").replace("}", ")").replace("\n", " ")
        return "{Offline sampler, no LLM: " + description + ".}\n" + _CODE_HEAD + source + "\n```\n"

    def _perturbed_source(self, parent: str, found: PromptPrograms, rng: np.random.Generator) -> str:
        tree = ast.parse(parent)
        func = tree.body[0]
        func.body = without_docstring(func.body) or [ast.Pass()]
        perturb_constants(tree, rng)
        if found.name and isinstance(func, ast.FunctionDef):
            func.name = found.name
        return ast.unparse(tree)

    # -- operators on terms --------------------------------------------------------
    def _create(self, lib: TaskLibrary, nth: int, rng: np.random.Generator) -> tuple[TermProgram, str]:
        if nth < len(lib.seeds):
            name, terms = lib.seeds[nth]
            return TermProgram(list(terms)), f"classical seed {name}"
        name, terms = lib.seeds[int(rng.integers(len(lib.seeds)))]
        child = TermProgram(list(terms))
        for _ in range(int(rng.integers(1, 3))):
            child = self._insert(child, lib, rng)
        return child, f"variation of the seed {name}"

    def _perturb(self, parent: TermProgram, lib: TaskLibrary, rng: np.random.Generator):
        if not parent.terms:
            return self._insert(parent, lib, rng), "term insertion (no parameters to tune)"
        tree = ast.parse("\n".join(f"{c!r} * ({e})" for c, e in parent.terms))
        perturb_constants(tree, rng)
        terms = [split_term(stmt.value) for stmt in tree.body]
        if any(t is None for t in terms):
            return self._insert(parent, lib, rng), "term insertion"
        return TermProgram(terms), "parameter perturbation"

    def _feature_for(self, expr: str, lib: TaskLibrary) -> Feature | None:
        key = shape_key(expr)
        return next((f for f in lib.features if shape_key(f.expr) == key), None)

    def _insert(self, parent: TermProgram, lib: TaskLibrary, rng: np.random.Generator) -> TermProgram:
        used = {shape_key(e) for _, e in parent.terms}
        choices = [f for f in lib.features if shape_key(f.expr) not in used] or list(lib.features)
        feature = choices[int(rng.integers(len(choices)))]
        weight = np.mean([abs(c) for c, _ in parent.terms]) if parent.terms else 1.0
        sign = feature.sign if rng.random() > 0.1 else -feature.sign
        coef = sign * feature.scale * weight * float(np.exp(rng.normal(0.0, 0.5)))
        return TermProgram(parent.terms + [(coef, feature.expr)])

    def _modify(self, parent: TermProgram, lib: TaskLibrary, rng: np.random.Generator):
        r = rng.random()
        if len(parent.terms) >= 2 and r < 0.25:
            k = int(rng.integers(len(parent.terms)))
            return TermProgram(parent.terms[:k] + parent.terms[k + 1:]), "term deletion"
        if parent.terms and r < 0.55:
            k = int(rng.integers(len(parent.terms)))
            rest = TermProgram(parent.terms[:k] + parent.terms[k + 1:])
            new = self._insert(rest, lib, rng).terms[-1]
            coef = float(np.sign(new[0]) * abs(parent.terms[k][0]))
            terms = list(parent.terms)
            terms[k] = (coef, new[1])
            return TermProgram(terms), "term replacement"
        return self._insert(parent, lib, rng), "term insertion"

    def _crossover(self, parents: list[TermProgram], lib: TaskLibrary, rng: np.random.Generator,
                   backbone: bool, novel: bool):
        if len(parents) == 1:
            child, how = self._modify(parents[0], lib, rng)
            return child, f"{how} (one readable parent)"
        a, b = (parents[int(i)] for i in rng.choice(len(parents), size=2, replace=False))
        in_a = {shape_key(e): (c, e) for c, e in a.terms}
        in_b = {shape_key(e): (c, e) for c, e in b.terms}
        mix = float(rng.uniform(0.2, 0.8))
        terms = []
        for key in list(in_a) + [k for k in in_b if k not in in_a]:
            if key in in_a and key in in_b:
                if backbone or rng.random() < 0.8:
                    (ca, ea), (cb, eb) = in_a[key], in_b[key]
                    terms.append((mix * ca + (1 - mix) * cb, ea if rng.random() < mix else eb))
            elif rng.random() < 0.5:
                terms.append((in_a.get(key) or in_b.get(key)))
        child = TermProgram(terms)
        how = "recombination of the common backbone and the parents' terms" if backbone \
            else "recombination of two parents' terms"
        if not terms or child.key() in (a.key(), b.key()) or (novel and rng.random() < 0.5):
            child = self._insert(child, lib, rng)
            how += " plus a new feature term"
        return child, how

    def _summary(self, program: TermProgram, lib: TaskLibrary) -> str:
        if not program.terms:
            return "equal scores (the first candidate wins)"
        parts = []
        for coef, expr in program.terms:
            feature = self._feature_for(expr, lib)
            parts.append(f"{rounded(coef):+g} x {feature.name if feature else 'inherited term'}")
        return "score = " + " ".join(parts)
