"""Escaping by construction: the one place per output format where untrusted text is made inert.

Everything a pull request controls (policy strings, file names, names derived from them) reaches
people and machines through a few formats. Each format has exactly one function here, and the
renderers pass every policy-derived string through it:

- ``gh_data`` / ``gh_prop``: GitHub workflow commands (``::error file=...::message``). A raw
  newline would start a new command (``::add-mask::``, ``::stop-commands::``).
- ``text``: terminal text and the ``parsable`` format: control characters (newlines, escape
  sequences that recolour or retitle a terminal, bidi overrides) are shown as ``\\xNN`` /
  ``\\uNNNN``, so one diagnostic is one line and nothing is executed by the terminal.
- JSON: ``json.dump`` with ``ensure_ascii`` already escapes everything (``cli.render``).
- ``md_code``: markdown for the PR comment: policy text only inside a code span, whose fence is
  longer than any backtick run in the text, on one line; nothing inside renders (no HTML, no
  ``@mention``, no link, no closing code fence).
- ``md_text``: when text must read as prose: every markdown and HTML metacharacter escaped and
  ``@`` kept from mentioning; ``html`` inside an HTML element (``<summary>``), where markdown is off.
- ``mermaid``: a quoted mermaid string (label, slice, title), with quotes, brackets, ``#`` and ``%`` as entity codes.
- ``codeowners_path``: a CODEOWNERS path that matches exactly itself (glob characters escaped).
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _show(m: re.Match[str]) -> str:
    ch = m.group(0)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in named:
        return named[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def text(s: str) -> str:
    """One line of inert terminal text."""
    return _CONTROL.sub(_show, s)


def gh_data(s: str) -> str:
    """The message of a GitHub workflow command (after ``::``); other control characters as in ``text``."""
    return text(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def gh_prop(s: str) -> str:
    """A property value of a GitHub workflow command (``file=``, ``title=``)."""
    return gh_data(s).replace(":", "%3A").replace(",", "%2C")


def md_code(s: str, *, table: bool = False) -> str:
    """``s`` as one inline code span: nothing in it renders. In a table cell (``table``) a ``|``
    would still end the cell, so it is escaped (GFM removes the backslash)."""
    s = text(s)
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    out = f"{fence}{pad}{s}{pad}{fence}"
    return out.replace("|", "\\|") if table else out


def md_fence(s: str, info: str = "") -> str:
    """``s`` as a fenced code block whose fence no line of ``s`` can close."""
    longest = max((len(run) for run in re.findall(r"`{3,}", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{s}\n{fence}"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]#!|~])")
_MD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


def md_text(s: str) -> str:
    """``s`` as inert markdown prose: metacharacters escaped, HTML as entities, no mentions."""
    s = text(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return s.replace("@", "@\u2060").replace(":", "&#58;")  # no @mention, no autolinked scheme


def md_name(s: str, *, table: bool = False) -> str:
    """A name (cluster, class, team): as is when it is a plain DNS-like name, else a code span."""
    return s if _MD_NAME.match(s) else md_code(s, table=table)


def html(s: str) -> str:
    """``s`` inside an HTML element of the PR comment (``<summary>``): entities, no mention."""
    return text(s).translate(_HTML)


# entities for HTML, and for anything a renderer could take for markup, a mention or a link
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                       **{ch: f"&#{ord(ch)};" for ch in "'@`[]()|#"}})


def mermaid(s: str) -> str:
    """A mermaid string, for use inside double quotes (a node label ``["..."]``, a pie slice, a chart
    title or category): quotes, brackets and markup as mermaid's entity codes. ``#`` goes first, so
    a name spelling an entity code (``a#quot;``) stays literal; ``%`` keeps ``%%{...}%%`` out, which
    mermaid reads as a config directive anywhere in the text (``directiveRegex`` in
    mermaid-js/mermaid ``packages/mermaid/src/diagram-api/regexes.ts``). Never an identifier:
    node IDs are generated (``compiler.report.mermaid``)."""
    out = text(s).replace("#", "#35;")
    for ch, code in (("%", "#37;"), ("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("[", "#91;"), ("]", "#93;"),
                     ("(", "#40;"), (")", "#41;"), ("{", "#123;"), ("}", "#125;"), ("|", "#124;"), ("`", "#96;")):
        out = out.replace(ch, code)
    return out


_GLOB = re.compile(r"([\\*?\[\]!#\s])")


def codeowners_path(path: str) -> str:
    """A CODEOWNERS path matching exactly ``path``: glob characters, spaces and '#' escaped."""
    if any(ch in path for ch in "\n\r\0"):
        raise ValueError(f"path {path!r} cannot be written to CODEOWNERS")
    return _GLOB.sub(r"\\\1", path)
