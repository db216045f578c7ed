"""Just enough reStructuredText for BLANCA's R, L and F tasks: sections, cross-reference roles, documented
objects (``.. class::``, ``.. function::``...), and plain text for a model to read. No docutils or Sphinx (not
installed here): line-based reading of the Python documentation's sources, which follow a regular style.

- :func:`read_sections`: a title is an unindented text line underlined (or over- and underlined) by one repeated
  punctuation character at least as long as the text; each style gets a level in order of first use on the page
  (the page title is level 0). A section's body runs to the next title of any level. A label line
  (``.. _name:``) attaches to the title right after it (blank, label and ``.. index::`` lines may come between),
  otherwise to the section that holds it, as Sphinx resolves ``:ref:`` targets to the enclosing section.
- :func:`role_targets`: the targets of ``:class:``, ``:exc:``, ``:func:``, ``:meth:``, ``:mod:``, ``:ref:``
  (``py:`` domain prefix allowed): the part in angle brackets if there is one, ``~`` dropped, trailing ``()``
  dropped; ``!``-prefixed targets make no link and are left out; ``:ref:`` labels are lower-cased as in Sphinx.
- :func:`doc_entries`: object descriptions with their module (``.. module::``/``.. currentmodule::``; pages
  without one, such as the built-in functions and types, document ``builtins``), nested names (a method
  indented under its class is ``Class.method``) and text (signature and body); ``:noindex:`` duplicates skipped;
  a directive with several aligned signatures (``.. class:: Mapping`` / ``MutableMapping``) gives one entry each.
- :func:`plain_text`: roles, literals, emphasis and links reduced to their text; labels, comments and the
  bookkeeping directives (index, toctree, contents, only, testsetup...) removed with their content; other
  directives keep their content (code blocks stay code).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

__all__ = ["DOC_KINDS", "LINK_ROLES", "DocEntry", "Section", "doc_entries", "plain_text", "read_sections",
           "role_targets", "slug"]

LINK_ROLES = ("class", "exc", "func", "meth", "mod", "ref")
DOC_KINDS = ("class", "exception", "function", "method", "classmethod", "staticmethod", "decorator")
_ADORN = re.compile(r"([=\-~^\"'`#*+_:.<>])\1{2,}\s*")
_LABEL = re.compile(r"^\.\. _([^:`][^:]*):\s*$")
_ROLE = re.compile(r"(?<![a-z]):(?:py:)?([a-z]+):`([^`]+)`")  # not :c:func: (the C domain)
_DIRECTIVE = re.compile(r"^(\s*)\.\. ([\w:-]+)::(.*)$")
_VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
             "deprecated": "Deprecated since version", "deprecated-removed": "Deprecated since version"}
_DROP = {"index", "toctree", "contents", "only", "testsetup", "testcleanup", "highlight", "raw", "image", "figure",
         "tabularcolumns", "sectionauthor", "moduleauthor", "module", "currentmodule", "audit-event", "include",
         "literalinclude", "csv-table", "rubric", "program", "option", "cmdoption", "envvar", "opcode", "describe"}


@dataclass(frozen=True)
class Section:
    """A titled part of a page: ``level`` 0 is the page title; ``body`` is the reST up to the next title."""

    id: str  # page#slug-of-the-title, with -2, -3 ... for a repeated slug on the page
    page: str
    title: str
    level: int
    body: str
    labels: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class DocEntry:
    """A documented object: dotted ``name`` (``module.qualname``; builtins have their bare ``qualname`` too)."""

    name: str
    qualname: str
    module: str
    kind: str
    page: str
    text: str


def slug(title: str) -> str:
    """A title as lower-case words joined by hyphens (as Sphinx makes section ids)."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


def _adornment(line: str) -> str | None:
    return line.strip()[0] if _ADORN.fullmatch(line) and not line[:1].isspace() else None


