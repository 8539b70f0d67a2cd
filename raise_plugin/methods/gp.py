"""GP: typed tree genetic programming of priority functions (DEAP), the classic LLM-free baseline.

Trees over the task's features (``gp_trees``; the features read by ``gp_probe``) are rendered to
the template's function (``gp_render``) and go through the same path as any sampled program: the
engine and its judge score them, the host's population keeps them, the run directory records
them and ``robust()`` wraps the method.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import math
import operator
import random
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

from llm4ad.base import Function, TextFunctionProgramConverter

from ..errors import BadArgument, unexpected_keyword
from . import gp_probe, gp_render, gp_trees
from .base import MethodBase
from .population import finite
from .sampler import TracingSampler

__all__ = ["GP", "Offspring", "TREE_PREFIX"]

TREE_PREFIX = "GP tree: "  # a sample's "algorithm": the tree it was rendered from, read back on resume

_whole = lambda v, low: isinstance(v, int) and not isinstance(v, bool) and v >= low  # noqa: E731
_pair = lambda v: isinstance(v, (tuple, list)) and len(v) == 2  # noqa: E731
# each option: whether the value given fits (read from all of them), and what it must be
OPTION_CHECKS = {
    "tournament_size": (lambda g: _whole(g["tournament_size"], 1), "a whole number >= 1"),
    "crossover_rate": (lambda g: 0.0 <= float(g["crossover_rate"]) <= 1.0, "a number from 0 to 1"),
    "max_height": (lambda g: _whole(g["max_height"], 1), "a whole number >= 1"),
    "max_size": (lambda g: _whole(g["max_size"], 1), "a whole number >= 1"),
    "max_tries": (lambda g: _whole(g["max_tries"], 1), "a whole number >= 1"),
    "init_height": (lambda g: _pair(g["init_height"]) and _whole(g["init_height"][0], 0)
                    and _whole(g["init_height"][1], g["init_height"][0]) and g["init_height"][1] <= g["max_height"]
                    and g["init_height"][0] < g["max_size"],  # a tree of height h has h + 1 nodes or more
                    "(low, high), whole numbers with 0 <= low <= high <= max_height and low < max_size"),
    "mutation_height": (lambda g: _pair(g["mutation_height"]) and _whole(g["mutation_height"][0], 0)
                        and _whole(g["mutation_height"][1], g["mutation_height"][0]),
                        "(low, high), whole numbers with 0 <= low <= high"),
    "constants": (lambda g: _pair(g["constants"]) and 0 < float(g["constants"][0]) <= float(g["constants"][1])
                  < math.inf, "(low, high), numbers with 0 < low <= high"),
}
OPTIONS = frozenset(OPTION_CHECKS) | {"seed"}
# what GP passes on to the host's constructor (MethodBase's keywords and the host evaluator's start method)
HOST_KEYWORDS = frozenset({"resume_mode", "debug_mode", "multi_thread_or_process_eval", "fork_proc"})

# DEAP draws from Python's module-level ``random``; the method swaps its own state in around
# every draw, under this lock, so runs are seeded and two GP runs in one process do not mix.
_RANDOM_LOCK = threading.Lock()


@dataclass(frozen=True)
class Offspring:
    """A tree rendered to the template's function: what GP hands the host instead of a prompt."""

    tree: str        # DEAP's prefix form (the genome)
    source: str      # the function, simplified
    operator: str    # init, crossover or mutation

    @property
    def thought(self) -> str:
        return TREE_PREFIX + self.tree


class _TreeSampler(TracingSampler):
    """The host's sampler for GP: the 'prompt' is an ``Offspring``; no LLM is asked."""

    def get_thought_and_function(self, prompt):
        func = TextFunctionProgramConverter.text_to_function(prompt.source)
        if func is not None:
            for key, value in getattr(self._local, "tags", {}).items():
                setattr(func, key, value)
        self._local.last = func
        return prompt.thought, func


