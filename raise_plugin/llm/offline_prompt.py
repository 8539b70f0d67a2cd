"""Reading an operator prompt: the parent programs it shows and the header of the function to write."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from .operators import prompt_text

__all__ = ["PromptPrograms", "parse_prompt", "function_blocks", "header_of", "has_real_body"]

_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(")


@dataclass
class PromptPrograms:
    """What a prompt holds: parent functions (source), and the header of the function to write."""

    parents: list[str] = field(default_factory=list)
    header: str | None = None          # "def priority(item: float, bins: np.ndarray) -> np.ndarray:"
    name: str | None = None
    params: list[str] = field(default_factory=list)


def function_blocks(text: str) -> list[str]:
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


def header_of(block: str) -> tuple[str, str, list[str]] | None:
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


def has_real_body(block: str) -> bool:
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
    blocks = function_blocks(text)
    found = PromptPrograms()
    for block in blocks:
        if has_real_body(block):
            found.parents.append(block)
    if blocks:
        head = header_of(blocks[-1])
        if head is not None:
            found.header, found.name, found.params = head
    return found
