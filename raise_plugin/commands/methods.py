"""``raise-ahd methods``: list the methods and how ``robust()`` wraps each."""
from __future__ import annotations

from raise_plugin.methods import method_table


def register(sub) -> None:
    p = sub.add_parser("methods", help="list the methods and whether (and how) robust() wraps them")
    p.set_defaults(func=run)


def run(args) -> int:
    rows = method_table()
    width = max(len(name) for name, _, _ in rows)
    cls_width = max(len(cls) for _, cls, _ in rows)
    for name, cls, how in rows:
        print(f"{name:{width}s}  {cls:{cls_width}s}  {how}")
    return 0
