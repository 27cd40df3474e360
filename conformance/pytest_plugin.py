"""The pytest plugin: a certification as pytest items, one per requirement.

Registered through the ``pytest11`` entry point, so installing the suite is
enough::

    pytest --octet-extension path/to/extension.toml
    pytest --octet-host "node my-driver.js" --octet-host-api 0.4
    pytest --octet-hostcore "my-hostcore --data-dir {data_dir}"
    pytest --octet-run reports/latest          # a finished run directory, read back

Without one of these options the plugin adds nothing. With one, the session
gets an item per requirement the role is judged on (``octet-extension::EXT-1.9-...``),
each reporting its requirement's verdict: ``pass`` passes; ``fail`` fails
with the evidence and the replay command; ``warn`` passes with a
:class:`OctetShouldWarning` (fails with ``--octet-strict``); ``skip`` and
``untested`` skip, saying why; ``xfail`` (from ``--octet-baseline``) is an
xfail; ``error`` and a run that could not happen are errors.

The certification itself runs once per pytest run, the first time an item
needs it: it is the command line (``octet-conformance extension ...``) run
in-process into a report directory, and the items read that directory's
``matrix.json`` (reports only read verdicts). Under ``pytest -n N`` the
items are spread over the workers; the first worker to need the run takes a
file lock and certifies, the others wait on the lock and read the same
matrix, so the target is certified once, not once per worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shlex
import tempfile
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.outfiles import write_text
from conformance.profiles import PROFILES

ROLES = ("extension", "host", "hostcore")
REFERENCE = ""  # --octet-host / --octet-hostcore without a command: the bundled reference


class OctetShouldWarning(UserWarning):
    """A ``should`` requirement was violated (verdict ``warn``)."""


class OctetHarnessError(Exception):
    """The certification could not judge this requirement (verdict ``error``, or no run)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("octet-conformance", "certify a target with octet-conformance (one item per requirement)")
    group.addoption("--octet-extension", metavar="MANIFEST", default=None, help="certify this extension.toml")
    group.addoption(
        "--octet-host", metavar="DRIVER", nargs="?", const=REFERENCE, default=None,
        help="certify a host through this driver command (no command: the bundled reference host)",
    )  # fmt: skip
    group.addoption("--octet-host-api", default="0.2", choices=("0.1", "0.2", "0.4"), help="the probe's API version")
    group.addoption(
        "--octet-hostcore", metavar="CMD", nargs="?", const=REFERENCE, default=None,
        help="certify a host-core started by this command; {data_dir} is replaced (no command: the reference)",
    )  # fmt: skip
    group.addoption(
        "--octet-run", metavar="RUN_DIR", default=None, help="report a finished run directory instead of certifying"
    )
    group.addoption("--octet-profile", default="default", choices=sorted(PROFILES), help="certification budget")
    group.addoption("--octet-seed", default=None, help="Hypothesis seed, 0 <= N < 2**64")
    group.addoption("--octet-patience", default=None, help="seconds to wait for any one response")
    group.addoption("--octet-simulate", action="store_true", help="the reference target in-process, virtual clock")
    group.addoption("--octet-baseline", metavar="FILE", default=None, help="expected failures become xfail")
    group.addoption("--octet-only", metavar="ID-GLOB", action="append", default=[], help="only these requirements")
    group.addoption("--octet-section", metavar="N", action="append", default=[], help="only these sections")
    group.addoption("--octet-strict", action="store_true", help="a should violation (warn) fails its item")
    group.addoption(
        "--octet-report-dir", metavar="DIR", default=None,
        help="where the run is written (default: a directory in the system's temporary directory)",
    )  # fmt: skip


@dataclass(frozen=True)
class Target:
    role: str
    label: str  # the collector's name: octet-extension, octet-host, octet-hostcore, octet-run
    argv: tuple[str, ...]  # the CLI arguments of the certification (empty: --octet-run)
    run_dir: Path | None = None  # --octet-run


