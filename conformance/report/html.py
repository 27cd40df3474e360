"""The HTML report: requirements x runs, one self-contained file.

Rows are requirements grouped by document and section, columns are runs
side by side, cells are coloured by verdict, and every non-pass cell opens
its evidence (requirement, expected vs observed, the shrunk trace as a
two-column exchange, the target's stderr tail, the replay command).

It reads finished run directories only (ARCHITECTURE rule 6): matrices,
their traces, and the catalog for what a matrix does not carry (side,
features, API versions). Everything a target wrote reaches the page through
Jinja2 with autoescaping on, never by string concatenation; the file loads
nothing from the network (CSS and JS are inline).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from conformance import __version__
from conformance.outfiles import write_text
from conformance.requirements import Requirement, load_catalog
from conformance.transport.trace import entry_text

from .diff import JUDGED
from .failure import Failure, failure
from .jsontree import Budget, frame_tree
from .rundir import Run, load_run, read_trace

VERDICT_ORDER = ("fail", "error", "warn", "xfail", "untested", "skip", "pass")
FAILING = ("fail", "warn")  # what the page opens filtered to, when a run has any
REPORT_NAME = "report.html"  # what every certification writes beside matrix.json
FRAME_CHARS = 4000  # a frame shown as text is cut past this (the trace file keeps it whole)


@dataclass(frozen=True)
class Exchange:
    """One trace entry drawn in the host or the target column."""

    side: str  # "host" | "target" | "note"
    step: str
    text: str
    marked: bool = False  # named by the trace header's evidence: what the violation was judged on
    why: str = ""
    tree: Markup | None = None  # the frame as collapsible JSON (None: shown as text)


@dataclass(frozen=True)
class Cell:
    run: int
    verdict: str  # a verdict, or "absent" when the run did not judge this requirement
    evidence: str = ""
    replay: str = ""
    trace_header: dict[str, Any] = field(default_factory=dict)
    exchange: tuple[Exchange, ...] = ()
    trace_note: str = ""
    stderr: str = ""
    first_seen: str = ""
    failure: Failure | None = None  # fail/warn/xfail: expected vs observed, split once (report/failure.py)

    @property
    def key(self) -> str:
        """What the URL fragment's ``open`` names: ``RUN:REQUIREMENT``."""
        return f"{self.run}:{self.failure.requirement if self.failure else ''}"


@dataclass(frozen=True)
class Row:
    id: str
    document: str
    section: str
    level: str
    summary: str
    side: str
    features: tuple[str, ...]
    api: tuple[str, ...]
    cells: tuple[Cell, ...]

    @property
    def group(self) -> str:
        return f"{self.document} §{self.section}"


@dataclass(frozen=True)
class Column:
    index: int
    directory: str
    target: dict[str, Any]
    suite: dict[str, Any]
    catalog: dict[str, str]  # document -> revision judged against (empty: not recorded)
    counts: dict[str, int]
    must_passed: int
    must_judged: int  # exercised: pass, fail, xfail (untested, skip and error were never judged)
    must_untested: int

    @property
    def must_share(self) -> str:
        """The headline figure: of the must requirements the run judged, the
        share that passed -- an untested requirement is neither passed nor failed."""
        if not self.must_judged:
            return "n/a"
        return f"{100 * self.must_passed / self.must_judged:.1f}%"


def section_key(section: str) -> tuple[tuple[int, str], ...]:
    """ "1.4b" after "1.4" and before "1.5"; "1.10" after "1.9"."""
    parts = []
    for part in section.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append((int(digits) if digits else -1, part[len(digits) :]))
    return tuple(parts)


def _column(index: int, run: Run, home: Path) -> Column:
    counts: dict[str, int] = {v: 0 for v in VERDICT_ORDER}
    must = [r["verdict"] for r in run.results if r["level"] == "must"]
    for r in run.results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return Column(
        index=index,
        directory=str(home),
        target=run.target,
        suite=run.suite,
        catalog=run.catalog,
        counts=counts,
        must_passed=must.count("pass"),
        must_judged=sum(v in JUDGED for v in must),
        must_untested=must.count("untested"),
    )


def _exchange(entries: list[dict[str, Any]], budget: Budget) -> tuple[dict[str, Any], tuple[Exchange, ...]]:
    if not entries:
        return {}, ()
    header, body = (entries[0], entries[1:]) if "format" in entries[0] else ({}, entries)
    # The entries the violation was judged on (header ``evidence``) are highlighted.
    evidence = header.get("evidence")
    marks = {
        (m.get("dir"), m.get("index")): str(m.get("why") or "judged")
        for m in (evidence if isinstance(evidence, list) else [])
        if isinstance(m, dict)
    }
    return header, tuple(_entry(e, marks, budget) for e in body)


def _entry(e: dict[str, Any], marks: dict[tuple[Any, Any], str], budget: Budget) -> Exchange:
    direction = str(e.get("dir", ""))
    side = "host" if direction.startswith("host") else "target" if direction.startswith("target") else "note"
    text = entry_text(e)
    shown = frame_tree(text, budget) if "text" in e and "action" not in e else None
    if len(text) > FRAME_CHARS:
        text = text[:FRAME_CHARS] + f"… [{len(text) - FRAME_CHARS} more characters]"
    step = e.get("step", "")
    key = (e.get("dir"), e.get("index"))
    return Exchange(side, str(step), text, key in marks, marks.get(key, ""), shown)


