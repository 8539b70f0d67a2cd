"""What the offline program sampler may build knapsack programs from (no LLM involved).

Every program scores the remaining items with weighted feature terms and packs the
fitting item of highest score (``None`` when none fits). ``{p0}``, ``{p1}`` stand for the
parameter names (remaining_capacity, remaining_items).
"""

LIBRARY = {
    "preamble": (
        "items = list({p1})",
        "cap = float({p0})",
        "n = len(items)",
        "w = np.array([float(item[0]) for item in items]).reshape(n)",
        "v = np.array([float(item[1]) for item in items]).reshape(n)",
        "fits = w <= cap",
        "if not fits.any(): return None",
        "dens = v / np.maximum(w, 1e-09)",
        "dens = dens / max(float(dens[fits].max()), 1e-09)",
        "vmax = max(float(v[fits].max()), 1e-09)",
        "wmin = float(w.min())",
    ),
    "features": (
        ("value density (greedy ratio)", "dens", 1.0, 1.0),
        ("squared value density", "dens ** 2", 1.0, 1.0),
        ("value", "v / vmax", 1.0, 0.3),
        ("weight share of the free capacity", "w / max(cap, 1e-09)", -1.0, 0.3),
        ("exact fill", "np.abs(cap - w) < 1e-09", 1.0, 0.5),
        ("leftover too small for any item", "(cap - w > 1e-09) & (cap - w < wmin)", -1.0, 0.2),
        ("value rank", "np.argsort(np.argsort(v)) / max(n - 1, 1)", 1.0, 0.3),
        ("log value", "np.log1p(v) / np.log1p(vmax)", 1.0, 0.3),
        ("density of heavy items", "dens * w / max(cap, 1e-09)", 1.0, 0.3),
        ("value above the density line", "(v - dens.mean() * w) / vmax", 1.0, 0.3),
    ),
    "seeds": (
        ("GreedyRatio", ((1.0, "dens"),)),
        ("GreedyValue", ((1.0, "v / vmax"),)),
        ("LightestFirst", ((-1.0, "w / max(cap, 1e-09)"),)),
        ("density with a value bonus", ((1.0, "dens"), (0.2, "v / vmax"))),
        ("density filling the capacity", ((1.0, "dens"), (0.5, "np.abs(cap - w) < 1e-09"),
                                          (-0.2, "(cap - w > 1e-09) & (cap - w < wmin)"))),
        ("squared density", ((1.0, "dens ** 2"), (0.1, "dens * w / max(cap, 1e-09)"))),
    ),
    "finish": (
        "score = np.where(fits, np.nan_to_num(score, nan=-1e9, posinf=1e9, neginf=-1e9), -np.inf)",
        "return items[int(np.argmax(score))]",
    ),
    "hints": (
        "Rank by value density, but favour items that use the remaining capacity exactly.",
        "Avoid leaving a gap smaller than every remaining item.",
        "Near the end, when few items fit, prefer the most valuable one.",
    ),
}
