"""The subset of POSIX ``sh`` syntax a simulated node understands: lexing, parsing, word expansion.

Enough for the command lines the console sends (``sh -c '...' sh args``, ``"$@"``, ``$$``, ``$?``,
``>&2``, sequences with ``;``, ``&&``, ``||``) and for what an operator types by hand. Constructs the
simulator does not model (pipelines, background jobs, subshells, command substitution, here-documents)
are rejected with a one-line ``ShellSyntaxError`` in the words dash would use, never misread.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

# Whitespace for field splitting of unquoted expansions (the default IFS).
IFS = " \t\n"
SPECIAL_PARAMS = "$?#@*!-0123456789"
_NAME_CHARS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")


class ShellSyntaxError(Exception):
    """A command line the simulated shell cannot run; ``str()`` is dash's wording without the prefix."""


@dataclass(frozen=True)
class Literal:
    """Text taken as is; ``quoted`` text survives as a field even when empty."""

    text: str
    quoted: bool


@dataclass(frozen=True)
class Param:
    """A parameter expansion: ``$$``, ``$?``, ``$1``, ``$@``, ``$NAME``..."""

    name: str
    quoted: bool


WordPart = Literal | Param


@dataclass(frozen=True)
class Word:
    """One shell word before expansion."""

    parts: tuple[WordPart, ...]

    def plain(self) -> str | None:
        """The word's text when it has no expansions (used for assignments and redirection targets)."""
        if any(isinstance(part, Param) for part in self.parts):
            return None
        return "".join(part.text for part in self.parts if isinstance(part, Literal))


@dataclass(frozen=True)
class Redirect:
    """``[fd]>target``, ``[fd]>>target``, ``[fd]<target``, ``[fd]>&N`` or ``[fd]<&N``."""

    fd: int
    op: str
    target: Word


@dataclass
class SimpleCommand:
    """Assignments, words and redirections of one command, in source order per kind."""

    assignments: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class AndOr:
    """``first [&&|| cmd]...``: each later command runs depending on the status before it."""

    first: SimpleCommand
    rest: list[tuple[str, SimpleCommand]] = field(default_factory=list)


Script = list[AndOr]


@dataclass(frozen=True)
class _Op:
    text: str


@dataclass(frozen=True)
class _RedirOp:
    fd: int | None
    op: str


_Token = Word | _Op | _RedirOp

_UNSUPPORTED_OPS = {
    "|": "pipelines are not simulated",
    "&": "background jobs are not simulated",
    "(": "subshells are not simulated",
    ")": '")" unexpected',
    ";;": '";;" unexpected',
}


# Characters with no special meaning where they stand: outside quotes, and inside double quotes.
_PLAIN_RUN = re.compile(r"[^ \t\n#\\'\"$`;&|()<>]+")
_QUOTED_RUN = re.compile(r'[^"\\$`]+')


