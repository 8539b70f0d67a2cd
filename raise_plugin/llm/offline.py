"""The offline program sampler: an LLM-free search that answers operator prompts with new programs.

No language model is used. The sampler reads an operator prompt (EoH, ReEvo, PartEvo),
finds the parent programs and the function to implement in it, and writes a new
program by rule: new numeric constants for parameter-tuning prompts, a feature term
inserted, deleted or swapped for modification prompts, recombined terms of the
parents for crossover prompts, and classical baselines and their variations for
creation prompts (features and seeds: ``offline_library``). Reflection and summary
prompts get a short hint instead of code. A task without a library (built in or declared
by the task) gets the generic path: its template and the parents varied as code.
"""
from __future__ import annotations

import ast
import hashlib
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llm4ad.base import LLM

from .offline_library import (GENERIC_HINTS, Feature, TaskLibrary, library_for_params, library_for_task,
                              template_for)
from .operators import infer_operator, operator_kind, prompt_text
from .usage import UsageLedger

__all__ = ["OfflineSampler", "PromptPrograms", "TermProgram", "parse_prompt", "NO_LLM_NOTICE"]

log = logging.getLogger("raise_plugin.llm")

NO_LLM_NOTICE = ("offline program sampler: NO LLM IS USED; programs are rule-based transformations "
                 "(constant perturbation, feature-term edits, recombination, classical seeds) "
                 "of the parents found in each prompt")

