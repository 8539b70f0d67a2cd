"""PartEvo (Hu et al., 2025): niche-based evolution in a feature space of heuristics, as a host-compatible method.

Niches: every member gets features from cheap local signals (AST/token statistics of its
code and its per-instance metric vector), standardised, reduced by PCA (numpy SVD) and
clustered by seeded k-means. Each step draws a niche (uniform, or tilted toward niches
with better best scores), a parent inside it by tournament, and one of four operators
(reflection then rewrite; summary-guided; cross-niche crossover; local-global-elite; named as
in ``raise_plugin.llm.operators``).
The offspring joins its parent's niche; survival keeps every niche's best member, then
the best scores; niches are rebuilt every ``rebuild_every`` generations (see docs/methods.md).
"""
from __future__ import annotations

import ast
import math
import zlib
from typing import Optional, Sequence

import numpy as np
from llm4ad.base import Function

from . import partevo_prompts as prompts
from .base import MethodBase, choose
from .population import finite

__all__ = ["PartEvo", "OPERATORS", "code_features", "build_niches", "kmeans", "pca"]

OPERATORS = ("reflection_rewrite", "summary_guided", "cross_niche", "local_global_elite")
ALLOCATIONS = ("tilted", "uniform")
_BUCKETS = 16  # hashed bag of identifiers


