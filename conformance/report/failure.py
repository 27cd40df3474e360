"""One failure as people read it, derived once for the console and the HTML.

h2spec and Autobahn print, for every failing case, the requirement it
broke, what was expected and what was observed. Our judges already write
messages in that shape ("code -32603; expected -32800", "content has 257
parts; limit 256", "method must be a string; got number"), with the JSON
path appended by the verdict (" at .error.code", conformance/verdicts.py).
This module splits such a message into its expected and observed halves.

It never invents an expectation: a message that matches none of the shapes
below is shown whole as *observed* and *expected* stays empty (the reader
still has the requirement statement). Reports only read verdicts
(ARCHITECTURE rule 6): nothing here re-judges anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Failure", "failure", "split_evidence"]

# The JSON path a verdict appends to its message (Violation.where()).
_PATH = re.compile(r" at (?P<path>(?:\.[^\s.\[\]]+|\[\d+\])+)$")
# Judge message shapes, tried in order; each names what was seen and what the text asks for.
_EXPECTED = re.compile(r"^(?P<observed>.+?)[;,] expected (?P<expected>.+)$", re.S)
_LIMIT = re.compile(r"^(?P<observed>.+?); limit (?P<expected>.+)$", re.S)
_MUST_GOT = re.compile(r"^(?P<subject>.+?) must be (?P<expected>.+?); got (?P<observed>.+)$", re.S)
_IT_MUST = re.compile(r"^(?P<observed>.+?); it must be (?P<expected>.+)$", re.S)


@dataclass(frozen=True)
class Failure:
    """A fail/warn/xfail verdict with its place in the spec and its evidence split."""

    requirement: str
    document: str
    section: str
    level: str
    statement: str  # the catalog's summary of the requirement (our words, not the spec's)
    observed: str
    expected: str = ""  # empty: the message does not say, and we do not guess
    path: str = ""  # JSON path inside the frame, when the judge named one

    @property
    def where(self) -> str:
        """ "§1.9" -- the section the requirement comes from."""
        return f"§{self.section}"

    @property
    def observed_at(self) -> str:
        """The observation with the frame path it was found at."""
        return f"{self.observed} (at {self.path})" if self.path else self.observed


def split_evidence(evidence: str) -> tuple[str, str, str]:
    """``(expected, observed, path)`` of a verdict's evidence; ``expected`` is
    "" when the message has none of the known shapes."""
    text = evidence.strip()
    path = ""
    # Only a one-line message carries a trailing path; a multi-line one is shown as it is.
    if "\n" not in text and (m := _PATH.search(text)):
        path, text = m["path"], text[: m.start()]
    if m := _MUST_GOT.match(text):
        subject = m["subject"]
        return f"{subject}: {m['expected']}", f"{subject}: {m['observed']}", path
    if m := _IT_MUST.match(text):
        return m["expected"], m["observed"], path
    if m := _EXPECTED.match(text):
        return m["expected"], m["observed"], path
    if m := _LIMIT.match(text):
        return f"at most {m['expected']}", m["observed"], path
    return "", evidence.strip(), ""


def failure(requirement: str, document: str, section: str, level: str, statement: str, evidence: str) -> Failure:
    expected, observed, path = split_evidence(evidence)
    return Failure(requirement, document, section, level, statement, observed, expected, path)