class _Lexer:
    """Splits a command line into words, operators and redirections (quotes kept as word parts)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.tokens: list[_Token] = []
        self.parts: list[WordPart] = []
        self.in_word = False

    def run(self) -> list[_Token]:
        while self.pos < len(self.text):
            self._step(self.text[self.pos])
        self._end_word()
        return self.tokens

    def _step(self, char: str) -> None:
        if char in " \t":
            self._end_word()
            self.pos += 1
        elif char == "\n":
            self._end_word()
            self.tokens.append(_Op("\n"))
            self.pos += 1
        elif char == "#" and not self.in_word:
            end = self.text.find("\n", self.pos)
            self.pos = len(self.text) if end < 0 else end
        elif char == "\\":
            self._backslash()
        elif char == "'":
            self._single_quoted()
        elif char == '"':
            self._double_quoted()
        elif char == "$":
            self._dollar(quoted=False)
        elif char == "`":
            raise ShellSyntaxError("command substitution is not simulated")
        elif char in ";&|()":
            self._operator()
        elif char in "<>":
            self._redirection()
        else:
            # A run of ordinary characters at once: a bundle is ~2 KB and every node parses four.
            run = _PLAIN_RUN.match(self.text, self.pos)
            end = run.end() if run else self.pos + 1
            self._literal(self.text[self.pos : end], quoted=False)
            self.pos = end

    def _literal(self, text: str, quoted: bool) -> None:
        self.in_word = True
        last = self.parts[-1] if self.parts else None
        if isinstance(last, Literal) and last.quoted == quoted:
            self.parts[-1] = Literal(last.text + text, quoted)
        else:
            self.parts.append(Literal(text, quoted))

    def _end_word(self) -> None:
        if self.in_word:
            self.tokens.append(Word(tuple(self.parts)))
        self.parts = []
        self.in_word = False

    def _backslash(self) -> None:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt == "\n":  # line continuation
            self.pos += 2
        elif nxt:
            self._literal(nxt, quoted=True)
            self.pos += 2
        else:
            self._literal("\\", quoted=False)
            self.pos += 1

    def _single_quoted(self) -> None:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            raise ShellSyntaxError("Syntax error: Unterminated quoted string")
        self._literal(self.text[self.pos + 1 : end], quoted=True)
        self.pos = end + 1

    def _double_quoted(self) -> None:
        self.pos += 1
        if self.text[self.pos : self.pos + 1] == '"':  # "" is an empty field, not nothing
            self._literal("", quoted=True)
        while True:
            if self.pos >= len(self.text):
                raise ShellSyntaxError("Syntax error: Unterminated quoted string")
            char = self.text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\" and self.text[self.pos + 1 : self.pos + 2] in ('"', "\\", "$", "`", "\n"):
                escaped = self.text[self.pos + 1]
                if escaped != "\n":
                    self._literal(escaped, quoted=True)
                self.pos += 2
            elif char == "$":
                self._dollar(quoted=True)
            elif char == "`":
                raise ShellSyntaxError("command substitution is not simulated")
            else:
                run = _QUOTED_RUN.match(self.text, self.pos)
                end = run.end() if run else self.pos + 1
                self._literal(self.text[self.pos : end], quoted=True)
                self.pos = end

    def _dollar(self, quoted: bool) -> None:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt and nxt in SPECIAL_PARAMS:
            self._param(nxt, quoted, self.pos + 2)
        elif nxt == "{":
            end = self.text.find("}", self.pos + 2)
            name = self.text[self.pos + 2 : end] if end >= 0 else ""
            if not (_NAME_CHARS.fullmatch(name) or name.isdigit() or (len(name) == 1 and name in SPECIAL_PARAMS)):
                raise ShellSyntaxError("Syntax error: Bad substitution")
            self._param(name, quoted, end + 1)
        elif nxt == "(":
            raise ShellSyntaxError("command substitution is not simulated")
        elif match := _NAME_CHARS.match(self.text, self.pos + 1):
            self._param(match.group(), quoted, match.end())
        else:
            self._literal("$", quoted)
            self.pos += 1

    def _param(self, name: str, quoted: bool, end: int) -> None:
        self.in_word = True
        self.parts.append(Param(name, quoted))
        self.pos = end

    def _operator(self) -> None:
        self._end_word()
        two = self.text[self.pos : self.pos + 2]
        op = two if two in ("&&", "||", ";;") else self.text[self.pos]
        self.tokens.append(_Op(op))
        self.pos += len(op)

    def _redirection(self) -> None:
        fd: int | None = None
        word = self.parts
        if self.in_word and len(word) == 1 and isinstance(word[0], Literal) and not word[0].quoted:
            fd = int(word[0].text) if word[0].text.isdigit() else None
        if fd is not None:
            self.parts, self.in_word = [], False
        self._end_word()
        two = self.text[self.pos : self.pos + 2]
        if two == "<<":
            raise ShellSyntaxError("here-documents are not simulated")
        op = two if two in (">>", ">&", "<&", ">|") else self.text[self.pos]
        self.tokens.append(_RedirOp(fd, ">" if op == ">|" else op))
        self.pos += len(op)


def _unexpected(token: _Token | None) -> ShellSyntaxError:
    if token is None:
        return ShellSyntaxError("Syntax error: end of file unexpected")
    if isinstance(token, _Op):
        text = "newline" if token.text == "\n" else f'"{token.text}"'
        return ShellSyntaxError(_UNSUPPORTED_OPS.get(token.text, f"Syntax error: {text} unexpected"))
    if isinstance(token, Word):
        return ShellSyntaxError(f'Syntax error: "{token.plain()}" unexpected')
    return ShellSyntaxError(f'Syntax error: "{token.op}" unexpected')


class _Parser:
    """Builds a ``Script`` from tokens: lists of and-or chains of simple commands."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def _peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _is_op(self, *texts: str) -> bool:
        token = self._peek()
        return isinstance(token, _Op) and token.text in texts

    def script(self) -> Script:
        items: Script = []
        while True:
            while self._is_op("\n"):
                self.pos += 1
            if self._peek() is None:
                return items
            items.append(self._and_or())
            if self._is_op(";", "\n"):
                self.pos += 1
            elif self._peek() is not None:
                raise _unexpected(self._peek())

    def _and_or(self) -> AndOr:
        chain = AndOr(self._command())
        while self._is_op("&&", "||"):
            op = self.tokens[self.pos]
            assert isinstance(op, _Op)
            self.pos += 1
            while self._is_op("\n"):
                self.pos += 1
            chain.rest.append((op.text, self._command()))
        return chain

    def _command(self) -> SimpleCommand:
        cmd = SimpleCommand()
        while True:
            token = self._peek()
            if isinstance(token, Word):
                self.pos += 1
                name = _assignment_name(token) if not cmd.words else None
                if name is not None:
                    cmd.assignments.append((name, _strip_assignment(token, name)))
                else:
                    cmd.words.append(token)
            elif isinstance(token, _RedirOp):
                self.pos += 1
                target = self._peek()
                if not isinstance(target, Word):
                    raise _unexpected(target)
                self.pos += 1
                default_fd = 0 if token.op.startswith("<") else 1
                cmd.redirects.append(Redirect(default_fd if token.fd is None else token.fd, token.op, target))
            else:
                break
        if not (cmd.words or cmd.assignments or cmd.redirects):
            raise _unexpected(self._peek())
        return cmd


