"""Names are data: how a name from a record becomes text, a link, a file name or a shell word.

Every name on a board (dataset, method, class, configuration, a record's file name) comes from
records anyone can contribute, so none is ever trusted as markup:

* **Markdown**: :func:`md_escape` backslash-escapes every character Markdown (and GitHub's math)
  gives a meaning, writes line breaks as spaces (a name never ends a table row or a heading) and
  ``&`` so that no entity is decoded. :func:`md_code` writes a code span only when the name can sit
  in one verbatim. The Markdown templates apply :func:`md_escape` to every value they print
  (:func:`md_finalize`).
* **HTML**: jinja2's autoescaping (``markupsafe``).
* **Links** go only to a relative path (each part percent-encoded, so ``#``, ``?`` or a
  ``javascript:`` prefix stay part of a file name), to an anchor on the page, or to http(s)
  (:func:`safe_href`, which every rendered link passes).
* **File and anchor names**: :func:`unique_slugs` gives every name its own slug, with a short
  hash where two names would slug alike (``mine_1``, ``mine-1``).
* **Shell**: :func:`shell_word` quotes every argument of a command shown to be pasted.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections import Counter
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

from markupsafe import Markup

#: Characters escaped with a backslash in Markdown text (CommonMark allows it for any ASCII
#: punctuation): emphasis, code, links and images (``[``, ``]``: no ``(`` can then follow a link
#: text), tables, raw HTML and entities, headings, strikethrough and GitHub's $math$.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#~$&])")
#: Line breaks and the other control characters, never printed as they are.
_CONTROLS = "\x00-\x1f\x7f\u2028\u2029"
_CONTROL = re.compile(f"[{_CONTROLS}]+")
#: What a Markdown code span may hold verbatim (no backtick, no table pipe, no line break).
_CODE_SAFE = re.compile(f"[^`|{_CONTROLS}]+")


def md_escape(text: object) -> str:
    """``text`` as Markdown that displays exactly it, on one line (a line break is a space)."""
    return _MD_SPECIAL.sub(r"\\\1", _CONTROL.sub(" ", str(text)))


def md_code(text: object) -> Markup:
    """A code span when ``text`` can sit in one verbatim, else escaped text."""
    text = str(text)
    if text and _CODE_SAFE.fullmatch(text) and not text.startswith(" ") and not text.endswith(" "):
        return Markup(f"`{text}`")
    return Markup(md_escape(text))


def md_finalize(value: object) -> Markup:
    """The Markdown templates' finalizer: every printed value is escaped unless it is already
    Markdown (``Markup``: the output of a macro, such as ``fmt``'s marks)."""
    if value is None or hasattr(value, "__html__"):
        return Markup(value or "")
    return Markup(md_escape(value))


# -- links --------------------------------------------------------------------------------------

_ANCHOR = re.compile(r"#[A-Za-z0-9][A-Za-z0-9_-]*")
_HTTP = re.compile(r"https?://[^\s\"'<>\\`]+")
#: What a relative link never holds: quotes, markup, a backslash, a space or a control character.
_UNSAFE = re.compile(f"[\"'<>\\\\ `{_CONTROLS}]")


def path_href(path: str) -> str:
    """A relative path as a link target: each part percent-encoded (``#`` -> ``%23``, ``:`` ->
    ``%3A``), so that no part is read as a fragment, a query or a scheme."""
    return "/".join(quote(part, safe="") for part in str(path).split("/"))


def safe_href(target: str) -> str:
    """``target`` when it is an anchor, http(s), or a relative path without a scheme; anything
    else (``javascript:``, ``data:``, an absolute or protocol-relative path) is a programming
    error: the page model builds links only from :func:`path_href` and anchors."""
    if _ANCHOR.fullmatch(target) or _HTTP.fullmatch(target):
        return target
    split = urlsplit(target)
    if target and not (split.scheme or split.netloc or target[0] == "/" or _UNSAFE.search(target)):
        return target
    raise ValueError(f"refusing to link to {target!r}")


# -- slugs -----------------------------------------------------------------------------------------


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def unique_slugs(names: Iterable[str], prefix: str = "") -> dict[str, str]:
    """``prefix + slug(name)`` for each distinct name, plus ``-`` and 8 hex digits of the name's
    hash where two names share a slug (or a slug is empty), so that no two names share a file or
    an anchor. Deterministic: a name's slug depends only on the names it collides with."""
    names = sorted(set(names))
    base = {n: prefix + slug(n) for n in names}
    counts = Counter(base.values())
    out = {}
    for n in names:
        clash = counts[base[n]] > 1 or not re.sub(r"[^a-z0-9]+", "", str(n).lower())
        out[n] = base[n] + (f"-{hashlib.sha256(n.encode()).hexdigest()[:8]}" if clash else "")
    return out


# -- shell --------------------------------------------------------------------------------------


def shell_word(arg: str) -> str:
    """One shell word: ``shlex.quote``, except that a control character (a line break in a file
    name) is written with bash's ``$'...'`` quoting, so a command is always one line."""
    if not _CONTROL.search(arg):
        return shlex.quote(arg)
    body = re.sub(r"[\\']", r"\\\g<0>", arg)
    return "$'" + _CONTROL.sub(_bash_escapes, body) + "'"


def _bash_escapes(run: re.Match[str]) -> str:
    """Control characters as ``$'...'`` writes them: ``\\xHH`` in ASCII, else ``\\uHHHH``."""
    return "".join(f"\\x{ord(c):02x}" if c < "\x80" else f"\\u{ord(c):04x}" for c in run[0])


def shell_command(words: Iterable[str]) -> str:
    return " ".join(shell_word(w) for w in words)
