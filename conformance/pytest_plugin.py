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
xfail; ``error`` and a run that could not happen are errors carrying the
command line's message.

A call that cannot be honoured is one usage error before any item exists
(:func:`pytest_configure`): an option no given target uses, a report
directory two certifications would share, and whatever the command line
itself refuses (a mistyped manifest path, a bad seed, a baseline entry for
another target), found by running it with ``--list``. ``--octet-baseline``
is honoured for every target: the command line applies it to an
extension's run, this plugin to a host's, a host-core's and a finished
run's results.

The certification itself runs once per pytest run, the first time an item
needs it: it is the command line (``octet-conformance extension ...``) run
in-process into a report directory, and the items read that directory's
``matrix.json`` (reports only read verdicts). Under ``pytest -n N`` the
items are spread over the workers; the first worker to need the run takes a
file lock and certifies, the others wait on the lock and read the same
matrix, so the target is certified once, not once per worker. The time
that takes is no item's own: it is taken off the setup time of the item
that ran (or waited for) it, recorded there as the JUnit property
``octet_certification_s``, and said once in the terminal summary.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shlex
import tempfile
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

import pytest

from conformance.outfiles import write_text
from conformance.profiles import PROFILES

if TYPE_CHECKING:
    from conformance.report.baseline import Baseline
    from conformance.report.rundir import Run

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
    group.addoption(
        "--octet-host-api", default=None, choices=("0.1", "0.2", "0.4"), help="the probe's API version (default 0.2)"
    )
    group.addoption(
        "--octet-hostcore", metavar="CMD", nargs="?", const=REFERENCE, default=None,
        help="certify a host-core started by this command; {data_dir} is replaced (no command: the reference)",
    )  # fmt: skip
    group.addoption(
        "--octet-run", metavar="RUN_DIR", default=None, help="report a finished run directory instead of certifying"
    )
    group.addoption(
        "--octet-profile", default=None, choices=sorted(PROFILES), help="certification budget (default: default)"
    )
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
    common: list[str] = ["--quiet"]
    for name, flag in (("octet_profile", "--profile"), ("octet_seed", "--seed"), ("octet_patience", "--patience")):
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
        argv = ["host", "--api-version", opt("octet_host_api") or "0.2", *common]
        if opt("octet_host"):
            argv += ["--driver", opt("octet_host")]
        if opt("octet_simulate"):  # with a driver: the command line refuses it, and so does pytest_configure
            argv.append("--simulate")
        out.append(Target("host", "octet-host", tuple(argv)))
    if opt("octet_hostcore") is not None:
        command = shlex.split(opt("octet_hostcore"))
        out.append(Target("hostcore", "octet-hostcore", ("hostcore", *common, *(["--", *command] if command else []))))
    if opt("octet_run") is not None:
        out.append(Target("", "octet-run", (), Path(opt("octet_run"))))
    return out


# -- every option combination is honoured or refused, before anything runs -------------------------