def _assignment_name(word: Word) -> str | None:
    first = word.parts[0] if word.parts else None
    if isinstance(first, Literal) and not first.quoted and (match := _ASSIGNMENT.match(first.text)):
        return match.group(1)
    return None


def _strip_assignment(word: Word, name: str) -> Word:
    first = word.parts[0]
    assert isinstance(first, Literal)
    rest = first.text[len(name) + 1 :]
    head: tuple[WordPart, ...] = (Literal(rest, quoted=True),)  # NAME= alone assigns the empty string
    return Word(head + word.parts[1:])


@functools.lru_cache(maxsize=256)
def parse_script(text: str) -> Script:
    """Parse a command line or ``sh -c`` script (raises ``ShellSyntaxError``); the result is read-only.

    Memoised: every node of a sweep is sent the same bundle scripts, and lexing them again for each was
    6% of the simulator's CPU in a quick sweep. The shell only reads the parsed commands.
    """
    return _Parser(_Lexer(text).run()).script()


class Fields:
    """Accumulates the fields of expanded words, with POSIX splitting of unquoted expansions."""

    def __init__(self) -> None:
        self.fields: list[str] = []
        self._current: list[str] = []
        self._real = False  # the current field exists even if empty (it had a quoted part)

    def add(self, text: str, quoted: bool) -> None:
        self._current.append(text)
        self._real = self._real or quoted

    def split_unquoted(self, value: str) -> None:
        """Add an unquoted expansion: IFS whitespace separates fields."""
        pieces = value.split()
        if not pieces:
            if value and (self._current or self._real):
                self.close()
            return
        if value[0] in IFS:
            self.close()
        for n, piece in enumerate(pieces):
            if n:
                self.close()
            self._current.append(piece)
        if value[-1] in IFS:
            self.close()

    def close(self) -> None:
        text = "".join(self._current)
        if text or self._real:
            self.fields.append(text)
        self._current = []
        self._real = False


def expand_words(words: list[Word], lookup: ParamLookup) -> list[str]:
    """Expand words to fields: parameters substituted, ``"$@"`` one field per positional parameter."""
    out = Fields()
    for word in words:
        for part in word.parts:
            if isinstance(part, Literal):
                out.add(part.text, part.quoted)
            elif part.name == "@" and part.quoted:
                for n, value in enumerate(lookup.positional()):
                    if n:
                        out.close()
                    out.add(value, quoted=True)
            elif part.quoted:
                out.add(lookup.value(part.name), quoted=True)
            else:
                out.split_unquoted(lookup.value(part.name))
        out.close()
    return out.fields


def expand_plain(word: Word, lookup: ParamLookup) -> str:
    """Expand a word without field splitting (assignment values, redirection targets)."""
    return "".join(part.text if isinstance(part, Literal) else lookup.value(part.name) for part in word.parts)


class ParamLookup:
    """Parameter values of one running shell: positional parameters, ``$$``, ``$?`` and variables."""

    def __init__(self, arg0: str, args: list[str], pid: int, variables: dict[str, str]) -> None:
        self.arg0 = arg0
        self.args = args
        self.pid = pid
        self.variables = variables
        self.status = 0

    def positional(self) -> list[str]:
        """``$1``... as a list."""
        return self.args

    def value(self, name: str) -> str:
        """The value of ``$name`` as one string (``$@``/``$*`` joined by spaces); unset is empty."""
        if name.isdigit():
            n = int(name)
            if n == 0:
                return self.arg0
            return self.args[n - 1] if n <= len(self.args) else ""
        specials = {
            "$": lambda: str(self.pid),
            "?": lambda: str(self.status),
            "#": lambda: str(len(self.args)),
            "@": lambda: " ".join(self.args),
            "*": lambda: " ".join(self.args),
            "-": lambda: "",
            "!": lambda: "",
        }
        if name in specials:
            return specials[name]()
        return self.variables.get(name, "")