def _titles(lines: list[str]) -> list[tuple[int, int, tuple[str, bool]]]:
    """``(title line, first body line, style)`` of each title; a style is ``(character, overlined)``."""
    out, i = [], 0
    while i < len(lines) - 1:
        text, under = lines[i], _adornment(lines[i + 1])
        over = _adornment(lines[i - 1]) if i > 0 else None
        if under and text.strip() and not _adornment(text) and len(lines[i + 1].rstrip()) >= len(text.strip()):
            if over == under and i > 0:
                out.append((i, i + 2, (under, True)))
                i += 2
                continue
            if not text[:1].isspace() and (i == 0 or not lines[i - 1].strip()) and not _DIRECTIVE.match(text):
                out.append((i, i + 2, (under, False)))
                i += 2
                continue
        i += 1
    return out


def _label_target(lines: list[str], start: int, title_line: int) -> bool:
    """True when only blank lines, labels and ``.. index::`` blocks lie between ``start`` and ``title_line``."""
    in_index = False
    for line in lines[start + 1:title_line]:
        if not line.strip() or _LABEL.match(line):
            in_index = False if _LABEL.match(line) else in_index
        elif line.startswith(".. index::"):
            in_index = True
        elif not (in_index and line[:1].isspace()):
            return False
    return True


def read_sections(text: str, page: str) -> list[Section]:
    """The sections of one page, in order, with their levels and attached labels."""
    lines = text.splitlines()
    titles = _titles(lines)
    styles: list[tuple[str, bool]] = []
    for _, _, style in titles:
        if style not in styles:
            styles.append(style)
    labels: dict[int, list[str]] = {}
    for n, line in enumerate(lines):
        m = _LABEL.match(line)
        if not m:
            continue
        after = next((k for k, (t, _, _) in enumerate(titles) if t > n), None)
        if after is not None and _label_target(lines, n, titles[after][0] - (1 if titles[after][2][1] else 0)):
            labels.setdefault(after, []).append(m.group(1).strip().lower())
        else:
            holder = max((k for k, (t, _, _) in enumerate(titles) if t < n), default=None)
            if holder is not None:
                labels.setdefault(holder, []).append(m.group(1).strip().lower())
    sections: list[Section] = []
    seen: dict[str, int] = {}
    for k, (t, body_start, style) in enumerate(titles):
        end = len(lines) if k + 1 == len(titles) else titles[k + 1][0] - (1 if titles[k + 1][2][1] else 0)
        title = lines[t].strip()
        seen[slug(title)] = seen.get(slug(title), 0) + 1
        ident = f"{page}#{slug(title)}" + (f"-{seen[slug(title)]}" if seen[slug(title)] > 1 else "")
        sections.append(Section(ident, page, title, styles.index(style),
                                "\n".join(lines[body_start:end]).strip("\n"), tuple(labels.get(k, ())), t + 1))
    return sections


def role_targets(text: str, roles: tuple[str, ...] = LINK_ROLES) -> list[tuple[str, str]]:
    """``(role, target)`` of each cross-reference in ``text`` whose role is in ``roles`` (see the module doc)."""
    out = []
    for role, content in _ROLE.findall(text):
        if role not in roles or content.startswith("!"):
            continue
        m = re.search(r"<([^<>]+)>\s*$", content)
        target = (m.group(1) if m else content).strip().lstrip("~")
        target = target[:-2] if target.endswith("()") else target
        if target:
            out.append((role, target.lower() if role == "ref" else target))
    return out


def _role_text(m: re.Match) -> str:
    role, content = m.group(1), m.group(2)
    if role in ("pep", "rfc"):
        return f"{role.upper()} {content.split('#')[0]}"
    explicit = re.match(r"(.*?)\s*<[^<>]+>\s*$", content, flags=re.S)
    if explicit and explicit.group(1):
        return explicit.group(1)
    content = content.lstrip("!")
    return content[1:].rsplit(".", 1)[-1] if content.startswith("~") else content