TARGET_FLAGS = {
    "octet-extension": "--octet-extension",
    "octet-host": "--octet-host",
    "octet-hostcore": "--octet-hostcore",
    "octet-run": "--octet-run",
}
CERTIFYING = ("octet-extension", "octet-host", "octet-hostcore")
# Which targets each option means something for; given without any of them, it is refused
# (--octet-baseline with a host, a host-core or a finished run is applied here, to their items).
TAKEN_BY: dict[str, tuple[str, ...]] = {
    "octet_profile": CERTIFYING,
    "octet_seed": CERTIFYING,
    "octet_patience": CERTIFYING,
    "octet_report_dir": CERTIFYING,
    "octet_simulate": ("octet-extension", "octet-host"),
    "octet_host_api": ("octet-host",),
    "octet_baseline": (*CERTIFYING, "octet-run"),
    "octet_only": (*CERTIFYING, "octet-run"),
    "octet_section": (*CERTIFYING, "octet-run"),
    "octet_strict": (*CERTIFYING, "octet-run"),
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def option_problems(config: pytest.Config, targets: list[Target]) -> list[str]:
    """Options no given target uses, and combinations that would silently
    lose something: each a line saying how to fix the call."""
    labels = {t.label for t in targets}
    problems = []
    for dest, takers in TAKEN_BY.items():
        value = config.getoption(dest)
        if value in (None, False, []) or labels & set(takers):
            continue
        given = ", ".join(TARGET_FLAGS[x] for x in sorted(labels)) or "no target option"
        wanted = ", ".join(TARGET_FLAGS[x] for x in takers)
        problems.append(f"{_flag(dest)} means nothing with {given}: it applies to {wanted}")
    if config.getoption("octet_report_dir") and len(labels & set(CERTIFYING)) > 1:
        problems.append("--octet-report-dir with more than one certification: each would overwrite the other's run")
    return problems


# The command line's flags, as this plugin spells them, in what the command line says.
_CLI_FLAGS = re.compile(r"(?<![\w-])--(profile|seed|patience|simulate|baseline|only|section|api-version|driver)\b")
_PLUGIN_FLAGS = {"api-version": "--octet-host-api", "driver": "the command of --octet-host"}
_CLI_PREFIX = re.compile(r"^octet-conformance(?: [a-z]+: error:)?:? ")


def preflight(target: Target) -> str:
    """What the command line refuses in this target's certification, found
    with ``--list`` (arguments, manifest, command, selection, baseline checked;
    nothing started): "" when it would run."""
    code, output = _run_cli(target.argv, "--list")
    if code == 0:
        return ""
    # Its own lines, without argparse's usage (which names the command line's flags).
    said = [_CLI_PREFIX.sub("", line) for line in output.splitlines() if _CLI_PREFIX.match(line)]
    text = "\n".join(said or output.strip().splitlines()[-3:])
    return _CLI_FLAGS.sub(lambda m: _PLUGIN_FLAGS.get(m[1], f"--octet-{m[1]}"), text)


def pytest_configure(config: pytest.Config) -> None:
    """Refuse a call that cannot be honoured as one usage error, before any
    item exists: once in the main process (xdist workers were started by it,
    and report to it)."""
    if hasattr(config, "workerinput"):
        return
    targets = targets_of(config)
    problems = option_problems(config, targets)
    for target in targets if not problems else ():
        if target.run_dir is not None:  # a finished run: readable, and a baseline that fits its target
            name = str(_load(target.run_dir).target.get("name", ""))
            refusal = _baseline_problem(config, name)
        else:  # an extension's baseline is the command line's, checked by its --list
            applied_here = target.label != "octet-extension"
            refusal = preflight(target) or (_baseline_problem(config, None) if applied_here else "")
        if refusal:
            problems.append(f"{TARGET_FLAGS[target.label]}: {refusal}")
    if problems:
        raise pytest.UsageError("\n".join(problems))


def _baseline_problem(config: pytest.Config, target: str | None) -> str:
    """Why ``--octet-baseline`` cannot be used ("" when it can, or is not given);
    ``target``: the run's target name, when known before the run."""
    from conformance.report.baseline import BaselineError

    try:
        _baseline(config, target)
    except BaselineError as exc:
        return f"--octet-baseline rejected: {exc}"
    return ""


def _baseline(config: pytest.Config, target: str | None) -> Baseline | None:
    from conformance.report.baseline import load_baseline
    from conformance.requirements import load_catalog

    path = config.getoption("octet_baseline")
    return load_baseline(Path(path), (r.id for r in load_catalog()), target=target) if path else None


def collector_nodeid(config: pytest.Config, label: str) -> str:
    """The node id of a target's items' parent, chosen so they read
    ``octet-run::ID`` wherever pytest runs. pytest takes a node id's first part
    as a file below its rootdir and shows it from the directory it was started
    in; these items have no file, so a rootdir moved up or aside (by a path
    among the arguments, or --rootdir) showed ``../repo/octet-run::ID``. The
    first part is therefore ``label`` in the start directory: just ``label``
    when pytest starts in its rootdir (the usual case, and the JUnit class
    name then), the path down to it below the rootdir, an absolute path
    outside it (pytest never collapses ``..``; an absolute part it shows as
    is, relative to the start directory)."""
    here, root = config.invocation_params.dir, config.rootpath
    if here == root:
        return label
    return (here / label).relative_to(root).as_posix() if here.is_relative_to(root) else (here / label).as_posix()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for target in targets_of(config):
        nodeid = collector_nodeid(config, target.label)
        collector = Certification.from_parent(session, name=target.label, nodeid=nodeid, target=target)
        found = collector.collect()
        # Reported like any collected node, so "collected N items" and -n scheduling count them.
        collector.ihook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, [*found]))
        items.extend(found)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not isinstance(item, RequirementItem):
        return report
    if report.skipped and isinstance(report.longrepr, tuple):
        # A skip names the requirement, not the line of this plugin that raised it.
        # (pytest prints "path: reason" for a line number of None; its annotation says int)
        report.longrepr = (item.nodeid, None, report.longrepr[2])  # type: ignore[assignment]
    if report.when == "setup":
        # The certification (or the wait for another worker's) is no item's own time: without
        # this, the first item -- often a skip -- would carry the whole run in JUnit and --durations.
        report.duration = max(0.0, report.duration - item.shared_s)
        if call.excinfo is not None and isinstance(call.excinfo.value, OctetHarnessError):
            report.longrepr = str(call.excinfo.value)  # the command line's message, not this plugin's traceback
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
    shared_s = 0.0  # seconds this item's setup spent obtaining the shared certification

    def setup(self) -> None:
        parent = self.parent
        assert isinstance(parent, Certification)
        fresh = parent.target.label not in self.config.stash.get(_OUTCOMES, {})
        started = monotonic()
        self.outcome = outcome_of(self.config, parent.target)
        if fresh:
            self.shared_s = monotonic() - started
            if parent.target.run_dir is None:
                self.user_properties.append(("octet_certification_s", f"{self.shared_s:.3f}"))
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
    # workerinput, not the PYTEST_XDIST_WORKER variable: a pytest started inside an
    # xdist worker (pytester) inherits the variable, and would share its parent's records.
    return base.parent if hasattr(config, "workerinput") else base


