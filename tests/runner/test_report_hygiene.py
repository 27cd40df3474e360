"""Output hygiene (issue 14, item 6): whatever text a target or a manifest
supplies -- every C0 control, DEL, C1, bidi overrides, U+FFFE/U+FFFF, lone
surrogates -- ``junit.xml`` parses as XML, ``matrix.json`` parses as strict
JSON and re-encodes as UTF-8, trace headers are written, and the console
shows no control raw (conformance/safe_text.py)."""

from __future__ import annotations

import json
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.manifest import Manifest
from conformance.report.console import run_lines
from conformance.report.junit import write_junit
from conformance.report.matrix import write_matrix
from conformance.requirements import load_catalog
from conformance.results import RunResult
from conformance.runner.profiles import PROFILES
from conformance.safe_text import json_text, terminal, visible, xml_text
from conformance.transport.trace import write_trace
from conformance.verdicts import Observation, Verdict

C0 = "".join(chr(c) for c in range(0x20))
NASTY = C0 + "\x7f\x80\x85\x9b\x9f\u061c\u200e\u202a\u202e\u2066\u2069\u2028\u2029\ufffe\uffff\ud800\udbff\udc00\udfff"

hostile_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(NASTY),
        st.integers(0xD800, 0xDFFF).map(chr),  # lone surrogates: not in st.characters() by default
        st.characters(),
    ),
    max_size=30,
)


def xml_chars_only(text: str) -> bool:
    """Every character is an XML 1.0 Char."""
    return all(
        c in "\t\n\r" or 0x20 <= ord(c) <= 0xD7FF or 0xE000 <= ord(c) <= 0xFFFD or ord(c) >= 0x10000 for c in text
    )


def run_with(text: str) -> RunResult:
    """A run whose every target-supplied string is ``text``."""
    manifest = Manifest(
        Path("/tmp") / "extension.toml",
        f"name{text}",
        f"1.0{text}",
        "0.2",
        "0.8.0",
        ("python3", f"main{text}.py"),
        {"tools": [text]},
        {},
    )
    observed = Observation(f"step{text}", 1, 2, 0.5, (("exit_status", 3.0),), f"stderr{text}\nlast{text}")
    verdicts = tuple(
        Verdict(req, verdict, f"evidence{text}", observed=observed if verdict in ("fail", "warn") else None)
        for req, verdict in zip(load_catalog()[:5], ("fail", "warn", "error", "skip", "untested"), strict=True)
    )
    return RunResult(manifest, PROFILES["quick"], 7, verdicts, (f"harness{text}",), {}, "2026-01-01T00:00:00Z", 1.0)


def check_reports(text: str, folder: Path) -> None:
    run = run_with(text)
    junit = write_junit(run, folder)
    root = ET.parse(junit).getroot()  # raises on anything not well-formed
    for element in root.iter():
        assert xml_chars_only(element.text or "") and all(xml_chars_only(v) for v in element.attrib.values())
    raw = write_matrix(run, folder).read_bytes()
    document = json.loads(raw.decode("utf-8"))  # strict UTF-8, strict JSON (no raw controls)
    json.dumps(document, ensure_ascii=False).encode("utf-8")  # no lone surrogate came back
    assert document["target"]["name"] == json_text(f"name{text}")
    for line in run_lines(run, folder / "matrix.json"):
        assert terminal(line) == line, f"a control reached the console: {line!r}"


@settings(max_examples=60, deadline=None)
@given(text=hostile_text)
def test_reports_stay_well_formed_whatever_the_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check_reports(text, Path(folder))


def test_every_nasty_character_at_once(tmp_path: Path) -> None:
    check_reports(NASTY, tmp_path)
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert root.get("name", "").endswith("(API 0.2)")
    assert "name\\x00\\x01" in root.get("name", "")  # shown, not dropped


def test_json_keeps_controls_exactly_and_shows_surrogates(tmp_path: Path) -> None:
    check_reports(C0, tmp_path)
    document = json.loads((tmp_path / "matrix.json").read_text(encoding="utf-8"))
    assert document["target"]["name"] == "name" + C0  # JSON can carry controls: nothing changed
    assert json_text("a\ud800b\udfff") == "a\\ud800b\\udfff"


@given(text=hostile_text)
def test_terminal_text_has_no_control_left(text: str) -> None:
    shown = terminal(text)
    shown.encode("utf-8")  # printable: no lone surrogate
    assert not any(c in shown for c in NASTY)
    kept = terminal(text, keep_newlines=True)
    assert not any(c in kept for c in NASTY.replace("\n", ""))


@given(text=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E)))
def test_plain_text_is_left_alone(text: str) -> None:
    assert terminal(text) == xml_text(text) == json_text(text) == text


def test_visible_escapes_are_pythons() -> None:
    assert [visible(c) for c in "\x1b\x00\x9b\u202e\ud800"] == ["\\x1b", "\\x00", "\\x9b", "\\u202e", "\\ud800"]
    assert terminal("a\tb\nc") == "a\\x09b\\x0ac"
    assert terminal("a\tb\nc", keep_newlines=True) == "a\\x09b\nc"
    assert xml_text("a\tb\nc\rd\x0be") == "a\tb\nc\rd\\x0be"


def test_trace_header_with_lone_surrogates_is_written(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, {"violation": "bad \ud800 \x1b[2J", "target": {"name": "x\udfff"}}, [{"text": "ok"}])
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header["violation"] == "bad \\ud800 \x1b[2J" and header["target"]["name"] == "x\\udfff"