def targets_of(config: pytest.Config) -> list[Target]:
    """What the options ask to certify, as command lines (checked by the CLI's own parser)."""
    opt = config.getoption
    common: list[str] = ["--profile", opt("octet_profile"), "--quiet"]
    for name, flag in (("octet_seed", "--seed"), ("octet_patience", "--patience")):
        if opt(name) is not None:
            common += [flag, str(opt(name))]
    for glob in opt("octet_only"):
        common += ["--only", glob]
    for section in opt("octet_section"):
        common += ["--section", section]
    out = []
    if opt("octet_extension") is not None:
        argv = ["extension", str(Path(opt("octet_extension")).resolve()), *common]
        if opt("octet_simulate"):
            argv.append("--simulate")
        if opt("octet_baseline"):
            argv += ["--baseline", str(Path(opt("octet_baseline")).resolve())]
        out.append(Target("extension", "octet-extension", tuple(argv)))
    if opt("octet_host") is not None:
        argv = ["host", "--api-version", opt("octet_host_api"), *common]
        if opt("octet_host"):
            argv += ["--driver", opt("octet_host")]
        elif opt("octet_simulate"):
            argv.append("--simulate")
        out.append(Target("host", "octet-host", tuple(argv)))
    if opt("octet_hostcore") is not None:
        command = shlex.split(opt("octet_hostcore"))
        out.append(Target("hostcore", "octet-hostcore", ("hostcore", *common, *(["--", *command] if command else []))))
    if opt("octet_run") is not None:
        out.append(Target("", "octet-run", (), Path(opt("octet_run"))))
    return out


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for target in targets_of(config):
        collector = Certification.from_parent(session, name=target.label, nodeid=target.label, target=target)
        found = collector.collect()
        # Reported like any collected node, so "collected N items" and -n scheduling count them.
        collector.ihook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, [*found]))
        items.extend(found)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if isinstance(item, RequirementItem) and report.skipped and isinstance(report.longrepr, tuple):
        # A skip names the requirement, not the line of this plugin that raised it.
        # (pytest prints "path: reason" for a line number of None; its annotation says int)
        report.longrepr = (item.nodeid, None, report.longrepr[2])  # type: ignore[assignment]
    return report