def _worker(config: pytest.Config) -> str:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


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
        return _read_back(config, target.run_dir, _load(target.run_dir), "an earlier run")
    shared = _shared_dir(config)
    run_dir = report_dir_of(config, target.label)
    record = shared / f"{target.label}.json"
    with _locked(shared / f"{target.label}.lock"):
        if not record.exists():
            before = _stamp(run_dir / "matrix.json")
            started = monotonic()
            code, output = _certify(target, run_dir)
            written = _stamp(run_dir / "matrix.json") not in (None, before)  # not an earlier run's matrix
            seconds = round(monotonic() - started, 3)
            done = {"code": code, "output": output, "by": _worker(config), "written": written, "seconds": seconds}
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
    return _read_back(config, run_dir, run, done["by"])


def report_dir_of(config: pytest.Config, label: str) -> Path:
    chosen = config.getoption("octet_report_dir")
    return Path(chosen).resolve() if chosen else _shared_dir(config) / f"{label}-report"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Where the certification's time went: it belongs to no item (see
    pytest_runtest_makereport), so it is said once here."""
    if hasattr(config, "workerinput"):
        return
    for target in targets_of(config):
        record = _shared_dir(config) / f"{target.label}.json"
        try:
            done = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not certified in this session (deselected, or a finished run read back)
        took = f"{done.get('seconds', 0.0):.1f} s by {done.get('by')} (not counted in any item's time)"
        if done.get("written"):
            where = f"run in {report_dir_of(config, target.label)}"
            terminalreporter.write_line(f"octet-conformance: {target.label} certified in {took}; {where}")
        else:
            terminalreporter.write_line(
                f"octet-conformance: {target.label} could not run (exit {done.get('code')}): {took}"
            )


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _read_back(config: pytest.Config, run_dir: Path, run: Run, by: str) -> Outcome:
    """The items' verdicts: the run's, with ``--octet-baseline`` applied --
    listed failures become xfail and entries that pass now are stale (their
    items fail: baselines only shrink), whichever target the run was of."""
    from conformance.report.baseline import BaselineError, apply_to_results

    results = {str(r["id"]): r for r in run.results}
    name = str(run.target.get("name", ""))
    try:
        baseline = _baseline(config, name)
    except BaselineError as exc:  # checked before the run, but a host's name is known only after it
        return Outcome(run_dir, {}, f"--octet-baseline rejected: {exc}", by)
    if baseline is None:
        return Outcome(run_dir, results, "", by)
    results, stale = apply_to_results(results, baseline, name)
    return Outcome(run_dir, results, "", by, stale)


def _certify(target: Target, run_dir: Path) -> tuple[int, str]:
    """The command line, in-process, into ``run_dir``: its exit status and what it printed."""
    return _run_cli(target.argv, "--report-dir", str(run_dir))


def _run_cli(argv: tuple[str, ...], *options: str) -> tuple[int, str]:
    """The command line, in-process, with ``options`` added: its exit status and what it printed."""
    from conformance.cli import cache_dir, main

    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache_dir()))
    out = io.StringIO()
    args = [*argv]
    # options before a hostcore's "--": everything after it is the target's command
    at = args.index("--") if "--" in args else len(args)
    args[at:at] = options
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(args)
        except SystemExit as exc:  # an argument the CLI refused (usage on stderr)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue()
