"""Text from a target or a manifest, made safe for where it is written.

Names, evidence and stderr excerpts come from the program under test (or its
manifest) and may hold anything a string can: terminal escape sequences,
NUL, DEL, C1 controls, bidirectional overrides, lone surrogates (a JSON
``"\\ud800"`` escape decodes to one). Each output gets one function:

* :func:`terminal` -- for the console: every control character (C0 but the
  newline when asked, DEL, C1), bidi controls, line/paragraph separators,
  the noncharacters U+FFFE/U+FFFF and lone surrogates are shown as visible
  escapes (``\\x1b``, ``\\u202e``), so nothing a target sends can move the
  cursor, recolour or rewrite the screen;
* :func:`xml_text` -- for ``junit.xml``: XML 1.0 cannot carry most C0
  characters even as character references, nor lone surrogates or U+FFFE/
  U+FFFF, so those (and DEL and C1, which it discourages) become the same
  visible escapes; the document then parses with any XML parser;
* :func:`json_text` -- for ``matrix.json`` and trace headers: JSON escapes
  controls itself, but a lone surrogate cannot be encoded as UTF-8 and its
  ``\\ud800`` escape is refused by strict parsers, so it becomes the visible
  text ``\\ud800`` (a backslash and five characters), as on the console.

A visible escape is always ``\\xNN`` below U+0100 and ``\\uNNNN`` above, the
way Python writes them; the rest of the text is left as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_SURROGATES = "\ud800-\udfff"
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_TERMINAL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u2028\u2029\ufffe\uffff{_SURROGATES}]")
_TERMINAL_KEEP_NL = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029\ufffe\uffff{_SURROGATES}]")
# Not XML 1.0 Chars, plus DEL and C1 (allowed but discouraged).
_XML = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_SURROGATES}\ufffe\uffff]")
_JSON = re.compile(f"[{_SURROGATES}]")


def visible(char: str) -> str:
    """One character as a visible escape (``\\x1b``, ``\\ud800``)."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: visible(m.group()), text)


def terminal(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` safe to print: no control reaches the terminal raw."""
    return _escape(_TERMINAL_KEEP_NL if keep_newlines else _TERMINAL, text)


def xml_text(text: str) -> str:
    """``text`` made of XML 1.0 characters only (tab, LF and CR kept)."""
    return _escape(_XML, text)


def json_text(text: str) -> str:
    """``text`` encodable as UTF-8 (no lone surrogate)."""
    return _escape(_JSON, text)


def scrub(value: Any, clean: Callable[[str], str] = json_text) -> Any:
    """``value`` (JSON-like: dicts, lists, scalars) with every string, keys
    included, passed through ``clean``."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {scrub(k, clean): scrub(v, clean) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, clean) for v in value]
    return value