class Certification(pytest.Collector):
    """One target: an item per requirement its role is judged on (after --octet-only/--octet-section)."""

    def __init__(self, *, target: Target, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target

    def collect(self) -> list[pytest.Item]:
        return [RequirementItem.from_parent(self, name=rid) for rid in self._ids()]

    def _ids(self) -> list[str]:
        from conformance.cli import role_requirements
        from conformance.requirements import by_id
        from conformance.selection import Selection

        opt = self.config.getoption
        selection = Selection(tuple(opt("octet_only")), tuple(opt("octet_section")))
        if self.target.run_dir is not None:  # a finished run: its own results, whatever the role
            ids = [str(r.get("id")) for r in _load(self.target.run_dir).results]
            known = by_id()
            return [i for i in ids if selection.everything or (i in known and selection.matches(known[i]))]
        pool = role_requirements(self.target.role)
        problems = selection.problems(pool, self.target.role)
        if problems:  # refused like the command line refuses it, before anything runs
            named = (p.replace("--only", "--octet-only").replace("--section", "--octet-section") for p in problems)
            raise pytest.UsageError("\n".join(named))
        return [r.id for r in selection.select(pool)]

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.name, None, self.name


class RequirementItem(pytest.Item):
    def setup(self) -> None:
        parent = self.parent
        assert isinstance(parent, Certification)
        self.outcome = outcome_of(self.config, parent.target)
        if self.outcome.refused:
            raise OctetHarnessError(self.outcome.refused)
        self.result = self.outcome.results.get(self.name)
        if self.result is not None and self.result["verdict"] == "error":
            raise OctetHarnessError(f"{self.name}: {self.result['evidence']}")

    def runtest(self) -> None:
        result = self.result
        if result is None:
            pytest.skip("not judged by this run (outside its selection, or not a requirement of its role)")
        verdict, text = result["verdict"], explain(result, self.outcome.run_dir)
        self.user_properties.append(("octet_verdict", verdict))
        self.user_properties.append(("octet_certified_by", self.outcome.certified_by))
        if verdict == "fail" or (verdict == "warn" and self.config.getoption("octet_strict")):
            raise RequirementFailed(text)
        if self.name in self.outcome.stale:
            raise RequirementFailed(
                f"STALE {self.outcome.stale[self.name]}: listed in the baseline but passes now; remove the entry"
            )
        if verdict == "warn":
            warnings.warn(OctetShouldWarning(text), stacklevel=1)
        elif verdict in ("skip", "untested"):
            pytest.skip(f"{verdict}: {result['evidence']}")
        elif verdict == "xfail":
            pytest.xfail(result["evidence"])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, RequirementFailed | OctetHarnessError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.parent.name if self.parent else "octet", None, f"{self.name}"


class RequirementFailed(AssertionError):
    """A requirement's verdict is ``fail`` (or ``warn`` with --octet-strict)."""


def explain(result: dict[str, Any], run_dir: Path) -> str:
    """What a person fixing the failure needs: the requirement, the evidence, the replay command."""
    lines = [
        f"{result['id']} ({result['level']}, {result['document']} §{result['section']}): {result['verdict']}",
        f"  requirement: {result['summary']}",
        f"  evidence:    {result['evidence']}",
    ]
    if result.get("replay"):
        lines.append(f"  replay (in {run_dir}): {result['replay']}")
    elif result.get("trace"):
        lines.append(f"  trace: {run_dir / result['trace']}")
    return "\n".join(lines)


# -- the one run per pytest run ----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    run_dir: Path
    results: dict[str, dict[str, Any]]
    refused: str  # why there is no run at all ("" when there is one)
    certified_by: str  # which process ran the certification (a worker id, or "main")
    stale: dict[str, str] = field(default_factory=dict)  # passing requirements the baseline lists -> its entry


def _load(run_dir: Path) -> Any:
    from conformance.report.rundir import RunDirError, load_run

    try:
        return load_run(run_dir)
    except RunDirError as exc:
        raise pytest.UsageError(f"--octet-run: {exc}") from None


_OUTCOMES = pytest.StashKey[dict[str, Outcome]]()


def outcome_of(config: pytest.Config, target: Target) -> Outcome:
    cache = config.stash.setdefault(_OUTCOMES, {})
    if target.label not in cache:
        cache[target.label] = _obtain(config, target)
    return cache[target.label]


def _shared_dir(config: pytest.Config) -> Path:
    """A directory every process of this pytest run agrees on: the xdist
    workers' common base temporary directory, or this process's own."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:  # pragma: no cover - pytest always has one
        return Path(tempfile.mkdtemp(prefix="octet-pytest-"))
    base = Path(factory.getbasetemp())
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the run is written (or when this process ends)
        yield
    finally:
        os.close(fd)


def _obtain(config: pytest.Config, target: Target) -> Outcome:
    if target.run_dir is not None:
        run = _load(target.run_dir)
        results = {str(r["id"]): r for r in run.results}
        stale = _stale(config, str(run.target.get("name", "")), results)
        return Outcome(target.run_dir, results, "", "an earlier run", stale)
    shared = _shared_dir(config)
    chosen = config.getoption("octet_report_dir")
    run_dir = Path(chosen).resolve() if chosen else shared / f"{target.label}-report"
    record = shared / f"{target.label}.json"
    with _locked(shared / f"{target.label}.lock"):
        if not record.exists():
            before = _stamp(run_dir / "matrix.json")
            code, output = _certify(target, run_dir)
            written = _stamp(run_dir / "matrix.json") not in (None, before)  # not an earlier run's matrix
            me = os.environ.get("PYTEST_XDIST_WORKER", "main")
            done = {"code": code, "output": output, "by": me, "written": written}
            write_text(record, json.dumps(done))
        done = json.loads(record.read_text(encoding="utf-8"))
    if not done["written"]:
        why = f"octet-conformance {shlex.join(target.argv)} could not run (exit {done['code']}):\n{done['output']}"
        return Outcome(run_dir, {}, why, done["by"])
    from conformance.report.rundir import RunDirError, load_run

    try:
        run = load_run(run_dir)
    except RunDirError as exc:
        return Outcome(run_dir, {}, f"{exc}\n{done['output']}", done["by"])
    results = {str(r["id"]): r for r in run.results}
    return Outcome(run_dir, results, "", done["by"], _stale(config, str(run.target.get("name", "")), results))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _stale(config: pytest.Config, target: str, results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Baseline entries whose requirement passes now: the command line fails
    the run for them (baselines only shrink); here their items fail."""
    path = config.getoption("octet_baseline")
    if not path:
        return {}
    from conformance.report.baseline import BaselineError, load_baseline
    from conformance.requirements import load_catalog

    try:
        listed = load_baseline(Path(path), (r.id for r in load_catalog())).for_target(target)
    except BaselineError:
        return {}  # the command line refused it already: every item is an error
    return {rid: e.key for rid, e in listed.items() if results.get(rid, {}).get("verdict") == "pass"}


def _certify(target: Target, run_dir: Path) -> tuple[int, str]:
    """The command line, in-process, into ``run_dir``: its exit status and what it printed."""
    from conformance.cli import cache_dir, main

    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache_dir()))
    out = io.StringIO()
    argv = [*target.argv]
    # --report-dir before a hostcore's "--": everything after it is the target's command
    at = argv.index("--") if "--" in argv else len(argv)
    argv[at:at] = ["--report-dir", str(run_dir)]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(argv)
        except SystemExit as exc:  # an argument the CLI refused (usage on stderr)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue()