# --------------------------------------------------------------------------- features
def code_features(code: str) -> np.ndarray:
    """AST/token statistics of a function: size, depth, constants, operators, calls, branches,
    and a hashed bag (16 buckets, shares) of the names and attributes it uses."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return np.zeros(13 + _BUCKETS)
    nodes = list(ast.walk(tree))

    def depth(node, d=0):
        children = list(ast.iter_child_nodes(node))
        return d if not children else max(depth(c, d + 1) for c in children)

    def count(*types):
        return float(sum(isinstance(n, types) for n in nodes))

    binops = [n.op for n in nodes if isinstance(n, ast.BinOp)]
    constants = [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, (int, float))
                 and not isinstance(n.value, bool)]
    names = [n.id for n in nodes if isinstance(n, ast.Name)] + [n.attr for n in nodes if isinstance(n, ast.Attribute)]
    stats = [
        len(nodes), depth(tree), len(code.splitlines()), len(constants),
        float(np.mean([math.log10(abs(c) + 1e-9) for c in constants])) if constants else 0.0,
        sum(isinstance(o, (ast.Add, ast.Sub)) for o in binops), sum(isinstance(o, (ast.Mult, ast.Div)) for o in binops),
        sum(isinstance(o, ast.Pow) for o in binops), count(ast.Call), count(ast.Compare, ast.BoolOp),
        count(ast.If, ast.IfExp), count(ast.For, ast.While, ast.comprehension), count(ast.Subscript),
    ]
    bag = np.zeros(_BUCKETS)
    for name in names:
        bag[zlib.crc32(name.encode()) % _BUCKETS] += 1.0
    if bag.sum() > 0:
        bag /= bag.sum()
    return np.concatenate([np.asarray(stats, dtype=float), bag])


def _standardise(block: np.ndarray) -> np.ndarray:
    """Columns to zero mean and unit variance (constant columns dropped), the block scaled so its
    total variance is 1 whatever its width (code and score blocks weigh the same)."""
    if block.size == 0:
        return block.reshape(block.shape[0], 0)
    std = block.std(axis=0)
    keep = std > 1e-12
    if not keep.any():
        return np.zeros((block.shape[0], 0))
    z = (block[:, keep] - block[:, keep].mean(axis=0)) / std[keep]
    return z / math.sqrt(z.shape[1])


def pca(x: np.ndarray, components: int) -> np.ndarray:
    """The first ``components`` principal-component scores of ``x`` (numpy SVD)."""
    if x.shape[1] == 0:
        return np.zeros((x.shape[0], 0))
    centred = x - x.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    r = int(min(components, int((s > 1e-9 * max(s[0], 1e-300)).sum()))) if s.size else 0
    return u[:, :r] * s[:r]


def kmeans(x: np.ndarray, k: int, rng: np.random.Generator, restarts: int = 4, iterations: int = 50) -> np.ndarray:
    """Labels of seeded k-means (k-means++ seeding, Lloyd iterations, best of ``restarts``)."""
    n = x.shape[0]
    if k >= n:
        return np.arange(n)
    if x.shape[1] == 0:
        return np.arange(n) % k
    best_labels, best_inertia = None, np.inf
    for _ in range(restarts):
        centres = [x[int(rng.integers(n))]]
        for _ in range(1, k):
            d2 = np.min([((x - c) ** 2).sum(axis=1) for c in centres], axis=0)
            if d2.sum() <= 0:
                centres.append(x[int(rng.integers(n))])
            else:
                centres.append(x[int(rng.choice(n, p=d2 / d2.sum()))])
        centres = np.array(centres)
        labels = np.zeros(n, dtype=int)
        for _ in range(iterations):
            d2 = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
            new = d2.argmin(axis=1)
            for j in range(k):  # an emptied cluster takes the point farthest from its centre
                if not (new == j).any():
                    far = int(d2[np.arange(n), new].argmax())
                    new[far] = j
            if np.array_equal(new, labels) and _ > 0:
                break
            labels = new
            centres = np.array([x[labels == j].mean(axis=0) for j in range(k)])
        inertia = float(((x - centres[labels]) ** 2).sum())
        if inertia < best_inertia - 1e-12:
            best_labels, best_inertia = labels.copy(), inertia
    return best_labels


def build_niches(code_block: np.ndarray, score_block: np.ndarray | None, k: int, rng: np.random.Generator,
                 components: int = 3) -> tuple[np.ndarray, int]:
    """Labels (0..k-1) of the rows and the PCA dimension used: standardise each block, PCA, k-means."""
    parts = [_standardise(code_block)]
    if score_block is not None and score_block.size:
        parts.append(_standardise(score_block))
    z = np.concatenate(parts, axis=1)
    reduced = pca(z, components)
    return kmeans(reduced, k, rng), reduced.shape[1]


# --------------------------------------------------------------------------- the method
class PartEvo(MethodBase):
    """PartEvo with the host's constructor shape.

    Args (besides ``MethodBase``'s):
        num_niches: k of k-means (fewer when the population has fewer usable members).
        rebuild_every: generations between niche rebuilds (the niches are also rebuilt when a
            usable member has no niche, e.g. after a resume).
        niche_allocation: ``"tilted"`` (default): niche j is drawn with probability
            proportional to ``1 / (r_j + K)``, ``r_j`` the rank of its best score among the K
            non-empty niches (EoH's rank weights); ``"uniform"``: equal chances.
        operators: the operators in use, drawn uniformly per step (default all four).
        tournament_size: parent selection inside a niche.
        summary_every: generations between refreshes of the global summary.
        summary_size: elites and poor programs shown to the summary.
        pca_components: PCA dimension before k-means.
        use_score_features: add the per-instance metric vector to the code features.
    """

    method_name = "partevo"

    def __init__(self, llm, evaluation, profiler=None, max_generations: Optional[int] = None,
                 max_sample_nums: Optional[int] = 100, pop_size: Optional[int] = None, num_samplers: int = 1,
                 num_evaluators: int = 1, *, seed: int = 0, num_niches: int = 3, rebuild_every: int = 3,
                 niche_allocation: str = "tilted", operators: Sequence[str] = OPERATORS, tournament_size: int = 2,
                 summary_every: int = 3, summary_size: int = 3, pca_components: int = 3,
                 use_score_features: bool = True, **kwargs):
        unknown = [op for op in operators if op not in OPERATORS]
        if unknown or not operators:
            raise ValueError(f"operators {list(operators)!r}: choose one or more of {', '.join(OPERATORS)}")
        if niche_allocation not in ALLOCATIONS:
            raise ValueError(f"niche_allocation must be one of {', '.join(ALLOCATIONS)}, got {niche_allocation!r}")
        for name, value in (("num_niches", num_niches), ("rebuild_every", rebuild_every),
                            ("tournament_size", tournament_size), ("summary_every", summary_every),
                            ("summary_size", summary_size), ("pca_components", pca_components)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        super().__init__(llm, evaluation, profiler, max_generations, max_sample_nums, pop_size, num_samplers,
                         num_evaluators, seed=seed, **kwargs)
        self.num_niches = num_niches
        self.rebuild_every = rebuild_every
        self.niche_allocation = niche_allocation
        self.operators = tuple(operators)
        self.tournament_size = tournament_size
        self.summary_every = summary_every
        self.summary_size = summary_size
        self.pca_components = pca_components
        self.use_score_features = use_score_features
        # state
        self.archive: dict[str, tuple[str, float]] = {}  # program text -> (function code, score at sampling)
        self.global_summary = ""
        self.global_summary_generation: int | None = None
        self.niche_generation: int | None = None
        self.niche_history: list[dict] = []

    # -- survival: every niche keeps its best -------------------------------------------
    def _survivors(self):
        def keep_niche_elites(pool: list, n: int) -> list:
            ranked = sorted(pool, key=lambda f: f.score, reverse=True)
            kept, seen = [], set()
            for f in ranked:
                niche = getattr(f, "_niche", None)
                if niche is not None and niche not in seen and finite(f):
                    seen.add(niche)
                    kept.append(f)
            kept = kept[:n]
            chosen = {id(f) for f in kept}
            kept += [f for f in ranked if id(f) not in chosen][:n - len(kept)]
            return sorted(kept, key=lambda f: f.score, reverse=True)

        return keep_niche_elites

    def _init_prompt(self) -> str:
        return prompts.init(self._task_description_str, self.code_of(self._function_to_evolve), self._header)

    def _after_sample(self, func: Function) -> None:
        if finite(func):
            with self._state_lock:
                self.archive.setdefault(self._program_text(func), (self.code_of(func), float(func.score)))

    # -- niches -------------------------------------------------------------------
    def niches(self) -> dict[int, list[Function]]:
        """Niche -> its usable members (best first), from the current population."""
        out: dict[int, list[Function]] = {}
        for f in self._usable():
            niche = getattr(f, "_niche", None)
            if niche is not None:
                out.setdefault(int(niche), []).append(f)
        return dict(sorted(out.items()))

    def _needs_rebuild(self, members: list[Function]) -> bool:
        g = self._population.generation
        return (self.niche_generation is None or g - self.niche_generation >= self.rebuild_every
                or any(getattr(f, "_niche", None) is None for f in members))

    def rebuild_niches(self) -> None:
        """Cluster the usable members into niches and label them (niche 0 holds the best score)."""
        with self._state_lock:
            members = self._usable()
            if not members:
                return
            k = min(self.num_niches, len(members))
            code_block = np.array([code_features(self.code_of(f)) for f in members])
            score_block = None
            if self.use_score_features:
                rows = [self._metrics_of(f) for f in members]
                width = max((len(r) for r in rows if r is not None), default=0)
                if width:
                    score_block = np.array([r if r is not None and len(r) == width else np.full(width, np.nan)
                                            for r in rows])
                    worst = np.nanmax(score_block, axis=0)
                    score_block = np.where(np.isnan(score_block), worst, score_block)
            labels, dims = build_niches(code_block, score_block, k, self.rng, self.pca_components)
            # canonical order: niche 0 holds the best member, and so on
            order: list[int] = []
            for label in labels:  # members are best first
                if int(label) not in order:
                    order.append(int(label))
            relabel = {old: new for new, old in enumerate(order)}
            for f, label in zip(members, labels):
                f._niche = relabel[int(label)]
            self.niche_generation = self._population.generation
            sizes = [int((labels == old).sum()) for old in order]
            self.niche_history.append({"generation": self.niche_generation, "samples": self._tot_sample_nums,
                                       "sizes": sizes, "best": [float(members[list(labels).index(old)].score)
                                                                for old in order],
                                       "features": int(code_block.shape[1] + (0 if score_block is None
                                                                               else score_block.shape[1])),
                                       "components": int(dims)})

    def _context(self, niches: dict[int, list[Function]], niche: int) -> prompts.NicheContext:
        best = max(m[0].score for m in niches.values())
        return prompts.NicheContext(niche, len(niches), len(niches[niche]), niches[niche][0].score, best)

    def _draw_niche(self, niches: dict[int, list[Function]]) -> int:
        keys = list(niches)
        if self.niche_allocation == "uniform":
            return choose(self.rng, keys)
        ranked = sorted(keys, key=lambda j: niches[j][0].score, reverse=True)
        weights = [1.0 / (ranked.index(j) + len(keys)) for j in keys]
        return choose(self.rng, keys, weights)

    def _tournament(self, members: list[Function]) -> Function:
        size = min(self.tournament_size, len(members))
        picks = self.rng.choice(len(members), size=size, replace=False)
        return members[int(min(picks))]  # members are best first

    # -- one step -----------------------------------------------------------------
    def _evolve_round(self) -> None:
        members = self._usable()
        if not members:
            self._sample(self._init_prompt(), "init")
            return
        with self._state_lock:
            if self._needs_rebuild(members):
                self.rebuild_niches()
        niches = self.niches()
        if not niches:
            self._sample(self._init_prompt(), "init")
            return
        niche = self._draw_niche(niches)
        parent = self._tournament(niches[niche])
        usable_ops = [op for op in self.operators if op != "cross_niche" or len(niches) > 1]
        op = choose(self.rng, usable_ops or ["reflection_rewrite"])
        context = self._context(niches, niche)
        task, header = self._task_description_str, self._header
        code, score = self.code_of(parent), parent.score
        if op == "reflection_rewrite":
            text = self._ask_text(prompts.reflection(task, context, code, score), "reflection", max_chars=400)
            if not self._continue_loop():
                return
            prompt = prompts.reflection_rewrite(task, context, code, score, text, header)
        elif op == "summary_guided":
            summary = self._current_summary()
            if not self._continue_loop():
                return
            prompt = prompts.summary_guided(task, context, code, score, summary, header)
        elif op == "cross_niche":
            other_niche = choose(self.rng, [j for j in niches if j != niche])
            other = self._tournament(niches[other_niche])
            prompt = prompts.cross_niche(task, context, code, score, self.code_of(other), other.score, other_niche,
                                         header)
        else:
            local, overall = niches[niche][0], members[0]
            prompt = prompts.local_global_elite(task, context, code, score, self.code_of(local), local.score,
                                                self.code_of(overall), overall.score, header)
        self._sample(prompt, op, _niche=niche)

    def _current_summary(self) -> str:
        """The global summary, refreshed when ``summary_every`` generations old (a text call)."""
        g = self._population.generation
        with self._state_lock:
            fresh = self.global_summary_generation is not None and g - self.global_summary_generation < self.summary_every
            if fresh and self.global_summary:
                return self.global_summary
            ranked = sorted(self.archive.values(), key=lambda cs: cs[1], reverse=True)
        n = self.summary_size
        elites = ranked[:n]
        poor = ranked[n:][-n:] if len(ranked) > n else []
        text = self._ask_text(prompts.summary(self._task_description_str, elites, poor), "summary")
        with self._state_lock:
            self.global_summary, self.global_summary_generation = text, g
        return text

    # -- checkpoints --------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        with self._state_lock:
            ranked = sorted(self.archive.items(), key=lambda kv: kv[1][1], reverse=True)
            n = self.summary_size
            kept = ranked[:n] + (ranked[n:][-n:] if len(ranked) > n else [])
            state.update(
                global_summary=self.global_summary, global_summary_generation=self.global_summary_generation,
                niche_generation=self.niche_generation, niche_history=list(self.niche_history[-50:]),
                niches={self._program_text(f): int(f._niche) for f in self._members()
                        if getattr(f, "_niche", None) is not None},
                archive=[[text, code, score] for text, (code, score) in kept])
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        with self._state_lock:
            self.global_summary = str(state.get("global_summary", ""))
            self.global_summary_generation = state.get("global_summary_generation")
            self.niche_generation = state.get("niche_generation")
            self.niche_history = list(state.get("niche_history", []))
            for text, code, score in state.get("archive", []):
                self.archive.setdefault(text, (code, float("-inf") if score is None else float(score)))
            labels = state.get("niches", {})
            for f in self._members():
                label = labels.get(self._program_text(f))
                if label is not None:
                    f._niche = int(label)