def plain_text(rst: str) -> str:
    """The reST reduced to the text a reader sees (see the module doc)."""
    out: list[str] = []
    drop_indent: int | None = None
    options = False
    for line in rst.splitlines():
        indent = len(line) - len(line.lstrip())
        if drop_indent is not None:
            if not line.strip() or indent > drop_indent:
                continue
            drop_indent = None
        if options and re.match(r"^\s+:[\w-]+:( .*)?$", line):
            continue  # a directive's options (:noindex:, :platform: ...)
        options = False
        m = _DIRECTIVE.match(line)
        if _LABEL.match(line) or (re.match(r"\s*\.\.(\s|$)", line) and not m):
            drop_indent = indent  # a label, a substitution or a comment, and their indented continuation
            continue
        if m:
            name, rest = m.group(2), m.group(3).strip()
            if name in _DROP:
                drop_indent = indent
            elif name in _VERSIONS:
                out.append(" " * indent + f"{_VERSIONS[name]} {rest}".strip())
            elif rest and name not in ("code-block", "sourcecode", "doctest", "testcode", "testoutput"):
                out.append(" " * indent + rest)
            options = True
            continue
        out.append(line)
    text = _ROLE.sub(_role_text, "\n".join(out))
    text = re.sub(r"``(.+?)``", r"\1", text, flags=re.S)
    text = re.sub(r"`([^`<]+?)\s*<[^`>]+>`__?", r"\1", text)
    text = re.sub(r"`([^`]+)`__?", r"\1", text)
    text = re.sub(r"\*\*(\S(?:[^*]*?\S)?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?m)^\s*::\s*$", "", text)
    text = re.sub(r"\s?::(\s*)$", r":\1", text, flags=re.M)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _signature_name(signature: str) -> str:
    return re.split(r"[\s(\[]", signature.strip(), maxsplit=1)[0].rstrip(":")


def doc_entries(text: str, page: str, max_chars: int = 4000) -> list[DocEntry]:
    """The documented objects of one page, with module and text (signature and body, at most ``max_chars``)."""
    lines = text.splitlines()
    module = "builtins"
    stack: list[tuple[int, str]] = []  # (indent, qualname) of the enclosing classes
    out = []
    for n, line in enumerate(lines):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        indent, kind, rest = len(m.group(1)), m.group(2).removeprefix("py:"), m.group(3).strip()
        if kind in ("module", "currentmodule") and indent == 0:
            module = "builtins" if rest in ("", "None") else rest
            stack = []
            continue
        if kind not in DOC_KINDS or not rest:
            continue
        column, signatures = line.index(rest), [rest]
        for follow in lines[n + 1:]:  # more signatures, aligned under the first: ".. class:: Set\n   MutableSet"
            if not follow.strip() or len(follow) - len(follow.lstrip()) != column or follow.lstrip().startswith(":"):
                break
            signatures.append(follow.strip())
        body = []
        for follow in lines[n + len(signatures):]:
            if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                break
            body.append(follow)
        if any(re.match(r"^\s+:noindex:\s*$", b) for b in body[:6]):
            continue
        stack = [(i, q) for i, q in stack if i < indent]
        content = plain_text(textwrap.dedent("\n".join(body)))
        owner, names = stack[-1][1] if stack else "", []
        for signature in signatures:
            name = _signature_name(signature)
            name = f"{owner}.{name}" if owner and "." not in name else name
            name = name[len(module) + 1:] if name.startswith(f"{module}.") else name
            if name in names:  # one object with several call signatures: type(object) and type(name, bases, dict)
                continue
            names.append(name)
            text = f"{signature}\n\n{content}"[:max_chars].strip()
            out.append(DocEntry(f"{module}.{name}", name, module, kind, page, text))
        if kind in ("class", "exception"):
            stack.append((indent, names[0]))
    return out
