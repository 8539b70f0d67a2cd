"""Reading a model's answer to a code prompt: the function it writes and its one-line thought.

llm4ad's EoH sampler reads an answer by taking the first ``{...}`` on one line as the thought
and the body of the first line that starts with ``def`` as the function's. Real models answer
in shapes that reading drops or misreads: no braces, a thought over several lines, tabs, a
helper written before the heuristic, imports the heuristic needs, a class or ``async def``
holding it, a fence indented in a list, a thought of a megabyte carried into every later
prompt. ``AnswerReader`` finds the function the way Python reads the code and rewrites the
answer into the shape the host reads right (``{thought}``, then the function), before the
host's parser sees it; an answer already in that shape reads as it did (the offline
sampler's answers, byte for byte). ``ReadingSampler`` is the host's EoH sampler with it,
``ReadingTrimmer`` the ``SampleTrimmer`` of FunSearch, HillClimb and RandSample.

The rules (docs/llm.md, "How an answer is read"):

- Code is taken from the answer's fenced blocks (any language tag, or none; indented fences
  dedented; a fence cut off at the end of the answer runs to its end; a fence with prose above
  its code read as below); without a fence that holds a function, from code written in the
  prose (from a line starting ``def``, ``async def``, ``class``, ``import``, ``from`` or ``@``,
  as far as it parses).
- The function is the one named as the template's: the last block that defines it at the top
  level (a model that corrects itself writes it again; its last definition there, as Python
  reads it), else a method of that name in a class; else the last function whose parameters
  are the template's, under any name (FunSearch's prompt shows ``priority_v1`` and asks for
  ``priority_v2``). None of these: the answer is unusable (code of another
  function is not grafted).
- ``async def`` is read as ``def`` when its body awaits nothing; one that awaits is unusable.
- Parameters the function names otherwise than the template are bound to the template's parameters it
  does not name (in their order) at the top of its body, and extra parameters with a default to their
  default; a parameter named as one of the template's is that one, wherever it stands.
- The block's other imports (those the template does not already make), its assignments (unless
  they call the function) and the helper functions and classes the function uses are put at the
  top of the function's body, so the heuristic keeps what it uses.
- Tabs and indentation other than four spaces are re-indented; Windows line endings read.
- A reasoning model's thinking (``<think>...</think>``) is not the answer: it is left out first.
- The thought: the first ``{...}`` outside the code (over several lines: joined into one), else
  in a comment of the code, else the prose around the code, else ``(no description given)``; cut to
  ``MAX_THOUGHT_CHARS`` characters (with ``...``), so prompts that quote it stay bounded.
"""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from llm4ad.base import Program, SampleTrimmer, TextFunctionProgramConverter
from llm4ad.method.eoh.sampler import EoHSampler

__all__ = ["AnswerReader", "ReadingSampler", "ReadingTrimmer", "reading_sampler", "MAX_THOUGHT_CHARS",
           "NO_DESCRIPTION", "without_thinking"]

MAX_THOUGHT_CHARS = 1000
NO_DESCRIPTION = "(no description given)"

_FENCE = re.compile(r"^[ \t]*```[^\n`]*\n(.*?)(?:^[ \t]*```[^\n]*$|\Z)", re.M | re.S)
_CODE_START = re.compile(r"^[ \t]*(?:async[ \t]+def|def|class|import|from[ \t]+\S+[ \t]+import|@)\b")
_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I)
_THINKING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_MAX_CUTS = 200    # parses of one piece of code, each cut before the line its syntax error is on
_MAX_STARTS = 20   # lines of prose tried as the start of code


@dataclass
class _Block:
    lines: list[str]
    tree: ast.Module