_warned = threading.Event()
_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(")


# -- reading the prompt ----------------------------------------------------------

@dataclass
class PromptPrograms:
    """What a prompt holds: parent functions (source), and the header of the function to write."""

    parents: list[str] = field(default_factory=list)
    header: str | None = None          # "def priority(item: float, bins: np.ndarray) -> np.ndarray:"
    name: str | None = None
    params: list[str] = field(default_factory=list)


def _function_blocks(text: str) -> list[str]:
    """Every top-level ``def`` in ``text`` with its indented body, as parseable source."""
    lines = text.replace("\t", "    ").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if not _DEF.match(lines[i]):
            i += 1
            continue
        j = i + 1
        # the header may span lines until the line ending with ':'
        while j < len(lines) and not lines[j - 1].rstrip().endswith(":") and j - i < 20:
            j += 1
        while j < len(lines) and (not lines[j].strip() or lines[j][:1] in (" ",)):
            if lines[j].strip().startswith("```"):
                break
            j += 1
        block = "\n".join(lines[i:j]).rstrip()
        blocks.append(block)
        i = j
    return blocks


def _header_of(block: str) -> tuple[str, str, list[str]] | None:
    """(header text, name, parameter names) of a function block, parsed with a dummy body."""
    lines = block.splitlines()
    for k in range(len(lines)):
        if lines[k].rstrip().endswith(":"):
            header = "\n".join(lines[: k + 1])
            try:
                node = ast.parse(header + "\n    pass").body[0]
            except SyntaxError:
                continue
            if isinstance(node, ast.FunctionDef):
                params = [a.arg for a in node.args.posonlyargs + node.args.args]
                return header, node.name, params
    return None


def _has_real_body(block: str) -> bool:
    try:
        node = ast.parse(block).body[0]
    except SyntaxError:
        return False
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return bool(body) and not (len(body) == 1 and isinstance(body[0], ast.Pass))


def parse_prompt(prompt: Any) -> PromptPrograms:
    """Parents (functions with a body) and the target header (the last ``def`` of the prompt)."""
    text = prompt_text(prompt)
    blocks = _function_blocks(text)
    found = PromptPrograms()
    for block in blocks:
        if _has_real_body(block):
            found.parents.append(block)
    if blocks:
        head = _header_of(blocks[-1])
        if head is not None:
            found.header, found.name, found.params = head
    return found


# -- programs as weighted feature terms ------------------------------------------

def _norm(expr: str) -> str:
    return ast.unparse(ast.parse(expr, mode="eval"))


def _shape_key(expr: str) -> str:
    """The expression with its numbers blanked: a perturbed feature keeps its name."""
    return re.sub(r"(?<![\w.])\d+(\.\d*)?(e-?\d+)?", "#", _norm(expr))


def _round(x: float) -> float:
    return float(f"{x:.4g}")


@dataclass
class TermProgram:
    """``score = sum_k coef_k * expr_k`` after the task's preamble."""

    terms: list[tuple[float, str]]

    def key(self) -> tuple:
        return tuple((c, _norm(e)) for c, e in self.terms)


def _split_term(node: ast.expr) -> tuple[float, str] | None:
    """``c * (expr)`` -> (c, expr); None for any other shape."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        coef = _number(node.left)
        if coef is not None:
            return coef, ast.unparse(node.right)
    return None


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _preamble(lib: TaskLibrary, params: list[str]) -> list[str]:
    names = {f"p{i}": p for i, p in enumerate(params)}
    return [line.format(**names) for line in lib.preamble]


def read_terms(source: str, lib: TaskLibrary, params: list[str]) -> TermProgram | None:
    """The terms of a program in the sampler's shape, or of a one-line ``return expr``
    over the parameters (read as one term); None for anything else."""
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.FunctionDef):
        return None
    body = _strip_docstring(node.body)
    pre = [ast.dump(ast.parse(line).body[0]) for line in _preamble(lib, params)]
    tail = len(lib.finish)
    if len(body) >= len(pre) + 1 + tail and [ast.dump(s) for s in body[: len(pre)]] == pre:
        rest = body[len(pre):]
        if ast.unparse(rest[0]) == "score = np.zeros(n)" and isinstance(rest[-1], ast.Return):
            terms = []
            for stmt in rest[1:len(rest) - tail]:
                if not (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add)
                        and isinstance(stmt.target, ast.Name) and stmt.target.id == "score"):
                    return None
                term = _split_term(stmt.value)
                if term is None:
                    return None
                terms.append(term)
            return TermProgram(terms)
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        names = {n.id for n in ast.walk(body[0].value) if isinstance(n, ast.Name)}
        # the preamble rebinds the parameters to float arrays of the same values
        if names <= set(params) | {"np"}:
            return TermProgram([(1.0, ast.unparse(body[0].value))])
    return None


def render(header: str, lib: TaskLibrary, params: list[str], program: TermProgram) -> str:
    lines = [header]
    lines += ["    " + line for line in _preamble(lib, params)]
    lines.append("    score = np.zeros(n)")
    for coef, expr in program.terms:
        lines.append(f"    score += {_round(coef)!r} * ({_norm(expr)})")
    lines += ["    " + line for line in lib.finish]
    return "\n".join(lines)


# -- numeric constants -----------------------------------------------------------

class _Constants(ast.NodeVisitor):
    """Numeric constants worth tuning: not indices, keyword arguments, or 0 and 1 in integer form."""

    def __init__(self):
        self.found: list[ast.Constant] = []

    def visit_Subscript(self, node):
        self.visit(node.value)  # never the index

    def visit_keyword(self, node):
        pass

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return
        if isinstance(v, int) and v in (0, 1):
            return
        if abs(v) < 1e-6:  # zeros and epsilons guard divisions, they are not parameters
            return
        self.found.append(node)


def _perturb_tree(tree: ast.AST, rng: np.random.Generator, k_max: int = 3) -> int:
    """Multiply 1..k_max tunable constants of ``tree`` by log-normal factors, in place."""
    visitor = _Constants()
    visitor.visit(tree)
    if not visitor.found:
        return 0
    k = int(rng.integers(1, min(k_max, len(visitor.found)) + 1))
    for idx in rng.choice(len(visitor.found), size=k, replace=False):
        node = visitor.found[int(idx)]
        factor = float(np.exp(rng.normal(0.0, 0.45)))
        if isinstance(node.value, int):
            new = int(round(node.value * factor))
            node.value = new if new != node.value else node.value + (1 if factor >= 1 else -1)
        else:
            node.value = _round(node.value * factor)
    return k


# -- the generic path: varying any program ------------------------------------------

class _Edits(ast.NodeVisitor):
    """Where a program can be varied without knowing its task: divisions (a shift of the
    numerator or denominator changes the ranking a ratio gives), subtractions (a weight on
    the subtrahend), both numeric wherever the original was, and loops (the order in which
    a first-found or tie-breaking rule meets the candidates)."""

    def __init__(self):
        self.divisions: list[ast.BinOp] = []
        self.subtractions: list[ast.BinOp] = []
        self.loops: list[ast.For] = []

    def visit_For(self, node):
        self.loops.append(node)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        self.visit(node.value)  # never the index

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Div):
            self.divisions.append(node)
        elif isinstance(node.op, ast.Sub) and not isinstance(node.right, ast.Constant):
            self.subtractions.append(node)
        self.generic_visit(node)


def _vary(parent: str, name: str | None, rng: np.random.Generator) -> tuple[str, str]:
    """A variant of ``parent`` (one function): its constants retuned, a division shifted, a
    subtraction weighted or a loop reordered, one or two edits; with nothing to vary, the
    parent as it is."""
    tree = ast.parse(parent)
    func = tree.body[0]
    func.body = _strip_docstring(func.body) or [ast.Pass()]
    if name and isinstance(func, ast.FunctionDef):
        func.name = name
    done = []
    for _ in range(int(rng.integers(1, 3))):
        edits = _Edits()
        edits.visit(func)
        constants = _Constants()
        constants.visit(func)
        kinds = [k for k, there in (("constants", constants.found), ("division", edits.divisions),
                                    ("subtraction", edits.subtractions), ("order", edits.loops)) if there]
        if not kinds:
            break
        kind = kinds[int(rng.integers(len(kinds)))]
        if kind == "constants":
            _perturb_tree(func, rng)
        elif kind == "division":
            node = edits.divisions[int(rng.integers(len(edits.divisions)))]
            shift = ast.Constant(_round(float(np.exp(rng.uniform(np.log(0.05), np.log(20.0))))))
            side = "left" if rng.random() < 0.5 else "right"
            operand = getattr(node, side)
            if isinstance(operand, ast.BinOp) and isinstance(operand.op, ast.Add) \
                    and isinstance(operand.right, ast.Constant):
                operand.right = shift  # shifted before: a new shift, not a second one
            else:
                setattr(node, side, ast.BinOp(operand, ast.Add(), shift))
        elif kind == "subtraction":
            node = edits.subtractions[int(rng.integers(len(edits.subtractions)))]
            weight = ast.Constant(_round(float(np.exp(rng.normal(0.0, 0.5)))))
            node.right = ast.BinOp(weight, ast.Mult(), node.right)
        else:
            loop = edits.loops[int(rng.integers(len(edits.loops)))]
            it = loop.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "sorted":
                flag = next((k for k in it.keywords if k.arg == "reverse"), None)
                if flag is None:
                    it.keywords.append(ast.keyword("reverse", ast.Constant(True)))
                else:
                    flag.value = ast.UnaryOp(ast.Not(), flag.value) if not isinstance(flag.value, ast.Constant) \
                        else ast.Constant(not flag.value.value)
            else:
                loop.iter = ast.Call(ast.Name("sorted", ast.Load()), [it],
                                     [ast.keyword("reverse", ast.Constant(bool(rng.random() < 0.5)))])
        done.append({"constants": "constant perturbation", "division": "shifted ratio",
                     "subtraction": "weighted difference", "order": "reordered loop"}[kind])
    return ast.unparse(ast.fix_missing_locations(tree)), " and ".join(done) or "unchanged copy"


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
        if not _warned.is_set():
            _warned.set()
            log.warning(NO_LLM_NOTICE)

    def describe(self) -> str:
        return f"{NO_LLM_NOTICE} (seed {self.seed})"

    # -- the host interface --------------------------------------------------------
    def draw_sample(self, prompt: str | Any, *args, operator: str | None = None, **kwargs) -> str:
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
        lib = library_for_params(found.params, declared=False)
        if lib is None and found.parents:
            head = _header_of(found.parents[-1])
            lib = library_for_params(head[2], declared=False) if head else None
        if lib is None and self.task is not None:
            from .offline_library import LIBRARIES
            lib = LIBRARIES.get(self.task)
        if lib is None:
            # any other task: the one named is the authority (its library, or none: the generic
            # path), else the registered task whose heuristic takes these parameters
            lib = library_for_task(self.task) if self.task is not None else library_for_params(found.params)
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
                source, how = _vary(sources[int(rng.integers(len(sources)))], name, rng)
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
        func.body = _strip_docstring(func.body) or [ast.Pass()]
        _perturb_tree(tree, rng)
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
        _perturb_tree(tree, rng)
        terms = [_split_term(stmt.value) for stmt in tree.body]
        if any(t is None for t in terms):
            return self._insert(parent, lib, rng), "term insertion"
        return TermProgram(terms), "parameter perturbation"

    def _feature_for(self, expr: str, lib: TaskLibrary) -> Feature | None:
        key = _shape_key(expr)
        return next((f for f in lib.features if _shape_key(f.expr) == key), None)

    def _insert(self, parent: TermProgram, lib: TaskLibrary, rng: np.random.Generator) -> TermProgram:
        used = {_shape_key(e) for _, e in parent.terms}
        choices = [f for f in lib.features if _shape_key(f.expr) not in used] or list(lib.features)
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
        in_a = {_shape_key(e): (c, e) for c, e in a.terms}
        in_b = {_shape_key(e): (c, e) for c, e in b.terms}
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
            parts.append(f"{_round(coef):+g} x {feature.name if feature else 'inherited term'}")
        return "score = " + " ".join(parts)
