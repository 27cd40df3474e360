"""``junit.xml``: one testcase per requirement, for CI dashboards. Failures
and warnings carry the evidence and this run's observation (where, how
often, stderr), since a dashboard is read by people, not diffed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.runner.extension import RunResult
from conformance.runner.hostcore import HostcoreRunResult
from conformance.verdicts import describe, summary


def _title(run: RunResult | HostcoreRunResult) -> str:
    if isinstance(run, HostcoreRunResult):
        return f"octet-conformance {run.title} (protocol v{run.target_info()['api_version']})"
    return f"octet-conformance extension {run.manifest.name} {run.manifest.version} (API {run.manifest.api_version})"


def junit(run: RunResult | HostcoreRunResult) -> ET.ElementTree:
    counts = summary(run.verdicts)
    suite = ET.Element(
        "testsuite",
        name=_title(run),
        tests=str(len(run.verdicts)),
        failures=str(counts["fail"]),
        errors=str(counts["error"]),
        skipped=str(counts["skip"] + counts["untested"] + counts["xfail"]),
    )
    for v in run.verdicts:
        req = v.requirement
        case = ET.SubElement(suite, "testcase", classname=f"{req.document}.{req.section}", name=req.id)
        if v.verdict == "fail":
            ET.SubElement(case, "failure", message=f"{req.level}: {req.summary}").text = describe(v)
        elif v.verdict == "error":
            ET.SubElement(case, "error", message="harness error").text = "\n".join([v.evidence, *run.harness_errors])
        elif v.verdict in ("skip", "untested", "xfail"):
            ET.SubElement(case, "skipped", message=f"{v.verdict}: {v.evidence}")
        elif v.verdict == "warn":
            ET.SubElement(case, "system-out").text = f"warning (should): {describe(v)}"
    return ET.ElementTree(suite)


def write_junit(run: RunResult | HostcoreRunResult, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "junit.xml"
    tree = junit(run)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path
