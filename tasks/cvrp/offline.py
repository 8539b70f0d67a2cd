"""What the offline program sampler may build CVRP programs from (no LLM involved).

Every program scores the feasible unvisited customers with weighted feature terms and
visits the one of highest score. ``{p0}`` ... ``{p5}`` stand for the parameter names
(current_node, depot, unvisited_nodes, rest_capacity, demands, distance_matrix).
"""

LIBRARY = {
    "preamble": (
        "nodes = np.asarray({p2}, dtype=int).ravel()",
        "n = nodes.size",
        "here = int({p0})",
        "home = int({p1})",
        "dist = np.asarray({p5}, dtype=float)",
        "room = max(float({p3}), 1e-09)",
        "scale = max(float(dist.max()), 1e-09)",
        "d = dist[here, nodes] / scale",
        "back = dist[nodes, home] / scale",
        "q = np.asarray({p4}, dtype=float)[nodes] / room",
    ),
    "features": (
        ("distance (nearest neighbour)", "d", -1.0, 1.0),
        ("squared distance", "d ** 2", -1.0, 1.0),
        ("closeness", "np.exp(-d / 0.1)", 1.0, 0.5),
        ("demand share of the free capacity", "q", 1.0, 0.3),
        ("demand per distance", "q / (d + 0.05)", 1.0, 0.05),
        ("distance back to the depot", "back", -1.0, 0.3),
        ("saving over a return to the depot", "back - d", 1.0, 0.3),
        ("fills the vehicle", "np.abs(q - 1.0) < 1e-09", 1.0, 0.3),
        ("isolation from the other candidates", "dist[np.ix_(nodes, nodes)].mean(axis=1) / scale", 1.0, 0.3),
        ("far customers while the vehicle is empty", "q.max() * back", 1.0, 0.1),
    ),
    "seeds": (
        ("NearestNeighbour", ((-1.0, "d"),)),
        ("DemandPerDistance", ((1.0, "q / (d + 0.05)"),)),
        ("nearest, pulled home", ((-1.0, "d"), (-0.3, "back"))),
        ("nearest, filling the vehicle", ((-1.0, "d"), (0.3, "q"))),
        ("closeness", ((1.0, "np.exp(-d / 0.1)"),)),
        ("nearest, isolated first", ((-1.0, "d"), (0.3, "dist[np.ix_(nodes, nodes)].mean(axis=1) / scale"))),
    ),
    "finish": (
        "score = np.nan_to_num(score, nan=-1e9, posinf=1e9, neginf=-1e9)",
        "return int(nodes[int(np.argmax(score))])",
    ),
    "hints": (
        "Visit near customers first, but finish a route near the depot.",
        "Weigh the distance against how much of the free capacity a customer uses.",
        "Serve isolated customers while the vehicle has room for them.",
    ),
}