class GP(MethodBase):
    """Strongly typed tree GP with the host's constructor shape (``MethodBase``'s arguments).

    Each generation breeds ``pop_size`` offspring at once: a parent by tournament
    (``tournament_size``), then one-point crossover with a second parent (``crossover_rate``)
    or else one mutation (uniform subtree, node replacement, a constant redrawn or scaled, shrink,
    insert); a child over ``max_height`` or ``max_size`` nodes is a parent again (DEAP's
    ``staticLimit``). A child whose simplified source was sampled before is bred again (up to
    ``max_tries``). Survival keeps the ``pop_size`` best of parents and offspring, one per score
    (``distinct_scores``), then the best of the rest. The first
    population is ramped half-and-half with heights ``init_height``; constants have a random sign
    and a magnitude log-uniform in ``constants``.
    """

    method_name = "gp"
    asks_llm = False  # its llm argument keeps the host's constructor shape; nothing is asked of it

    def __init__(self, llm, evaluation, profiler=None, max_generations: Optional[int] = None,
                 max_sample_nums: Optional[int] = 100, pop_size: Optional[int] = None, num_samplers: int = 1,
                 num_evaluators: int = 1, *, seed: int = 0, tournament_size: int = 3, crossover_rate: float = 0.5,
                 max_height: int = 7, max_size: int = 40, init_height: tuple[int, int] = (1, 3),
                 mutation_height: tuple[int, int] = (0, 2), constants: tuple[float, float] = (0.1, 100.0),
                 max_tries: int = 50, **kwargs):
        gp_trees.require_deap()
        task = getattr(evaluation, "task", None)
        if task is None:
            raise TypeError("GP reads its features from evaluation.task (a task's TaskEvaluation), "
                            f"got {type(evaluation).__name__}")
        extra = sorted(set(kwargs) - HOST_KEYWORDS)
        if extra:
            raise unexpected_keyword("GP", extra[0], OPTIONS | HOST_KEYWORDS)
        given = dict(tournament_size=tournament_size, crossover_rate=crossover_rate, max_height=max_height,
                     max_size=max_size, max_tries=max_tries, init_height=init_height, mutation_height=mutation_height,
                     constants=constants)
        for name, (ok, takes) in OPTION_CHECKS.items():
            try:
                fits = bool(ok(given))
            except (TypeError, ValueError, IndexError):
                fits = False
            if not fits:
                raise BadArgument(f"GP: {name}: must be {takes}, got {given[name]!r}")
        super().__init__(llm, evaluation, profiler, max_generations, max_sample_nums, pop_size, num_samplers,
                         num_evaluators, seed=seed, **kwargs)
        self.signature = gp_probe.probe_signature(task)
        self.tournament_size = int(tournament_size)
        self.crossover_rate = float(crossover_rate)
        self.max_height, self.max_size = int(max_height), int(max_size)
        self.init_height, self.mutation_height = tuple(init_height), tuple(mutation_height)
        self.constants = (float(constants[0]), float(constants[1]))
        self.max_tries = int(max_tries)
        self._pset = gp_trees.primitive_set(self.signature, self.constants)
        self._toolbox = self._make_toolbox()
        self._sampler = _TreeSampler(self._llm, self._template_program_str)
        self._random_state: random.Random | None = None  # seeded on first use (robust() sets the seed late)
        self._seen: set[str] = set()         # digests of every source bred (and so sampled)
        self._trees: dict[str, object] = {}  # program text -> tree, for parents
        self._state_samples = 0              # samples when the loaded state was saved
        self._bred_again = 0                 # offspring a resumed run breeds again but had sampled already
        self.duplicates_bred = 0

    # -- DEAP ---------------------------------------------------------------------------
    def _make_toolbox(self):
        from deap import base as deap_base
        from deap import gp as deap_gp

        box = deap_base.Toolbox()
        box.register("expr_mut", deap_gp.genHalfAndHalf, min_=self.mutation_height[0], max_=self.mutation_height[1])
        box.register("mate", _crossover)
        box.register("mut_subtree", deap_gp.mutUniform, expr=box.expr_mut, pset=self._pset)
        box.register("mut_node", deap_gp.mutNodeReplacement, pset=self._pset)
        box.register("mut_constant", deap_gp.mutEphemeral, mode="one")
        box.register("mut_shrink", deap_gp.mutShrink)
        box.register("mut_insert", deap_gp.mutInsert, pset=self._pset)
        box.register("mut_tune", _tune_constant)
        for name in ("mate", "mut_subtree", "mut_node", "mut_constant", "mut_shrink", "mut_insert", "mut_tune"):
            box.decorate(name, deap_gp.staticLimit(key=operator.attrgetter("height"), max_value=self.max_height))
            box.decorate(name, deap_gp.staticLimit(key=len, max_value=self.max_size))
        return box

    @property
    def _random(self) -> random.Random:
        """The method's own ``random`` state, seeded from ``seed`` on first use."""
        if self._random_state is None:
            self._random_state = random.Random(self.seed)
        return self._random_state

    @contextlib.contextmanager
    def _own_random(self):
        """Python's ``random`` set to this method's state while DEAP draws, then put back."""
        with _RANDOM_LOCK:
            outer = random.getstate()
            random.setstate(self._random.getstate())
            try:
                yield
            finally:
                self._random.setstate(random.getstate())
                random.setstate(outer)

    # -- trees and sources --------------------------------------------------------------
    def render(self, tree, operator: str = "init") -> Offspring:
        """The function a tree stands for, simplified, as the template's function."""
        node = gp_render.simplify(gp_trees.to_node(tree), self.signature.vectors)
        func = TextFunctionProgramConverter.text_to_function(self._template_program_str)
        func.body = gp_render.render_body(node, self.signature)
        return Offspring(str(tree), str(func), operator)

    def _tree_of(self, func: Function):
        """The tree a member was rendered from (its recorded 'algorithm'), parsed once."""
        from deap import gp as deap_gp

        key = self._program_text(func)
        tree = self._trees.get(key)
        if tree is None:
            text = str(getattr(func, "algorithm", "") or "")
            if not text.startswith(TREE_PREFIX):
                return None
            tree = deap_gp.PrimitiveTree.from_string(text[len(TREE_PREFIX):], self._pset)
            self._trees[key] = tree
        return tree

    @staticmethod
    def _digest(source: str) -> str:
        return hashlib.sha1(source.encode()).hexdigest()[:16]

    def _fresh(self, make) -> Offspring:
        """An offspring from ``make()`` whose source was not sampled before (else the last one bred)."""
        for _ in range(self.max_tries):
            child = make()
            digest = self._digest(child.source)
            if digest not in self._seen:
                break
            self.duplicates_bred += 1
        self._seen.add(digest)
        return child

    # -- breeding -----------------------------------------------------------------------
    def _new_tree(self) -> Offspring:
        from deap import gp as deap_gp

        low, high = self.init_height
        # the size limit holds from the start, as the height limit does: lower trees where none of a height fits
        # (down to height 0, one node, which always fits)
        for height in range(high, -1, -1):
            for _ in range(self.max_tries):
                tree = deap_gp.PrimitiveTree(deap_gp.genHalfAndHalf(self._pset, min(low, height), height))
                if len(tree) <= self.max_size:
                    return self.render(tree, "init")
        return self.render(tree, "init")

    def _parents(self) -> list[tuple[Function, object]]:
        """(member, tree) of the usable members, best first, ties by program text (order-free)."""
        members = [f for f in self._members() if finite(f)]
        members.sort(key=lambda f: (-f.score, self._program_text(f)))
        pairs = [(f, self._tree_of(f)) for f in members]
        return [(f, t) for f, t in pairs if t is not None]

    def _tournament(self, parents):
        entrants = random.sample(range(len(parents)), min(self.tournament_size, len(parents)))
        return parents[min(entrants)][1]  # parents are best first

    def _child(self, parents) -> Offspring:
        from deap import gp as deap_gp

        copy = deap_gp.PrimitiveTree
        if len(parents) >= 2 and random.random() < self.crossover_rate:
            first, second = self._tournament(parents), self._tournament(parents)
            child = self._toolbox.mate(copy(first), copy(second))[0]
            return self.render(child, "crossover")
        box = self._toolbox
        mutate = random.choice((box.mut_subtree, box.mut_node, box.mut_constant, box.mut_shrink, box.mut_insert,
                                box.mut_tune))
        return self.render(mutate(copy(self._tournament(parents)))[0], "mutation")

    def _breed(self) -> list[Offspring]:
        """A generation's offspring, all bred before any is scored (a resumed run breeds them again)."""
        parents = self._parents()
        with self._own_random():
            if not parents:
                return [self._fresh(self._new_tree) for _ in range(self._pop_size)]
            return [self._fresh(lambda: self._child(parents)) for _ in range(self._pop_size)]

    # -- survival -------------------------------------------------------------------------
    def _survivors(self):
        return distinct_scores

    # -- the host's loops -----------------------------------------------------------------
    def _init_prompt(self) -> Offspring:
        with self._own_random():
            return self._fresh(self._new_tree)

    def _sample(self, prompt, operator: str, **tags):
        if isinstance(prompt, Offspring) and self._bred_again > 0:
            self._bred_again -= 1  # a resumed run: this offspring was sampled and recorded before the stop
            return None
        return super()._sample(prompt, operator, **tags)

    def _iteratively_init_population(self):
        failures = 0
        while self._population.generation == 0 and self._tot_sample_nums < self._initial_sample_nums_max:
            try:
                offspring = self._init_prompt()
                self._sample(offspring, offspring.operator)
                failures = 0
            except Exception as exc:  # an evaluation failure: count, log, go on
                failures += 1
                if self._failed(exc, "init", failures):
                    break

    def _evolve_round(self) -> None:
        for offspring in self._breed():
            if not self._continue_loop():
                return
            self._sample(offspring, offspring.operator)

    def run(self):
        # a resumed run breeds from the saved state again: what was sampled since is not sampled twice
        self._bred_again = max(0, self._tot_sample_nums - self._state_samples)
        return super().run()

    def _after_sample(self, func: Function) -> None:
        text = str(func.algorithm or "")
        if text.startswith(TREE_PREFIX):
            self._tree_of(func)

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        version, internal, gauss = self._random.getstate()
        state.update(random=[version, list(internal), gauss], seen=sorted(self._seen),
                     samples=int(self._tot_sample_nums), duplicates_bred=self.duplicates_bred)
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        if state.get("random") is not None:
            version, internal, gauss = state["random"]
            self._random.setstate((version, tuple(internal), gauss))
        self._seen = set(state.get("seen", ()))
        self._state_samples = int(state.get("samples", 0))
        self.duplicates_bred = int(state.get("duplicates_bred", 0))


