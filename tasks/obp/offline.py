"""What the offline program sampler may build OBP programs from (no LLM involved).

Every program scores the open bins with weighted feature terms (the item goes to the bin of
highest score). ``{p0}``, ``{p1}`` stand for the parameter names (item, bins).
"""

LIBRARY = {
    "preamble": (
        "bins = np.asarray({p1}, dtype=float)",
        "item = float({p0})",
        "n = bins.shape[0]",
        "cap = max(float(np.max(bins, initial=0.0)), 1e-09)",
        "gap = (bins - item) / cap",
    ),
    "features": (
        ("leftover gap (best fit)", "gap", -1.0, 1.0),
        ("squared leftover gap", "gap ** 2", -1.0, 1.0),
        ("square-root leftover gap", "np.sqrt(np.maximum(gap, 0.0))", -1.0, 1.0),
        ("exact-fit bonus", "gap < 1e-09", 1.0, 1.0),
        ("small unusable leftover", "(gap > 1e-09) & (gap < 0.05)", -1.0, 0.3),
        ("near-fit closeness", "np.exp(-gap / 0.05)", 1.0, 0.5),
        ("fill ratio of the bin", "item / np.maximum(bins, 1e-09)", 1.0, 0.5),
        ("empty-bin flag", "bins >= cap", -1.0, 0.3),
        ("bin age (first fit)", "np.arange(n) / max(n, 1)", -1.0, 0.01),
        ("log leftover gap", "np.log1p(gap / 0.02)", -1.0, 0.2),
        ("distance to a target leftover", "np.abs(gap - 0.1)", -1.0, 0.5),
        ("item-weighted leftover", "item / cap * gap", -1.0, 2.0),
        ("leftover smaller than the item", "gap < item / cap", -1.0, 0.2),
        ("leftover relative to the item", "gap / (item / cap + 0.01)", -1.0, 0.05),
    ),
    "seeds": (
        ("BestFit", ((-1.0, "gap"),)),
        ("FirstFit", ()),
        ("WorstFit", ((1.0, "gap"),)),
        ("BestFit with an exact-fit bonus", ((-1.0, "gap"), (1.0, "gap < 1e-09"))),
        ("BestFit avoiding small unusable leftovers", ((-1.0, "gap"), (-0.3, "(gap > 1e-09) & (gap < 0.05)"))),
        ("near-fit closeness", ((1.0, "np.exp(-gap / 0.05)"), (-0.01, "np.arange(n) / max(n, 1)"))),
        ("fill ratio", ((1.0, "item / np.maximum(bins, 1e-09)"),)),
        ("square-root BestFit", ((-1.0, "np.sqrt(np.maximum(gap, 0.0))"),)),
        ("target leftover", ((-1.0, "np.abs(gap - 0.1)"), (-0.5, "gap"))),
    ),
    "hints": (
        "Prefer tight fits, but penalise leftovers too small for any later item.",
        "Reward exact fits strongly; break ties toward older bins.",
        "Scale the leftover by the bin capacity so terms stay comparable.",
        "Avoid opening empty bins while a used bin can take the item.",
        "Let large items seek tight bins and small items fill nearly full ones.",
    ),
}
