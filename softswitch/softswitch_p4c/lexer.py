"""Tokenizer for preprocessed P4-16, tracking original locations via line markers."""
import re
from dataclasses import dataclass

from .errors import CompileError, SrcLoc

KEYWORDS = {
    "action", "apply", "bit", "bool", "const", "control", "default", "else", "entries",
    "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in",
    "inout", "int", "key", "match_kind", "out", "package", "parser", "return", "select",
    "state", "string", "struct", "switch", "table", "transition", "true", "tuple",
    "typedef", "type", "value_set", "varbit", "void", "actions", "priority", "list", "for",
    "break", "continue",
}
# `key`, `actions`, `entries`, `type`, `priority`, `list` are contextual: treated as identifiers
# by the parser wherever an identifier is expected.
CONTEXTUAL = {"key", "actions", "entries", "priority", "list", "type", "apply", "state"}

_OPS = ["&&&", "|+|=", "|-|=", "|+|", "|-|", "<<=", "<<", "+=", "-=", "*=", "/=", "%=", "&=",
        "|=", "^=", "==", "!=", "<=", ">=", "&&", "||", "++", "..",
        "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "?", ":", ";",
        ",", ".", "(", ")", "{", "}", "[", "]", "@"]
_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<marker>^\#\s*(?:line\s+)?\d+\s+"[^"]*"[^\n]*)
  | (?P<pragma>^\#[^\n]*)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<num>\d+[wsWS][0-9a-fA-FxXoObB_]+|0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[0-9_]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<op>""" + "|".join(re.escape(o) for o in _OPS) + r""")
""", re.X | re.M | re.S)
_MARKER = re.compile(r'^\#\s*(?:line\s+)?(\d+)\s+"([^"]*)"')


@dataclass
class Token:
    kind: str          # "id", "kw", "num", "str", "op", "eof"
    text: str
    loc: SrcLoc
    value: object = None   # for numbers: (value, width or None, signed)
    glued: bool = False    # no whitespace before this token (to rebuild `>>`)


def parse_number(text, loc):
    """Return (value, width, signed) for a P4 integer literal."""
    width, signed = None, False
    m = re.match(r"^(\d+)([wsWS])(.*)$", text)
    if m:
        width, signed, text = int(m.group(1)), m.group(2) in "sS", m.group(3)
        if width == 0:
            raise CompileError(loc, "integer literal width must be positive")
    t = text.replace("_", "")
    base = 10
    if len(t) > 1 and t[0] == "0" and t[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[t[1].lower()]
        t = t[2:]
    try:
        value = int(t, base)
    except ValueError:
        raise CompileError(loc, f"malformed integer literal '{text}'") from None
    return value, width, signed


def tokenize(text, default_file):
    tokens = []
    file, line, line_start, pos = default_file, 1, 0, 0
    prev_end = -1
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            loc = SrcLoc(file, line, pos - line_start + 1)
            raise CompileError(loc, f"unexpected character '{text[pos]}'")
        kind, tok = m.lastgroup, m.group()
        loc = SrcLoc(file, line, pos - line_start + 1)
        if kind == "marker":
            mm = _MARKER.match(tok)
            line, file = int(mm.group(1)) - 1, mm.group(2)
        elif kind in ("nl",):
            line += 1
            line_start = m.end()
        elif kind == "comment":
            nls = tok.count("\n")
            if nls:
                line += nls
                line_start = pos + tok.rfind("\n") + 1
        elif kind in ("ws", "pragma"):
            pass
        else:
            tokens.append(_make_token(kind, tok, loc, prev_end == pos))
            prev_end = m.end()
        pos = m.end()
    tokens.append(Token("eof", "<end of file>", SrcLoc(file, line, pos - line_start + 1)))
    _restore_columns(tokens)
    return tokens


def _restore_columns(tokens):
    """cpp collapses whitespace; find each token's real column in the original source line."""
    sources = {}
    i = 0
    while i < len(tokens) - 1:
        loc = tokens[i].loc
        j = i
        while j < len(tokens) - 1 and tokens[j].loc.file == loc.file and \
                tokens[j].loc.line == loc.line:
            j += 1
        text = _source_line(sources, loc.file, loc.line)
        if text is not None:
            pos = 0
            for t in tokens[i:j]:
                idx = text.find(t.text, pos)
                if idx >= 0:
                    t.loc = SrcLoc(loc.file, loc.line, idx + 1)
                    pos = idx + len(t.text)
        i = j


def _source_line(sources, file, line):
    if file not in sources:
        try:
            with open(file, encoding="utf-8", errors="replace") as f:
                sources[file] = f.read().split("\n")
        except OSError:
            sources[file] = None
    lines = sources[file]
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


def _make_token(kind, tok, loc, glued):
    if kind == "num":
        return Token("num", tok, loc, parse_number(tok, loc), glued)
    if kind == "str":
        return Token("str", tok, loc, bytes(tok[1:-1], "utf-8").decode("unicode_escape"), glued)
    if kind == "id" and tok in KEYWORDS:
        return Token("kw", tok, loc, None, glued)
    return Token(kind, tok, loc, None, glued)
