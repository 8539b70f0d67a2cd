"""What the offline program sampler may build OVRP programs from (no LLM involved).

Every program scores the candidate insertions with weighted feature terms (the customer goes
where the score is highest). ``{p0}``, ``{p1}`` stand for the parameter names
(customer_features, candidate_insertions).
"""

LIBRARY = {
    "preamble": (
        "cust = np.asarray({p0}, dtype=float).ravel()",
        "cand = np.asarray({p1}, dtype=float).reshape(-1, 8)",
        "n = cand.shape[0]",
        "demand = float(cust[2]) if cust.size > 2 else 0.0",
        "progress = float(cust[4]) if cust.size > 4 else 0.0",
        "delta = cand[:, 2]",
        "resid = cand[:, 3]",
        "load = cand[:, 4]",
        "size = cand[:, 5]",
        "near = cand[:, 6]",
        "proj = cand[:, 7]",
    ),
    "features": (
        ("insertion cost", "delta", -1.0, 1.0),
        ("insertion cost per residual slack (SP)", "delta / (resid + 0.05)", -1.0, 0.2),
        ("urgency-weighted insertion cost (UW)", "delta * (1 + demand / np.maximum(1 - load, 0.05))", -1.0, 1.0),
        ("residual capacity", "resid", 1.0, 0.2),
        ("route load", "load", 1.0, 0.2),
        ("load imbalance", "np.abs(load - 0.5)", -1.0, 0.2),
        ("route size", "size", -1.0, 0.5),
        ("distance to the nearest stop", "near", -1.0, 0.5),
        ("projected route length", "proj", -1.0, 0.2),
        ("late insertion cost", "progress * delta", -1.0, 1.0),
        ("early residual capacity", "(1 - progress) * resid", 1.0, 0.2),
        ("demand-weighted residual", "demand * resid", 1.0, 0.5),
        ("nearly full route", "resid < 0.1", -1.0, 0.1),
    ),
    "seeds": (
        ("cheapest insertion", ((-1.0, "delta"),)),
        ("SP-Insert", ((-1.0, "delta / (resid + 0.05)"),)),
        ("UW-Insert", ((-1.0, "delta * (1 + demand / np.maximum(1 - load, 0.05))"),)),
        ("NF-Insert", ((10.0, "resid"), (-1.0, "delta"))),
        ("cheapest insertion near a stop", ((-1.0, "delta"), (-0.5, "near"))),
        ("cheapest insertion with route balance", ((-1.0, "delta"), (-0.2, "np.abs(load - 0.5)"))),
        ("progress-weighted cost", ((-1.0, "progress * delta"), (0.2, "(1 - progress) * resid"))),
    ),
    "hints": (
        "Divide insertion cost by the residual slack to keep room for later customers.",
        "Weight travel cost more as progress grows; early on, preserve capacity.",
        "Penalise routes that become nearly full after the insertion.",
        "Prefer positions close to an existing stop of the route.",
    ),
}