def _tune_constant(tree):
    """One constant scaled by ``exp(N(0, 0.5))`` (two significant digits): DEAP's ``mutEphemeral``
    only redraws a constant, which cannot refine a threshold that is nearly right."""
    from deap import gp as deap_gp

    at = [i for i, node in enumerate(tree) if isinstance(node, deap_gp.Terminal) and not isinstance(node.value, str)]
    if at:
        i = random.choice(at)
        node = copy.copy(tree[i])
        node.value = float(f"{node.value * math.exp(random.gauss(0.0, 0.5)):.2g}")
        tree[i] = node
    return tree,


def distinct_scores(pool: list, n: int) -> list:
    """The ``n`` best members with one per score, then the best of the rest if places remain.

    Trees that score alike mostly decide alike (``item - bins`` and ``-bins`` are both best
    fit); keeping one of each, as llm4ad's EoH population does, keeps the population from
    filling with one rule written many ways."""
    ranked = sorted(pool, key=lambda f: f.score, reverse=True)
    kept, seen = [], set()
    for f in ranked:
        key = round(float(f.score), 12)
        if key not in seen:
            seen.add(key)
            kept.append(f)
    rest = [f for f in ranked if all(f is not k for k in kept)]
    return (kept + rest)[:n]


def _crossover(first, second):
    """DEAP's ``cxOnePoint`` for typed trees, the common types taken in a fixed order (DEAP draws
    from a ``set`` of types, whose order follows their hashes and so varies between processes)."""
    if len(first) < 2 or len(second) < 2:
        return first, second
    at_first, at_second = defaultdict(list), defaultdict(list)
    for index, node in enumerate(first[1:], 1):
        at_first[node.ret].append(index)
    for index, node in enumerate(second[1:], 1):
        at_second[node.ret].append(index)
    common = sorted(set(at_first) & set(at_second), key=lambda t: t.__name__)
    if common:
        kind = random.choice(common)
        slice1 = first.searchSubtree(random.choice(at_first[kind]))
        slice2 = second.searchSubtree(random.choice(at_second[kind]))
        first[slice1], second[slice2] = second[slice2], first[slice1]
    return first, second