class AnswerReader:
    """Reads answers for one template program (its function's name and parameters, its imports)."""

    def __init__(self, template_program: str | Program):
        text = str(template_program)
        program = TextFunctionProgramConverter.text_to_program(text)
        function = program.functions[0]
        self.name = function.name
        node = next((n for n in ast.parse(text).body if _is_def(n) and n.name == self.name), None)
        self.params = _params(node) if node is not None else None
        self._imports = {ast.dump(n) for n in ast.parse(program.preface or "").body
                         if isinstance(n, (ast.Import, ast.ImportFrom))}

    def read(self, answer: str) -> str | None:
        """``answer`` in the shape the host's parser reads right, or ``None`` when it holds no
        usable function."""
        text = without_thinking(str(answer or "").replace("\r\n", "\n").replace("\r", "\n"))
        fenced, prose = _fenced_blocks(text)
        found = self._choose(fenced)
        if found is None:
            loose, prose = _loose_blocks(prose)
            found = self._choose(loose)
        if found is None:
            return None
        block, node, prelude = found
        body = self._body(block, node, prelude)
        if body is None:
            return None
        comments = [line for line in block.lines if line.lstrip().startswith("#")]
        return "{" + _thought(prose, comments) + "}\n" + f"def {self.name}():\n" + body + "\n"

    # -- which function --------------------------------------------------------------------
    def _choose(self, blocks: list[_Block]):
        for block in reversed(blocks):  # a model that corrects itself writes the function again, later
            named = [n for n in block.tree.body if _is_def(n) and n.name == self.name]
            if named:
                return block, named[-1], self._prelude(block, named[-1])
        for block in reversed(blocks):
            for cls in (n for n in block.tree.body if isinstance(n, ast.ClassDef)):
                named = [n for n in cls.body if _is_def(n) and n.name == self.name]
                if named:
                    return block, named[-1], []
        for block in reversed(blocks):
            for node in reversed(block.tree.body):
                if _is_def(node) and _params(node) == self.params:
                    return block, node, self._prelude(block, node)
        return None

    def _prelude(self, block: _Block, chosen) -> list:
        """The block's statements the function may use: imports the template lacks, assignments, and the
        helper functions and classes it (or they) name."""
        kept, helpers = [], {}
        for node in block.tree.body:
            if node is chosen or (_is_def(node) and node.name == chosen.name):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if ast.dump(node) not in self._imports and getattr(node, "module", None) != "__future__":
                    kept.append(node)
            elif _is_def(node) or isinstance(node, ast.ClassDef):
                helpers[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not _mentions(node, chosen.name):
                kept.append(node)
        named, used = set(), [chosen, *kept]
        while used:
            names = {n.id for node in used for n in ast.walk(node) if isinstance(n, ast.Name)} - named
            named |= names
            used = [helpers[name] for name in names if name in helpers]
        return [node for node in block.tree.body if node in kept or getattr(node, "name", None) in named
                and helpers.get(node.name) is node]

    # -- the body --------------------------------------------------------------------------
    def _body(self, block: _Block, node, prelude: list) -> str | None:
        if isinstance(node, ast.AsyncFunctionDef) and _awaits(node):
            return None
        statements = node.body
        bindings = self._bindings(node)
        if (prelude or bindings) and _is_docstring(statements[0]) and len(statements) > 1:
            statements = statements[1:]
        if _after_code(block, statements[0]):  # ``def f(x): return x``: no line of its own
            own = ["    " + line for stmt in statements for line in ast.unparse(stmt).splitlines()]
        else:
            start = statements[0].lineno - 1 if statements is not node.body else _after_signature(block, node)
            own = _indented(block.lines[start:node.end_lineno], block.lines[statements[0].lineno - 1])
        before = []
        for stmt in prelude:
            first = stmt.decorator_list[0].lineno if getattr(stmt, "decorator_list", None) else stmt.lineno
            before += _indented(block.lines[first - 1:stmt.end_lineno], block.lines[first - 1])
        return "\n".join(before + bindings + own)

    def _bindings(self, node) -> list[str]:
        """Lines giving the function's own names of the template's parameters their values (it named
        them otherwise), and its extra parameters their defaults: the sample has the template's signature."""
        args = node.args
        positional = args.posonlyargs + args.args
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
        names = [a.arg for a in positional]
        template = list(self.params or ())
        if names[:1] in (["self"], ["cls"]) and template[:1] != names[:1]:
            names = names[1:]  # a method of a class
        # a name of the template's means that parameter wherever it stands; the other names take the
        # template's parameters left, in order, and those past them their defaults
        own = [n for n in names if n not in template]
        theirs = [t for t in template if t not in names]
        pairs = list(zip(own, theirs))
        lines = [f"    {', '.join(o for o, _ in pairs)} = {', '.join(t for _, t in pairs)}"] if pairs else []
        extra = [(n, defaults[n]) for n in own[len(theirs):] if n in defaults]
        extra += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)
                  if d is not None and a.arg not in template]
        return lines + [f"    {name} = {ast.unparse(value)}" for name, value in extra]