def _cell(index: int, run: Run, result: dict[str, Any] | None, budget: Budget, home: Path) -> Cell:
    if result is None:
        return Cell(index, "absent")
    verdict = result["verdict"]
    if verdict == "pass":
        return Cell(index, verdict, result["evidence"])
    entries, note = read_trace(run, result.get("trace"))
    header, exchange = _exchange(entries, budget)
    observed = run.observed(result["id"])
    replay = result.get("replay") or ""
    if replay:
        # The matrix's replay command runs in the report directory.
        replay = f"cd {shlex.quote(str(home))} && {replay}"
    return Cell(
        index,
        verdict,
        result["evidence"],
        replay=replay,
        trace_header=header,
        exchange=exchange,
        trace_note=note,
        stderr=str(observed.get("stderr_tail") or ""),
        first_seen=str(observed.get("first_seen") or ""),
        failure=_failure(result) if verdict in ("fail", "warn", "xfail") else None,
    )


def _failure(result: dict[str, Any]) -> Failure:
    return failure(
        result["id"], result["document"], result["section"], result["level"], result["summary"], result["evidence"]
    )


def _rows(runs: Sequence[Run], catalog: dict[str, Requirement], budget: Budget, homes: Sequence[Path]) -> list[Row]:
    by_run = [{r["id"]: r for r in run.results} for run in runs]
    order: dict[str, int] = {rid: i for i, rid in enumerate(catalog)}
    first: dict[str, dict[str, Any]] = {}
    for results in by_run:
        for rid, r in results.items():
            first.setdefault(rid, r)
    ids = sorted(
        first,
        key=lambda rid: (first[rid]["document"], section_key(first[rid]["section"]), order.get(rid, 1 << 30), rid),
    )
    rows = []
    for rid in ids:
        r, req = first[rid], catalog.get(rid)
        rows.append(
            Row(
                id=rid,
                document=r["document"],
                section=r["section"],
                level=r["level"],
                summary=r["summary"],
                side=req.side if req else "?",
                features=req.features if req else (),
                api=req.api if req else (),
                cells=tuple(
                    _cell(i, run, results.get(rid), budget, homes[i])
                    for i, (run, results) in enumerate(zip(runs, by_run, strict=True))
                ),
            )
        )
    return rows


def _environment() -> jinja2.Environment:
    # autoescape=True for every template: target-written text (evidence,
    # frames, stderr) is always escaped, whatever the template's name.
    return jinja2.Environment(
        loader=jinja2.PackageLoader("conformance.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def default_view(rows: Sequence[Row]) -> dict[str, str]:
    """The view a page opens in when its URL has no fragment: filtered to
    fail and warn with the first failure opened when there are any (what a
    reader opens a report for), otherwise everything."""
    failing = [c for row in rows for c in row.cells if c.verdict in FAILING]
    if not failing:
        return {}
    first = min(failing, key=lambda c: FAILING.index(c.verdict))  # a fail before a warn, then row order
    return {"verdict": "failing", "open": first.key}


def render(runs: Sequence[Run], *, homes: Sequence[Path] | None = None) -> str:
    """The page for ``runs``. ``homes``: where each run's directory is to be
    named (its replay commands ``cd`` there) when it was read from elsewhere --
    a certification renders its staging directory before moving it in place."""
    catalog = {r.id: r for r in load_catalog()}
    budget = Budget()
    homes = homes or [run.directory for run in runs]
    rows = _rows(runs, catalog, budget, homes)
    present = [c.verdict for row in rows for c in row.cells]
    page = (
        _environment()
        .get_template("report.html.j2")
        .render(
            version=__version__,
            columns=[_column(i, run, homes[i]) for i, run in enumerate(runs)],
            rows=rows,
            groups=list(dict.fromkeys(row.group for row in rows)),
            verdicts=[v for v in VERDICT_ORDER if v in present],
            levels=sorted({row.level for row in rows}),
            sides=sorted({row.side for row in rows}),
            features=sorted({f for row in rows for f in row.features}),
            apis=sorted({a for row in rows for a in row.api}),
            default=default_view(rows),
            capped=budget.capped,
        )
    )
    # A trace may hold a lone surrogate (a frame's "\ud800" escape, decoded): shown as that
    # escape, so the page is always valid UTF-8 instead of a failed write.
    return page.encode("utf-8", "backslashreplace").decode("utf-8")


def write_html(runs: Sequence[Run], path: Path) -> Path:
    return write_text(path, render(runs))


def write_run_report(directory: Path, home: Path) -> Path:
    """``report.html`` of the one run in ``directory`` (its ``matrix.json``
    and traces), written there whole or not at all; ``home`` is where the
    directory will be once the run is moved into place."""
    return write_text(directory / REPORT_NAME, render([load_run(directory)], homes=[home]))
