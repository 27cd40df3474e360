"""The HTML report without a browser: structure, per-run summaries,
escaping of target-written text, traces confined to the run directory, and
clear errors (exit 2, the file named) for unusable run directories."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import Markup

from conformance.cli import main
from conformance.manifest import program_name
from conformance.peers.rpc_client import DATA_DIR, HostcoreCommand
from conformance.report.html import REPORT_NAME, render, write_run_report
from conformance.report.jsontree import (
    EXCERPT_CHARS,
    FOLD_CHARS,
    FOLD_LINES,
    MAX_STRING_CHARS,
    Budget,
    frame_tree,
    tree,
)
from conformance.report.matrix import write_matrix
from conformance.report.rundir import FORMAT, load_run
from conformance.requirements import by_id
from conformance.results import RunResult
from conformance.runner.hostcore import described
from conformance.runner.profiles import PROFILES
from conformance.verdicts import Verdict

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
TRACE = [
    {"format": "octet-conformance/trace@1", "context": "example 1, step 0", "violation": "v", "shrunk": {}},
    {"dir": "host->target", "step": 0, "text": '{"jsonrpc":"2.0","id":1,"method":"initialize"}\n'},
    {"dir": "target->host", "step": 0, "index": 0, "text": '{"jsonrpc":"2.0","id":1,"result":{}}\n'},
    {"dir": "target->host", "step": 1, "index": 1, "text": HOSTILE + "\n"},
    {"dir": "host->target", "step": 2, "action": "shutdown"},
]


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        self.tags.append((tag, dict(attrs)))


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def test_rows_grouped_by_section_and_a_column_per_run(make_run) -> None:  # type: ignore[no-untyped-def]
    a = make_run("a", {"EXT-0-json-text": "pass", "EXT-1.1-tool-description": "fail", "EXT-0-stdin-eof-exit": "skip"})
    b = make_run("b", {"EXT-0-json-text": "pass", "EXT-1.1-tool-description": "pass"}, target="other")
    tags = parse(render([load_run(a), load_run(b)]))
    rows = [attrs for tag, attrs in tags.tags if tag == "tr" and attrs.get("class") == "req-row"]
    assert [r["data-id"] for r in rows] == ["EXT-0-json-text", "EXT-0-stdin-eof-exit", "EXT-1.1-tool-description"]
    assert rows[1]["data-verdicts"] == " skip absent "  # run b never judged it
    groups = [attrs["data-group"] for tag, attrs in tags.tags if tag == "tr" and attrs.get("class") == "group"]
    assert groups == ["extension-wire-protocol §0", "extension-wire-protocol §1.1"]
    buttons = [attrs for tag, attrs in tags.tags if tag == "button" and attrs.get("data-req")]
    expected = [("0", "EXT-0-stdin-eof-exit"), ("0", "EXT-1.1-tool-description")]
    assert [(x["data-run"], x["data-req"]) for x in buttons] == expected


def test_summary_share_counts_only_judged_must_requirements(make_run) -> None:  # type: ignore[no-untyped-def]
    # must: json-text pass, tool-description fail, xfail judged too; skip (not applicable), untested
    # and error (never judged) are left out of the share -> 1 of 3, with the untested shown beside it
    run = make_run(
        "a",
        {
            "EXT-0-json-text": "pass",
            "EXT-1.1-tool-description": "fail",
            "EXT-0-one-object-per-line": "xfail",
            "JSONRPC-5-one-response": "skip",
            "EXT-0-frame-bound": "untested",
            "EXT-0-diagnostics-stderr": "untested",
            "EXT-0-no-blank-lines": "untested",  # a should: not in the must figures
            "JSONRPC-5-id-echo": "error",
        },
    )
    page = render([load_run(run)])
    assert '<b class="must-share">33.3%</b> (1 of 3 judged; <span class="must-untested">2 untested</span>)' in page
    untested_only = make_run("b", {"EXT-0-frame-bound": "untested"})
    assert '<b class="must-share">n/a</b> (0 of 0 judged; <span class="must-untested">1 untested</span>)' in render(
        [load_run(untested_only)]
    )


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "cwd", "name"),
    [
        (("octet-hostcore", "--data-dir", "{data_dir}"), "/any", "octet-hostcore"),
        (("python3", "main.py", "--data-dir", "{data_dir}"), "/f/hostcores/abort-any-tool", "abort-any-tool"),
        (("/usr/bin/python3.11", "-u", "src/main.py"), "/w/my-core", "my-core"),  # layout folders skipped
        (("node", "dist/index.js"), "/w/my-core", "my-core"),
        (("python3", "-m", "my_core.server"), "/w", "my_core.server"),
        (("env", "RUST_LOG=1", "./target/release/fast-core", "{data_dir}"), "/w", "fast-core"),
        (("my.core",), "/w", "my.core"),  # only a script's own suffix is dropped
        (("bash", "-c", "exec ./x"), "/w", "bash"),
        (("python3",), "/w", "python3"),
        ((), "/w", "host-core"),
    ],
)
def test_a_command_target_is_named_by_its_program(argv: tuple[str, ...], cwd: str, name: str) -> None:
    assert program_name(argv, Path(cwd), "host-core") == name


def test_a_faulty_host_core_column_is_titled_with_its_name(tmp_path: Path) -> None:
    """A host-core has no manifest: its column once read "python3" (the interpreter)."""
    fixture = ROOT / "fixtures" / "hostcores" / "abort-any-tool"
    manifest = described(HostcoreCommand(("python3", "main.py", "--data-dir", DATA_DIR), fixture))
    verdicts = (Verdict(by_id()["RPC-3-handshake-params"], "pass", "checked"),)
    write_matrix(RunResult(manifest, PROFILES["quick"], 1, verdicts, (), {}, role="hostcore"), tmp_path)
    run = load_run(tmp_path)
    assert run.target["name"] == "abort-any-tool" and run.target["command"][0] == "python3"
    page = render([run])
    assert '<th class="cell">1. abort-any-tool</th>' in page and "<b>1. abort-any-tool </b>" in page
    assert "python3</th>" not in page


def test_target_text_is_escaped_everywhere(make_run) -> None:  # type: ignore[no-untyped-def]
    run = make_run(
        "a",
        {"JSONRPC-5-one-response": "fail"},
        target=HOSTILE,
        evidence={"JSONRPC-5-one-response": HOSTILE},
        traces={"JSONRPC-5-one-response": TRACE},
        stderr={"JSONRPC-5-one-response": HOSTILE},
    )
    html = render([load_run(run)])
    assert HOSTILE not in html
    assert html.count("&lt;script&gt;alert(") >= 4  # target name, evidence, trace frame, stderr
    tags = parse(html)
    assert tags.scripts == 1  # only the report's own script
    assert not [t for t, attrs in tags.tags if t == "img"]


def test_failure_detail_has_trace_stderr_and_replay(make_run) -> None:  # type: ignore[no-untyped-def]
    run = make_run(
        "a",
        {"JSONRPC-5-one-response": "fail"},
        traces={"JSONRPC-5-one-response": TRACE},
        stderr={"JSONRPC-5-one-response": "boom on stderr"},
    )
    html = render([load_run(run)])
    assert html.count('class="msg-host host"') == 2 and html.count('class="msg-target target"') == 2
    assert "[shutdown]" in html and "boom on stderr" in html
    assert "octet-conformance replay traces/JSONRPC-5-one-response.jsonl</code>" in html
    assert 'class="copy"' in html


def test_the_entries_a_violation_was_judged_on_are_highlighted(make_run) -> None:  # type: ignore[no-untyped-def]
    header = {
        **TRACE[0],
        "evidence": [{"dir": "target->host", "index": 1, "why": "the frame judged"}],
        "shrink": "budget spent at 3 steps",
    }
    run = make_run("a", {"JSONRPC-5-one-response": "fail"}, traces={"JSONRPC-5-one-response": [header, *TRACE[1:]]})
    html = render([load_run(run)])
    marked = [attrs for tag, attrs in parse(html).tags if tag == "div" and "marked" in (attrs.get("class") or "")]
    # Only the frame named (target frame 1, the hostile one), not the host entry or target frame 0.
    assert [m["class"] for m in marked] == ["msg-target target marked"]
    assert marked[0]["title"] == "evidence: the frame judged"
    assert "◀ evidence: the frame judged" in html and "shrinking: budget spent at 3 steps" in html


def test_trace_outside_the_run_directory_is_not_read(make_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"dir": "target->host", "text": "SECRET-CONTENT"}) + "\n")
    run = make_run("a", {"JSONRPC-5-one-response": "fail"})
    document = json.loads((run / "matrix.json").read_text())
    document["results"][0]["trace"] = "../secret.jsonl"
    (run / "matrix.json").write_text(json.dumps(document))
    html = render([load_run(run)])
    assert "SECRET-CONTENT" not in html
    assert "outside the run directory" in html


def test_trace_that_is_not_a_regular_file_is_not_opened(make_run) -> None:  # type: ignore[no-untyped-def]
    run = make_run("a", {"JSONRPC-5-one-response": "fail"})
    document = json.loads((run / "matrix.json").read_text())
    document["results"][0]["trace"] = "traces/fifo.jsonl"
    (run / "matrix.json").write_text(json.dumps(document))
    os.mkfifo(run / "traces" / "fifo.jsonl")  # opening it for reading would block the report forever
    assert "not a regular file" in render([load_run(run)])


def test_report_is_self_contained(make_run) -> None:  # type: ignore[no-untyped-def]
    html = render([load_run(make_run("a", {"JSONRPC-5-one-response": "fail"}))])
    tags = parse(html)
    assert not [a for t, a in tags.tags if a.get("src") or (t == "link" and a.get("href"))]
    assert "default-src 'none'" in html  # the page may fetch nothing


def _half_written(run: Path) -> None:
    text = (run / "matrix.json").read_text()
    (run / "matrix.json").write_text(text[: len(text) // 2])


def _other_format(run: Path) -> None:
    document = json.loads((run / "matrix.json").read_text())
    document["format"] = "octet-conformance/matrix@2"
    (run / "matrix.json").write_text(json.dumps(document))


def _no_matrix(run: Path) -> None:
    (run / "matrix.json").unlink()


def _result_without_verdict(run: Path) -> None:
    document = json.loads((run / "matrix.json").read_text())
    del document["results"][0]["verdict"]
    (run / "matrix.json").write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_half_written, "not valid JSON"),
        (_other_format, "matrix@2"),
        (_no_matrix, "missing"),
        (_result_without_verdict, "results[0].verdict"),
    ],
)
@pytest.mark.parametrize("command", ["report", "baseline", "diff"])
def test_unusable_run_dir_is_a_clear_error(make_run, tmp_path: Path, capsys, spoil, message, command) -> None:  # type: ignore[no-untyped-def]
    good = make_run("good", {"JSONRPC-5-one-response": "pass"})
    bad = make_run("bad", {"JSONRPC-5-one-response": "fail"})
    spoil(bad)
    argv = {
        "report": ["report", str(good), str(bad), "-o", str(tmp_path / "r.html")],
        "baseline": ["baseline", str(bad), "-o", str(tmp_path / "b.toml")],
        "diff": ["diff", str(good), str(bad)],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(bad / "matrix.json") in err and message in err
    assert "Traceback" not in err and "internal error" not in err


def test_missing_run_directory_is_named(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["report", str(tmp_path / "nowhere"), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such run directory" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_matrix_format_constant_is_shared() -> None:
    from conformance.report import matrix

    assert matrix.FORMAT == FORMAT


# -- the view a page opens in, and the URL fragment that reproduces a view ----------------------------------


def _body(html: str) -> dict[str, str | None]:
    return next(attrs for tag, attrs in parse(html).tags if tag == "body")


def test_a_page_with_failures_opens_filtered_to_them_with_the_first_fail_open(make_run) -> None:  # type: ignore[no-untyped-def]
    # The warn comes first in row order; a fail is opened before any warn.
    a = make_run("a", {"EXT-0-json-text": "warn", "EXT-1.1-tool-description": "pass", "EXT-0-stdin-eof-exit": "skip"})
    b = make_run("b", {"EXT-0-json-text": "pass", "EXT-1.1-tool-description": "fail"})
    body = _body(render([load_run(a), load_run(b)]))
    assert body["data-default-verdict"] == "failing"
    assert body["data-default-open"] == "1:EXT-1.1-tool-description"


def test_a_page_without_fail_or_warn_opens_on_everything(make_run) -> None:  # type: ignore[no-untyped-def]
    run = make_run(
        "a", {"EXT-0-json-text": "pass", "EXT-0-stdin-eof-exit": "untested", "EXT-1.1-tool-description": "skip"}
    )
    body = _body(render([load_run(run)]))
    assert body["data-default-verdict"] == "" and body["data-default-open"] == ""


def test_every_non_pass_cell_can_be_named_in_the_fragment(make_run) -> None:  # type: ignore[no-untyped-def]
    run = make_run("a", {"EXT-0-json-text": "fail", "EXT-0-stdin-eof-exit": "untested"})
    html = render([load_run(run)])
    keys = [attrs.get("data-key") for tag, attrs in parse(html).tags if tag == "button" and attrs.get("data-key")]
    assert keys == ["0:EXT-0-json-text", "0:EXT-0-stdin-eof-exit"]
    # the filter choice "fail or warn" exists, the state goes to and comes from location.hash
    assert '<option value="failing">fail or warn</option>' in html
    assert "location.hash" in html and 'id="view-link"' in html


# -- each failure: section, statement, expected vs observed, shrunk steps, replay ---------------------------


def test_a_failure_shows_section_statement_expected_observed_shrunk_steps_and_replay(make_run) -> None:  # type: ignore[no-untyped-def]
    rid = "EXT-1.9-cancel-reply-code"
    header = {**TRACE[0], "shrunk": {"steps_before": 12, "steps_after": 3, "replays": 7}, "shrink": "budget spent"}
    evidence = (
        "cancelled tool/call 8 answered with error code -32603; expected -32800 (or a normal result) at .error.code"
    )
    run = make_run("a", {rid: "fail"}, evidence={rid: evidence}, traces={rid: [header, *TRACE[1:]]})
    html = render([load_run(run)])
    summary = by_id()[rid].summary
    assert f"<b>FAIL §1.9 {rid}</b> — {summary}" in html
    assert '<span class="label">expected</span> <code>-32800 (or a normal result)</code>' in html
    assert "<code>cancelled tool/call 8 answered with error code -32603 (at .error.code)</code>" in html
    assert "Shrunk steps (12 → 3 steps, 7 replays)" in html and "shrinking: budget spent" in html
    assert f"octet-conformance replay traces/{rid}.jsonl</code>" in html


def test_an_unsplittable_message_is_shown_as_observed_with_no_expected(make_run) -> None:  # type: ignore[no-untyped-def]
    run = make_run("a", {"JSONRPC-5-one-response": "warn"}, evidence={"JSONRPC-5-one-response": "answered twice"})
    html = render([load_run(run)])
    assert "<code>answered twice</code>" in html and 'class="expected"' not in html


def test_frames_are_collapsible_json_and_the_evidence_frame_is_outlined(make_run) -> None:  # type: ignore[no-untyped-def]
    header = {**TRACE[0], "evidence": [{"dir": "target->host", "index": 0, "why": "the answer"}]}
    run = make_run("a", {"JSONRPC-5-one-response": "fail"}, traces={"JSONRPC-5-one-response": [header, *TRACE[1:]]})
    html = render([load_run(run)])
    # initialize and its answer are trees; the hostile line is not JSON and stays (escaped) text
    assert html.count('<div class="j-frame">') == 2
    assert '<span class="j-key">&#34;method&#34;</span>: <span class="j-str">&#34;initialize&#34;</span>' in html
    assert html.count('class="to-evidence"') == 1  # a button that brings the outlined frame into view
    marked = html.index('class="msg-target target marked"')
    assert html.index('<div class="j-frame">', marked) < html.index("</div>", marked + 40) + 10


def test_a_report_that_hits_the_node_cap_says_so(make_run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import conformance.report.html as page

    run = make_run("a", {"JSONRPC-5-one-response": "fail"}, traces={"JSONRPC-5-one-response": TRACE})
    assert 'class="capped"' not in render([load_run(run)])
    monkeypatch.setattr(page, "Budget", lambda: Budget(left=3))
    html = render([load_run(run)])
    assert 'class="capped"' in html and 'class="j-cut"' in html


def test_a_lone_surrogate_in_a_trace_is_shown_escaped(make_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = [TRACE[0], {"dir": "target->host", "step": 0, "index": 0, "text": '{"id":1,"result":"\\ud800"}\n'}]
    run = make_run("a", {"JSONRPC-5-one-response": "fail"}, traces={"JSONRPC-5-one-response": trace})
    html = render([load_run(run)])
    html.encode("utf-8")  # strict: no lone surrogate left
    assert "\\ud800" in html


def test_a_certification_writes_its_page_beside_the_matrix(make_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = make_run("stage", {"JSONRPC-5-one-response": "fail"}, traces={"JSONRPC-5-one-response": TRACE})
    home = tmp_path / "reports" / "latest"
    path = write_run_report(run, home)
    assert path == run / REPORT_NAME
    html = path.read_text(encoding="utf-8")
    assert f"cd {home} &amp;&amp; octet-conformance replay traces/JSONRPC-5-one-response.jsonl" in html
    assert str(run) not in html  # the staging directory is never named


# -- jsontree: folding and escaping ---------------------------------------------------------------------------


def test_tall_members_open_folded_and_short_ones_open() -> None:
    value = {"short": [1, 2], "tall": list(range(FOLD_LINES)), "nested": {"deep": {"x": 1}}}
    shown = tree(value, Budget())
    nodes = re.findall(r'<details class="j-node"( open)?><summary>([\[{]) <small>([^<]*)</small>', shown)
    assert nodes == [
        (" open", "{", "3 members"),  # the root is always open
        (" open", "[", "2 item(s)"),
        ("", "[", f"{FOLD_LINES} item(s)"),  # 26 lines pretty-printed: folded
        (" open", "{", "1 member"),
        (" open", "{", "1 member"),
    ]


def test_long_strings_fold_after_their_start() -> None:
    long = "x" * (FOLD_CHARS * 2)
    shown = tree({"s": long, "t": "y" * (FOLD_CHARS - 2)}, Budget())
    assert shown.count('<details class="j-fold">') == 1  # "y"*158 with its quotes is 160: not folded
    assert f"({len(long)} characters)" in shown
    huge = str(tree("z" * 1_000_000, Budget()))
    assert len(huge) < MAX_STRING_CHARS + 1000 and "[cut: the trace holds it whole]" in huge


def test_every_key_and_value_is_escaped() -> None:
    shown = str(tree({HOSTILE: [HOSTILE, {"k": HOSTILE * 20}]}, Budget()))
    assert "<script>" not in shown and "<img" not in shown
    tags = parse(shown)
    assert {t for t, _ in tags.tags} <= {"details", "summary", "small", "ul", "li", "span"}


def test_the_node_budget_is_shared_and_says_when_it_ran_out() -> None:
    budget = Budget(left=4)
    shown = str(tree({"a": [1, 2, 3], "b": "x" * 500}, budget))
    assert budget.capped and budget.left == 0
    cut = re.findall(r'<span class="j-cut">([^<]*)</span>', shown)
    assert cut[-1].endswith("more characters]") and len(cut[-1]) < EXCERPT_CHARS + 40
    assert frame_tree('{"a": 1}', budget) == Markup(
        '<div class="j-frame"><span class="j-cut">{&#34;a&#34;: 1}</span></div>'
    )


@pytest.mark.parametrize("text", ["not json", '"a scalar"', '{"a": 1}\nnot json', "", "[" * 100_000])
def test_text_that_is_not_json_objects_is_left_as_text(text: str) -> None:
    assert frame_tree(text, Budget()) is None


def test_a_write_of_two_frames_is_two_trees() -> None:
    shown = frame_tree('{"id": 1}\n{"id": 2}\n', Budget())
    assert shown is not None and shown.count('<div class="j-frame">') == 2