def without_thinking(text: str) -> str:
    """``text`` without a reasoning model's thinking: ``<think>...</think>`` blocks (also ``thinking``,
    ``reasoning``; one never closed runs to the end), and everything before a closing tag left without
    its opening one (servers whose chat template opens the block in the prompt)."""
    if "<" not in text:
        return text
    text = _THINKING.sub("", text)
    last = None
    for last in _THINKING_END.finditer(text):
        pass
    return text if last is None else text[last.end():]


def _params(node) -> tuple[str, ...]:
    args = node.args
    return tuple(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)


def _is_def(node) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _mentions(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _awaits(node) -> bool:
    return any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in ast.walk(node))


def _after_code(block: _Block, stmt) -> bool:
    """Whether ``stmt`` begins on a line after other code (the signature's, on one line with it)."""
    line = block.lines[stmt.lineno - 1].encode()
    return bool(line[:stmt.col_offset].decode(errors="ignore").strip())


def _after_signature(block: _Block, node) -> int:
    """The index of the first line after ``node``'s signature (its comments and blank lines kept, as
    the host keeps them)."""
    parts = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    parts += [node.args.vararg, node.args.kwarg, node.returns, *node.args.defaults, *node.args.kw_defaults]
    start = max([node.lineno] + [p.end_lineno for p in parts if p is not None])
    first = node.body[0].lineno - 1
    while start < first and block.lines[start].strip() and not block.lines[start].lstrip().startswith("#"):
        start += 1  # the signature's closing line(s): ``) -> np.ndarray:``
    return start


def _indented(lines: list[str], first: str) -> list[str]:
    """``lines`` of one piece of code re-indented so that ``first`` (its first statement's line) is
    indented by four spaces; as they are when they already are, with no tab."""
    leading = [_leading(line) for line in lines]
    if _leading(first) == "    " and not any("\t" in w for w in leading):
        return list(lines)
    tab = 4 if not any("\t" in w and " " in w for w in leading) else 8  # a tab a level, unless mixed with spaces
    margin = _leading(first).expandtabs(tab)
    out = []
    for line in lines:
        line = _leading(line).expandtabs(tab) + line.lstrip()
        # a line indented less than the code (blank, a comment, a string's continuation) is kept as it is
        out.append("    " + line[len(margin):] if line.strip() and line.startswith(margin) else line)
    return out


