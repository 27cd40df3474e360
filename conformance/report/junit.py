"""``junit.xml``: one testcase per requirement, for CI dashboards. Failures
and warnings carry the evidence and this run's observation (where, how
often, stderr), since a dashboard is read by people, not diffed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.outfiles import replacing
from conformance.results import RunResult
from conformance.safe_text import xml_text
from conformance.verdicts import describe, summary


def junit(run: RunResult, *, strict: bool = False) -> ET.ElementTree:
    """``strict`` (``--strict``): a ``warn`` fails the run, so it is a ``<failure>`` here too."""
    counts = summary(run.verdicts)
    suite = ET.Element(
        "testsuite",
        name=f"octet-conformance {run.role} {run.manifest.name} {run.manifest.version} "
        f"(API {run.manifest.api_version})",
        tests=str(len(run.verdicts)),
        failures=str(counts["fail"] + (counts["warn"] if strict else 0)),
        errors=str(counts["error"]),
        skipped=str(counts["skip"] + counts["untested"] + counts["xfail"]),
    )
    for v in run.verdicts:
        req = v.requirement
        case = ET.SubElement(suite, "testcase", classname=f"{req.document}.{req.section}", name=req.id)
        if v.verdict == "fail" or (strict and v.verdict == "warn"):
            ET.SubElement(case, "failure", message=f"{req.level}: {req.summary}").text = describe(v)
        elif v.verdict == "error":
            ET.SubElement(case, "error", message="harness error").text = "\n".join([v.evidence, *run.harness_errors])
        elif v.verdict in ("skip", "untested", "xfail"):
            ET.SubElement(case, "skipped", message=f"{v.verdict}: {v.evidence}")
        elif v.verdict == "warn":
            ET.SubElement(case, "system-out").text = f"warning (should): {describe(v)}"
    _xml_safe(suite)
    return ET.ElementTree(suite)


def _xml_safe(root: ET.Element) -> None:
    """Names, evidence and stderr come from the target: whatever it sent, the
    document must stay well-formed XML 1.0 (conformance/safe_text.py)."""
    for element in root.iter():
        element.attrib = {k: xml_text(v) for k, v in element.attrib.items()}
        if element.text is not None:
            element.text = xml_text(element.text)


def write_junit(run: RunResult, directory: Path, *, strict: bool = False) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "junit.xml"
    tree = junit(run, strict=strict)
    ET.indent(tree)
    with replacing(path, binary=True) as out:
        tree.write(out, encoding="utf-8", xml_declaration=True)
    return path
