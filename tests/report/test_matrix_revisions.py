"""matrix@4 names the catalog revision a run was judged against; readers
still accept matrix@3 (revision "not recorded") and refuse older formats."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.manifest import Manifest
from conformance.report.html import render
from conformance.report.matrix import RESULT_KEYS, matrix
from conformance.report.rundir import FORMAT, READABLE_FORMATS, load_run
from conformance.requirements import revisions
from conformance.results import RunResult
from conformance.runner.profiles import PROFILES

MANIFEST = Manifest(Path("/tmp/extension.toml"), "x", "1", "0.2", "0.8.0", ("python3", "main.py"), {}, {})


def test_matrix_names_the_revisions_of_the_roles_documents() -> None:
    for role, documents in (("extension", {"extension-wire-protocol", "jsonrpc-2.0"}),
                            ("hostcore", {"host-rpc-protocol", "jsonrpc-2.0"})):  # fmt: skip
        document = matrix(RunResult(MANIFEST, PROFILES["quick"], 1, (), (), {}, role=role))
        assert document["format"] == FORMAT == "octet-conformance/matrix@4"
        assert document["catalog"]["revisions"] == {d: revisions()[d] for d in sorted(documents)}
    assert "catalog" in RESULT_KEYS  # deterministic: part of the compared results


def test_matrix_at_3_is_still_read_and_shown_as_not_recorded(make_run) -> None:  # type: ignore[no-untyped-def]
    old = make_run("old", {"JSONRPC-5-one-response": "fail"})
    document = json.loads((old / "matrix.json").read_text())
    document["format"] = "octet-conformance/matrix@3"
    (old / "matrix.json").write_text(json.dumps(document))
    new = make_run("new", {"JSONRPC-5-one-response": "pass"})
    document = json.loads((new / "matrix.json").read_text())
    document["catalog"] = {"revisions": {"jsonrpc-2.0": "JSON-RPC 2.0 <rev>"}}
    document["suite"]["selection"] = "--only JSONRPC-5-*"
    (new / "matrix.json").write_text(json.dumps(document))
    assert "octet-conformance/matrix@3" in READABLE_FORMATS
    runs = [load_run(old), load_run(new)]
    assert runs[0].catalog == {} and runs[1].catalog == {"jsonrpc-2.0": "JSON-RPC 2.0 <rev>"}
    html = render(runs)
    assert "revision not recorded" in html and "jsonrpc-2.0 (JSON-RPC 2.0 &lt;rev&gt;)" in html
    assert html.count("judged only: --only JSONRPC-5-*") == 1  # the selected run says so; the full one does not