def _leading(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _parsed(lines: list[str]) -> _Block | None:
    """The longest start of ``lines`` that parses (the host's trimming), or ``None``."""
    lines = textwrap.dedent("\n".join(lines)).split("\n")
    for _ in range(_MAX_CUTS):
        if not lines:
            return None
        try:
            return _Block(lines, ast.parse("\n".join(lines)))
        except SyntaxError as exc:
            cut = (exc.lineno or 1) - 1
            lines = lines[:min(cut, len(lines) - 1)]
        except (ValueError, RecursionError, MemoryError):  # a NUL byte, code nested beyond the parser
            return None
    return None


def _fenced_blocks(text: str) -> tuple[list[_Block], str]:
    """The parsed code of ``text``'s fences, and the text with them taken out. A fence whose code does not
    parse as a whole (a description line above the code) is read as code written in prose, and what
    is not code in it is kept with the text."""
    blocks, pieces, end = [], [], 0
    for match in _FENCE.finditer(text):
        pieces.append(text[end:match.start()])
        end = match.end()
        block = _parsed(match.group(1).split("\n"))
        if block is not None and _holds_function(block):
            blocks.append(block)
            pieces.append("\n")
        else:
            inner, rest = _loose_blocks(match.group(1))
            blocks += inner
            pieces.append("\n" + rest + "\n")
    pieces.append(text[end:])
    return blocks, "".join(pieces)


def _holds_function(block: _Block) -> bool:
    return any(_is_def(n) or isinstance(n, ast.ClassDef) for n in block.tree.body)


def _loose_blocks(text: str) -> tuple[list[_Block], str]:
    """Code written in the prose, each piece from a line that starts code as far as it parses (the first
    ``_MAX_STARTS`` such lines tried); and the prose without it."""
    lines = text.split("\n")
    blocks, prose, i, starts = [], [], 0, 0
    while i < len(lines):
        block = None
        if starts < _MAX_STARTS and _CODE_START.match(lines[i]):
            starts += 1
            block = _parsed(lines[i:])
        if block is None or not _holds_function(block):
            prose.append(lines[i])
            i += 1
            continue
        blocks.append(block)
        i += len(block.lines)
    return blocks, "\n".join(prose)


def _thought(prose: str, comments: list[str]) -> str:
    """The answer's description, one line without braces, at most ``MAX_THOUGHT_CHARS`` characters:
    ``{...}`` in the prose (the host's reading: the first on one line; else over several lines), else in
    a comment of the code, else the prose."""
    inner = _braced(prose.split("\n"))
    if inner is None:
        inner = _braced([prose])
        if inner is None:
            inner = _braced(comments)
        if inner is None:
            inner = prose.replace("{", "(").replace("}", ")")
        inner = " ".join(inner.split()) or NO_DESCRIPTION
    if len(inner) > MAX_THOUGHT_CHARS:
        inner = inner[:MAX_THOUGHT_CHARS].rstrip() + " ..."
    return inner


def _braced(pieces: list[str]) -> str | None:
    """What the first ``{...}`` within one of ``pieces`` holds (the regex ``\\{.*?\\}``, in linear time)."""
    for piece in pieces:
        start = piece.find("{")
        end = piece.find("}", start + 1) if start >= 0 else -1
        if end >= 0:
            return piece[start + 1:end]
    return None


class ReadingSampler(EoHSampler):
    """The host's EoH sampler reading each answer with ``AnswerReader`` first: the thought and the
    function of an answer the reader can read, ``(None, None)`` (no sample) of one it cannot."""

    def __init__(self, llm, template_program: str | Program):
        super().__init__(llm, template_program)
        self.reader = AnswerReader(template_program)

    def get_thought_and_function(self, prompt):
        answer = self.reader.read(self._sampler.draw_sample(prompt))
        if answer is None:
            return None, None
        thought = self.trim_thought_from_response(answer)
        code = SampleTrimmer.trim_preface_of_function(answer)
        return thought, SampleTrimmer.sample_to_function(code, self._template_program)


class ReadingTrimmer(SampleTrimmer):
    """The host's ``SampleTrimmer`` (FunSearch, HillClimb, RandSample) reading each answer with
    ``AnswerReader`` first. An answer that continues the prompt's function (its first line indented:
    a completion model's) and one the reader cannot read go to the host's trimming as they are."""

    def __init__(self, llm, template_program: str | Program):
        super().__init__(llm)
        self.reader = AnswerReader(template_program)

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        return self._trimmed(self._llm.draw_sample(prompt, *args, **kwargs))

    def draw_samples(self, prompts, *args, **kwargs) -> list[str]:
        return [self._trimmed(answer) for answer in self._llm.draw_samples(prompts, *args, **kwargs)]

    def _trimmed(self, answer: str) -> str:
        if not self._llm.do_auto_trim:
            return answer
        if answer and not answer.strip("\n").startswith(("\t", "  ")):
            read = self.reader.read(answer)
            if read is not None:
                answer = read.split("\n", 1)[1]  # the function, without its thought
        return self.auto_trim(answer)


def reading_sampler(sampler, template_program: str | Program):
    """A host method's sampler as one that reads answers with ``AnswerReader``: the host's EoH sampler and
    ``SampleTrimmer`` replaced, any other (the plugin's methods already read this way) kept."""
    if type(sampler) is EoHSampler:
        return ReadingSampler(sampler._sampler, template_program)
    if type(sampler) is SampleTrimmer:
        return ReadingTrimmer(sampler._llm, template_program)
    return sampler
