"""What the offline program sampler may build OJSP programs from (no LLM involved).

Every program scores the candidate operations with weighted feature terms (the machine takes
the one of highest score). ``{p0}``, ``{p1}`` stand for the parameter names (current_time,
candidate_operations).
"""

LIBRARY = {
    "preamble": (
        "ops = np.asarray({p1}, dtype=float).reshape(-1, 6)",
        "t = float({p0})",
        "n = ops.shape[0]",
        "dur = ops[:, 1]",
        "release = ops[:, 2]",
        "due = ops[:, 3]",
        "work = ops[:, 4]",
        "left = ops[:, 5]",
        "unit = max(float(np.max(work, initial=0.0)), 1.0)",
        "slack = (due - t - work) / unit",
    ),
    "features": (
        ("operation duration (SPT)", "dur / unit", -1.0, 1.0),
        ("remaining work (MWKR)", "work / unit", 1.0, 1.0),
        ("remaining operations", "left / max(float(np.max(left, initial=0.0)), 1.0)", 1.0, 0.5),
        ("slack", "slack", -1.0, 1.0),
        ("time to due date (EDD)", "(due - t) / unit", -1.0, 1.0),
        ("waiting time since release", "(t - release) / unit", 1.0, 0.5),
        ("operation share of the remaining work", "dur / np.maximum(work, 1.0)", -1.0, 0.5),
        ("mean remaining operation length", "work / np.maximum(left, 1.0) / unit", 1.0, 0.5),
        ("lateness", "np.maximum(-slack, 0.0)", 1.0, 1.0),
        ("long-operation flag", "dur > 0.5 * np.max(dur, initial=0.0)", -1.0, 0.2),
    ),
    "seeds": (
        ("SPT", ((-1.0, "dur / unit"),)),
        ("MinSlack", ((-1.0, "slack"),)),
        ("EDD", ((-1.0, "(due - t) / unit"),)),
        ("MWKR", ((1.0, "work / unit"),)),
        ("most operations remaining", ((1.0, "left / max(float(np.max(left, initial=0.0)), 1.0)"),)),
        ("SPT with remaining work", ((-1.0, "dur / unit"), (0.5, "work / unit"))),
        ("FIFO by release", ((1.0, "(t - release) / unit"),)),
        ("slack with lateness urgency", ((-0.5, "slack"), (1.0, "np.maximum(-slack, 0.0)"))),
    ),
    "hints": (
        "Favour jobs with much remaining work to keep the critical path moving.",
        "Combine short operations with remaining work; pure SPT starves long jobs.",
        "Normalise times by the largest remaining work so weights are comparable.",
        "Use slack only as a tie-breaker; makespan depends on the longest job.",
    ),
}
