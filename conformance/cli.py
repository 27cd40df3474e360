"""``octet-conformance``: the command line.

Exit status: 0 no ``must`` requirement failed; 1 one did; 2 the harness could
not run (bad arguments, bad manifest, target could not be spawned, a harness
error); 128 + N stopped by signal N (SIGINT, SIGTERM, SIGHUP).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import inspect
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only light modules at the top: a refused input (bad manifest, a command
# that cannot start, a bad argument) is answered in a fraction of a second.
# The run's modules (Hypothesis, jsonschema: about a second to import) are
# imported by the functions that run something.
from .manifest import Manifest, ManifestError, load_manifest
from .requirements import CatalogError, Requirement, load_catalog
from .runner import arguments, stopping
from .runner.profiles import PROFILES
from .runner.reportdir import ReportDirError, staged
from .safe_text import terminal
from .selection import Selection
from .transport.process import (
    Stopping,
    enable_subreaper,
    kill_orphans,
    kill_spawned_groups,
    raise_if_stopping,
    sanitized_env,
)
from .transport.startup import CURRENT_FOLDER, StartFailure, check_startable

if TYPE_CHECKING:
    from typing import TypeAlias

    from .evidence import Recorder
    from .peers.ext_host import Launcher
    from .peers.rpc_client import HostcoreCommand
    from .peers.rpc_hostcore import ClientCommand
    from .runner.extension import RunResult

    Watch: TypeAlias = Callable[[Recorder], None] | None  # a runner calls it with its recorder (runner/progress.py)

EXIT_OK, EXIT_FAIL, EXIT_HARNESS = 0, 1, 2


def default_manifest() -> Path:
    """The bundled default target: the reference extension at API 0.2."""
    ref = resources.files("conformance.reference.extension") / "manifests" / "api-0.2" / "extension.toml"
    return Path(str(ref))


def cache_dir() -> Path:
    """Where Hypothesis keeps its caches: per user, never in the cwd, and never
    at the filesystem root when HOME is unset, empty or not a directory."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "octet-conformance"
    home = os.environ.get("HOME", "")
    if os.path.isabs(home) and os.path.isdir(home) and Path(home).resolve() != Path("/"):
        return Path(home) / ".cache" / "octet-conformance"
    return Path(tempfile.gettempdir()) / f"octet-conformance-{os.getuid()}"


def _own_the_process() -> None:
    """The real command line only (not a caller embedding main()): it owns its
    children, so it may stop on signals and adopt their orphans."""
    # Hypothesis keeps caches (its character map costs ~200 MiB to build
    # cold) in a storage directory; keep it per user, not in the cwd.
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache_dir()))
    stopping.install()
    enable_subreaper()
    atexit.register(kill_orphans)
    atexit.register(kill_spawned_groups)


SIMULATE_HELP = (
    "run the reference extension in-process on a virtual clock (deterministic, fast; "
    "only for the reference extension; traces still replay against the real process)"
)
SEED_HELP = "Hypothesis seed, a whole number 0 <= N < 2**64"
PATIENCE_HELP = "seconds (0 < S <= 3600) to wait for any one response (default 15; startup: twice)"


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        _own_the_process()
    try:
        return _main(argv)
    except Stopping as exc:
        code, line = stopping.finish(exc)
        print(line, file=sys.stderr)
        return code
    except BrokenPipeError:
        # A reader such as `head` went away: say nothing more, like a tool
        # killed by SIGPIPE (and keep Python from complaining at exit).
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except Exception as exc:  # noqa: BLE001 -- a bug in the harness: exit 2 with one line, not a traceback
        if os.environ.get("OCTET_CONFORMANCE_TRACEBACK"):
            raise
        print(
            f"octet-conformance: internal error: {type(exc).__name__}: {exc} "
            "(set OCTET_CONFORMANCE_TRACEBACK=1 to see where)",
            file=sys.stderr,
        )
        return EXIT_HARNESS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="octet-conformance", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)

    ext = sub.add_parser("extension", help="certify an extension described by its extension.toml")
    ext.add_argument("manifest", nargs="?", type=Path, help="path to extension.toml (default: the reference extension)")
    ext.add_argument(
        "--report-dir",
        type=arguments.output_dir,
        default=Path("reports/latest"),
        help="where matrix.json, junit.xml, report.html, traces/ go (default reports/latest); written whole at the end",
    )
    ext.add_argument("--profile", choices=sorted(PROFILES), default="default")
    ext.add_argument("--seed", type=arguments.seed, default=None, help=SEED_HELP)
    ext.add_argument("--patience", type=arguments.patience, default=15.0, help=PATIENCE_HELP)
    ext.add_argument(
        "--regressions", type=arguments.existing_dir, default=None, help="replay saved fuzz cases (a directory) first"
    )
    ext.add_argument("--simulate", action="store_true", help=SIMULATE_HELP)
    ext.add_argument(
        "--jobs",
        type=arguments.jobs,
        default=1,
        help="run the certification's parts (scenarios, sweep, exploration shards) in N worker processes; "
        "the same seed gives the same results for any N (default 1)",
    )
    ext.add_argument(
        "--baseline",
        type=arguments.existing_file,
        default=None,
        help="TOML of expected failures: listed ones become xfail; unlisted failures and stale entries fail the run",
    )
    add_run_options(ext, "extension")

    fz = sub.add_parser("fuzz", help="explore with fresh seeds for a while; keep every failure as a regression case")
    fz.add_argument("manifest", type=Path)
    fz.add_argument("--seconds", type=arguments.fuzz_seconds, default=300.0, help="time box in seconds (default 300)")
    fz.add_argument("--regressions", type=arguments.output_dir, default=Path("fuzz-regressions"))
    fz.add_argument("--work-dir", type=arguments.output_dir, default=Path("reports/fuzz"))
    fz.add_argument("--seed", type=arguments.seed, default=None, help="seed of the seed sequence, 0 <= N < 2**64")
    fz.add_argument("--patience", type=arguments.patience, default=15.0, help=PATIENCE_HELP)
    fz.add_argument("--simulate", action="store_true", help=SIMULATE_HELP)

    rep = sub.add_parser("replay", help="re-run a recorded failure and re-check its requirement")
    rep.add_argument(
        "trace", type=arguments.existing_file, help="a trace written beside matrix.json (traces/<id>.jsonl)"
    )
    rep.add_argument(
        "--target", type=arguments.existing_file, default=None, help="another extension.toml to replay against"
    )
    rep.add_argument(
        "--runs", type=arguments.runs, default=1, help="replay N times (1..10000) and report the reproduction rate"
    )
    rep.add_argument("--patience", type=arguments.patience, default=15.0, help=PATIENCE_HELP)

    _add_rpc_parser(
        sub,
        "hostcore",
        help="certify a host-core (host RPC protocol v11); the harness plays the client",
        description="Command after --; {data_dir} in it receives a fresh directory. No command: the reference.",
    )
    _add_rpc_parser(
        sub,
        "client",
        help="certify a host RPC client (protocol v11); the harness plays its host-core",
        description="Command after --: a client speaking docs/client-driver.md, given the host-core command "
        "after its own arguments. No command: the reference client.",
    )

    req = sub.add_parser("requirements", help="list catalog entries")
    sides = sorted({r.side for r in load_catalog()})
    req.add_argument("--side", choices=sides, default=None, help="only entries of this side")
    req.add_argument("--stats", action="store_true", help="per-section counts instead of the entries")
    req.add_argument(
        "-v", "--verbose", action="store_true", help="add the code that judges each entry (or why none does)"
    )
    req.add_argument(
        "--diff",
        type=Path,
        default=None,
        metavar="OTHER",
        help="compare with another catalog (a .toml file or a directory of them): added, removed, changed entries",
    )
    add_host_parser(sub)
    _add_report_commands(sub)
    return parser


def _add_rpc_parser(sub: Any, name: str, **texts: str) -> None:
    """``hostcore`` and ``client``: one target command after ``--``, the same options."""
    parser = sub.add_parser(name, **texts)
    parser.add_argument("--report-dir", type=arguments.output_dir, default=Path(f"reports/{name}"))
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default")
    parser.add_argument("--seed", type=arguments.seed, default=None, help=SEED_HELP)
    parser.add_argument("--patience", type=arguments.patience, default=15.0, help=PATIENCE_HELP)
    parser.add_argument(
        "target_argv", nargs=argparse.REMAINDER, metavar="-- CMD", help="-- CMD ARG ... (default: the reference)"
    )
    add_run_options(parser, name)


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "host":
        return certify_host_command(args)
    if args.command == "hostcore":
        return certify_hostcore_command(args)
    if args.command == "client":
        return certify_client_command(args)
    if args.command == "requirements" and args.diff is not None:
        return catalog_diff(args.diff)
    if args.command in READ_ONLY_COMMANDS:
        return READ_ONLY_COMMANDS[args.command](args)
    if args.command == "requirements":
        return requirement_stats(args.side) if args.stats else list_requirements(args.side, verbose=args.verbose)
    if args.command == "replay":
        return replay_trace(args)
    if args.command == "fuzz":
        return fuzz_target(args)
    return certify(args)


def launcher_for(manifest: Manifest, simulate: bool) -> Launcher:
    """How targets start; raises StartFailure when the command cannot."""
    if not simulate:
        # Before anything is spawned, with the PATH every target gets (the
        # brokered variables of §1.1 never change PATH).
        check_startable(manifest.command, manifest.folder, sanitized_env())
        from .peers.ext_host import spawn_process

        return spawn_process
    from .peers.simulated import is_reference, simulated_reference

    if not is_reference(manifest):
        raise ManifestError(f"--simulate runs only the reference extension in-process; {manifest.path} is another")
    return simulated_reference


def refused(exc: Exception) -> int:
    """One line (two, with a hint) on stderr for a run that cannot happen.
    Target and manifest text in it is escaped (conformance/safe_text.py)."""
    what = "manifest rejected before spawn: " if isinstance(exc, ManifestError) else ""
    print(f"octet-conformance: {what}{terminal(str(exc), keep_newlines=True)}", file=sys.stderr)
    return EXIT_HARNESS


# -- options every certification takes: selection, strictness, dry run, verbosity ----------------


@dataclasses.dataclass(frozen=True)
class RunOptions:
    role: str
    selection: Selection = Selection()
    strict: bool = False  # a should violation (warn) fails the run too
    dry_run: bool = False
    verbosity: int = 1  # report/console.py: QUIET 0, NORMAL 1, VERBOSE 2

    @property
    def judged(self) -> frozenset[str] | None:
        return self.selection.judged(role_requirements(self.role))


def add_run_options(parser: argparse.ArgumentParser, role: str) -> None:
    from .verdicts import TARGET_SIDES

    sel = parser.add_argument_group(
        "selection", "judge only some requirements (the run still explores the same way; the rest are not reported)"
    )
    sel.add_argument(
        "--only", action="append", default=[], type=arguments.id_glob, metavar="ID-GLOB",
        help="requirement ids or globs of them, e.g. 'EXT-1.9-*' (repeatable)",
    )  # fmt: skip
    sel.add_argument(
        "--section", action="append", default=[], type=arguments.section, metavar="N",
        help="a section and its subsections, e.g. 1.9 (repeatable)",
    )  # fmt: skip
    sel.add_argument(
        "--side", action="append", default=[], choices=TARGET_SIDES[role],
        help=f"requirements on the {role} alone, or on both peers (repeatable; only the host RPC protocol "
        "has both-side requirements: elsewhere 'both' selects nothing and is refused)",
    )  # fmt: skip
    sel.add_argument(
        "--feature", action="append", default=[], type=arguments.feature, metavar="NAME",
        help="requirements that need this negotiated feature (repeatable)",
    )  # fmt: skip
    sel.add_argument("--strict", action="store_true", help="a should violation (warn) fails the run too (exit 1)")
    sel.add_argument(
        "--list", "--dry-run", dest="dry_run", action="store_true",
        help="print the requirements the run would judge and start nothing (arguments and manifest are checked)",
    )  # fmt: skip
    out = parser.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", help="no progress; only the summary and fail/warn lines")
    out.add_argument(
        "-v", "--verbose", action="store_true", help="every verdict, and each failure's run details (first seen, count)"
    )


def role_requirements(role: str) -> list[Requirement]:
    """The catalog entries a certification of ``role`` judges (before any selection)."""
    from .verdicts import concerns

    return [r for r in load_catalog() if concerns(r, role)]


def run_options(args: argparse.Namespace, role: str) -> RunOptions | None:
    """The options, or None (after saying why on stderr) when the selection selects nothing."""
    selection = Selection(tuple(args.only), tuple(args.section), tuple(args.side), tuple(args.feature))
    problems = selection.problems(role_requirements(role), role)
    for line in problems:
        print(f"octet-conformance: {line}", file=sys.stderr)
    if problems:
        return None
    verbosity = 0 if args.quiet else 2 if args.verbose else 1
    return RunOptions(role, selection, args.strict, args.dry_run, verbosity)


def dry_run(options: RunOptions, api_version: str, what: str) -> int:
    """``--list``/``--dry-run``: what the run would judge, and nothing started."""
    from .verdicts import applies_to_api

    chosen = options.selection.select(role_requirements(options.role))
    for r in chosen:
        status = "judged" if r.has_check else "untested: no check yet"
        if not applies_to_api(r, api_version):
            status = f"skip: applies to API {', '.join(r.api)}"
        print(f"{r.id}\t{r.section}\t{r.level}\t{r.side}\t{status}")
    judged = sum(r.has_check and applies_to_api(r, api_version) for r in chosen)
    print(
        terminal(f"dry run: {what}: {len(chosen)} requirement(s) selected, {judged} with a check that applies; "
                 "nothing was started")
    )  # fmt: skip
    return EXIT_OK


def fuzz_target(args: argparse.Namespace) -> int:
    """Exit 1 when exploration found a new failing requirement, else 0."""
    from .peers.ext_host import Patience
    from .runner.fuzz import fuzz

    try:
        manifest = load_manifest(args.manifest)
        launcher = launcher_for(manifest, args.simulate)
        result = fuzz(
            manifest,
            seconds=args.seconds,
            regressions=args.regressions,
            work_dir=args.work_dir,
            patience=Patience.of(args.patience),
            first_seed=args.seed,
            launcher=launcher,
        )
    except (ManifestError, StartFailure, ReportDirError) as exc:
        return refused(exc)
    for f in result.found:
        print(terminal(f"new failure {f.requirement} (seed {f.seed}): regression case {f.case}"))
    if result.harness_errors:
        # The round that failed judged nothing: never report it as "no failures".
        for e in result.harness_errors:
            print(f"harness error: {terminal(e, keep_newlines=True)}", file=sys.stderr)
        return EXIT_HARNESS
    rounds = f"{len(result.found)} new failing requirement(s) in {result.rounds} round(s)"
    print(terminal(f"{rounds}; cases in {args.regressions}"))
    return EXIT_FAIL if result.found else EXIT_OK


def replay_trace(args: argparse.Namespace) -> int:
    """Exit 1 when the failure reproduces (in any run), 0 when it does not."""
    from .peers.ext_host import Patience
    from .report.console import replayed_lines
    from .runner.host import is_host_trace, replay_host
    from .runner.replay import NotReplayable, replay
    from .runner.rpc_replay import replay_rpc, rpc_role
    from .transport.trace import load as load_trace
    from .transport.trace import marked_entries

    try:
        if is_host_trace(args.trace):  # a host certification's trace: re-run its scenario
            outcomes = replay_host(args.trace, runs=args.runs, patience_s=args.patience)
        elif rpc_role(args.trace) is not None:  # a host-core's or a client's: re-run its certification
            if args.target is not None:
                raise NotReplayable("--target names an extension.toml; a host RPC trace replays its own command")
            outcomes = replay_rpc(args.trace, runs=args.runs, patience_s=args.patience)
        else:
            refuse_stepless(args.trace, args.target)
            outcomes = replay(args.trace, target=args.target, runs=args.runs, patience=Patience.of(args.patience))
    except (OSError, ValueError, KeyError, TypeError, ManifestError, NotReplayable) as exc:
        print(terminal(f"octet-conformance: cannot replay {args.trace}: {exc}", keep_newlines=True), file=sys.stderr)
        return EXIT_HARNESS
    raise_if_stopping()  # a replay cut short by a signal proves nothing either way
    hits = sum(o.reproduced for o in outcomes)
    first = next((o for o in outcomes if o.reproduced), outcomes[0])
    # An extension replay re-records the marked frames and the relations it
    # could not re-create; one that re-runs a scenario shows the trace's own.
    marked: list[dict[str, Any]] = list(first.marked)
    unmet: list[str] | None = [u for o in outcomes if not o.reproduced for u in o.unmet]
    if first.recording is None:
        header, entries = load_trace(args.trace)
        marked, unmet = marked_entries(entries, header.get("evidence")), None
    for line in replayed_lines(first.requirement, len(outcomes), hits, first.evidence, marked, unmet):
        print(line)
    return EXIT_FAIL if hits else EXIT_OK


def refuse_stepless(trace: Path, target: Path | None) -> None:
    """An extension trace is its steps: one with a header and no write of the
    host's (not even initialize) can show nothing, and "reproduced 0/1"
    would read as "fixed". Refused (TraceError) once the header and entries
    are otherwise sound, so a bad line is still named for what it is. A
    manifest trace has no steps by design: replay re-checks the manifest."""
    from .runner.replay import check_entries, check_header
    from .transport.trace import TraceError, load

    header, entries = load(trace)
    check_header(header, target)
    check_entries(entries)
    if header.get("scenario") != "manifest" and not any(e.get("dir") == "host->target" for e in entries):
        raise TraceError(
            "trace line 1: a header and no steps (not even initialize): nothing to replay; "
            "a trace that replays holds every write of the generation that failed"
        )


def list_requirements(side: str | None, *, verbose: bool = False) -> int:
    """One line per entry: id, section, level, side and what it requires (the
    catalog's statement); ``verbose`` adds the code that judges it, or why
    nothing does. Tab-separated, one entry a line, for ``cut`` and ``grep``."""
    for r in load_catalog():
        if side and r.side != side:
            continue
        line = f"{r.id}\t{r.section}\t{r.level}\t{r.side}\t{' '.join(r.summary.split())}"
        if verbose:
            line += "\t" + (r.check if r.has_check else "none: " + " ".join(r.reason.split()))
        print(line)  # the catalog is ours: no target text to escape
    return EXIT_OK


# One column per side the catalog knows (every certified role, then "both").
_STAT_COLUMNS = ("entries", "check", "reason", "extension", "host", "hostcore", "client", "both", "must", "should")


def requirement_stats(side: str | None) -> int:
    """Per document and section: entries, with a check, with a reason only,
    by side and by level (one row each, then a total row)."""
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for r in load_catalog():
        if side and r.side != side:
            continue
        row = rows.setdefault((r.document, r.section), dict.fromkeys(_STAT_COLUMNS, 0))
        for column in ("entries", "check" if r.has_check else "reason", r.side, r.level):
            if column in row:
                row[column] += 1
    total = {c: sum(row[c] for row in rows.values()) for c in _STAT_COLUMNS}
    print("document\tsection\t" + "\t".join(_STAT_COLUMNS))
    for (document, section), row in sorted(rows.items(), key=lambda kv: (kv[0][0], _section_key(kv[0][1]))):
        print(f"{document}\t{section}\t" + "\t".join(str(row[c]) for c in _STAT_COLUMNS))
    print("total\t\t" + "\t".join(str(total[c]) for c in _STAT_COLUMNS))
    return EXIT_OK


def _section_key(section: str) -> tuple[tuple[int, str], ...]:
    """ "1.4b" sorts after "1.4" and before "1.5"; "1.10" after "1.9"."""
    parts = []
    for part in section.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append((int(digits) if digits else -1, part[len(digits) :]))
    return tuple(parts)


def certify(args: argparse.Namespace) -> int:
    options = run_options(args, "extension")
    if options is None:
        return EXIT_HARNESS
    try:
        manifest = load_manifest(args.manifest or default_manifest())
        launcher = launcher_for(manifest, args.simulate)
    except (ManifestError, StartFailure) as exc:
        return refused(exc)
    from .report.baseline import BaselineError, Entry, apply_baseline, load_baseline

    try:  # before --list returns: a dry run refuses what the run would refuse
        known = (r.id for r in load_catalog())
        baseline = load_baseline(args.baseline, known, target=manifest.name) if args.baseline else None
    except BaselineError as exc:
        print(f"octet-conformance: baseline rejected before spawn: {terminal(str(exc))}", file=sys.stderr)
        return EXIT_HARNESS
    if options.dry_run:
        what = f"{manifest.name} {manifest.version} (API {manifest.api_version})"
        return dry_run(options, manifest.api_version, what)
    from .peers.ext_host import Patience
    from .runner.extension import certify_extension

    profile = PROFILES[args.profile]
    run_seed = profile.default_seed if args.seed is None else args.seed
    stale: list[Entry] = []

    def produce(trace_dir: Path, watch: Watch) -> RunResult:
        run = certify_extension(
            manifest,
            profile,
            run_seed,
            Patience.of(args.patience),
            trace_dir=trace_dir,
            regressions=args.regressions,
            launcher=launcher,
            judged=options.judged,
            watch=watch,
            jobs=args.jobs,
        )
        if baseline is None:
            return run
        applied = apply_baseline(run.verdicts, baseline, manifest.name)
        stale.extend(applied.stale)
        return dataclasses.replace(run, verdicts=applied.verdicts)

    code = run_and_report(args.report_dir, produce, options=options, budget=profile.examples)
    for entry in stale:  # baselines only shrink: an entry that passes now fails the run
        print(terminal(f"  STALE {entry.key}: listed in {args.baseline} but passes now; remove the entry"))
    return EXIT_FAIL if stale and code == EXIT_OK else code


def run_and_report(
    report_dir: Path,
    produce: Callable[..., RunResult],
    title: str | None = None,
    *,
    options: RunOptions | None = None,
    budget: int = 0,
) -> int:
    """Run a certification into ``report_dir`` and print its outcome (exit
    0/1/2). The run is written whole into a staging directory and moved into
    place at the end: an interrupted run leaves the directory as it was.
    ``produce(trace_dir, watch)`` runs it, handing ``watch`` (None: no
    progress display) its recorder; a one-argument ``produce(trace_dir)``
    is still taken (a command without a progress display). ``options``: selection, --strict,
    verbosity (default: none of them). ``budget``: the state machine's
    examples, for the progress line."""
    options = options or RunOptions("extension")
    from .report.console import QUIET, VERBOSE, run_lines
    from .report.html import REPORT_NAME, write_run_report
    from .report.junit import write_junit
    from .report.matrix import write_matrix
    from .runner.progress import Progress
    from .verdicts import summary

    shown = options.selection.describe()
    try:
        with staged(report_dir) as stage:
            # On a terminal: the live line (unless --quiet). Elsewhere stderr
            # carries only what went wrong, unless --verbose asks for plain progress lines.
            live = _is_terminal(sys.stderr)
            progress = Progress(sys.stderr, live=live, budget=budget)
            shown_progress = options.verbosity >= VERBOSE or (live and options.verbosity > QUIET)
            with progress if shown_progress else contextlib.nullcontext():
                watch = progress.watch if shown_progress else None
                takes_watch = len(inspect.signature(produce).parameters) >= 2
                run = produce(stage / "traces", watch) if takes_watch else produce(stage / "traces")
            run = dataclasses.replace(run, selection=shown)
            write_matrix(run, stage)
            write_junit(run, stage, strict=options.strict)
            # Read back from the staged matrix, as `report` reads a finished run (reports only read
            # verdicts); replay commands name the directory the run is about to be moved into.
            write_run_report(stage, report_dir.resolve())
    except (StartFailure, ReportDirError) as exc:  # StartFailure: a later generation could not start
        return refused(exc)
    for line in run_lines(run, report_dir / "matrix.json", title, verbosity=options.verbosity, written_in=stage):
        print(line)
    if options.verbosity > QUIET:
        print(f"report: {terminal(str(report_dir / REPORT_NAME))}")
    if shown and options.verbosity > QUIET:
        print(terminal(f"selection: {shown} ({len(run.verdicts)} requirement(s) judged; the others are not reported)"))
    if run.strays:
        print(
            f"{len(run.strays)} stray process(es) killed: descendants that had left their target's process group "
            f"(first: {terminal(run.strays[0])}; all in run.strays of matrix.json)",
            file=sys.stderr,
        )
    if run.harness_errors:
        for e in run.harness_errors:
            print(f"harness error: {terminal(e, keep_newlines=True)}", file=sys.stderr)
        return EXIT_HARNESS
    counts = summary(run.verdicts)
    return EXIT_FAIL if counts["fail"] or (options.strict and counts["warn"]) else EXIT_OK


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# -- octet-conformance host ------------------------------------------------------------------


def add_host_parser(sub: Any) -> None:
    host = sub.add_parser("host", help="certify a host through its driver (docs/host-driver.md)")
    host.add_argument(
        "--driver",
        default=None,
        help='the driver command, split like a shell would, e.g. "node driver.js" (default: the reference host)',
    )
    host.add_argument("--api-version", choices=("0.1", "0.2", "0.4"), default="0.2", help="the probe's API version")
    host.add_argument(
        "--report-dir",
        type=arguments.output_dir,
        default=Path("reports/host"),
        help="where matrix.json, junit.xml, report.html, traces/ go (default reports/host); written whole at the end",
    )
    host.add_argument("--profile", choices=sorted(PROFILES), default="default")
    host.add_argument("--seed", type=arguments.seed, default=None, help=SEED_HELP)
    host.add_argument(
        "--patience", type=arguments.patience, default=10.0, help="seconds (0 < S <= 3600) to wait for the host to act"
    )
    host.add_argument(
        "--simulate",
        action="store_true",
        help="run the bundled reference host, its probes and the harness in-process on a virtual clock "
        "(deterministic and fast; not with --driver)",
    )
    add_run_options(host, "host")


def certify_host_command(args: argparse.Namespace) -> int:
    """Exit 0: no must failed; 1: one did; 2: the driver or the harness failed."""
    from .runner.host import REFERENCE_DRIVER, SIMULATED_DRIVER, certify_host, machine_examples

    options = run_options(args, "host")
    if options is None:
        return EXIT_HARNESS

    if args.simulate and args.driver is not None:
        print("octet-conformance: --simulate runs only the bundled reference host; drop --driver", file=sys.stderr)
        return EXIT_HARNESS
    try:
        argv = shlex.split(args.driver) if args.driver is not None else list(REFERENCE_DRIVER)
    except ValueError as exc:
        print(f"octet-conformance: cannot split --driver: {terminal(str(exc))}", file=sys.stderr)
        return EXIT_HARNESS
    if not argv:
        print("octet-conformance: --driver is empty", file=sys.stderr)
        return EXIT_HARNESS
    profile = PROFILES[args.profile]
    run_seed = profile.default_seed if args.seed is None else args.seed
    shown = SIMULATED_DRIVER if args.simulate else argv
    if options.dry_run:
        return dry_run(options, args.api_version, f"host {shlex.join(shown)} (probe API {args.api_version})")

    def produce(trace_dir: Path, watch: Watch) -> RunResult:
        return certify_host(
            argv, args.api_version, profile, run_seed, patience_s=args.patience, trace_dir=trace_dir,
            simulate=args.simulate, judged=options.judged, watch=watch,
        )  # fmt: skip

    title = f"host {shlex.join(shown)} (probe API {args.api_version}), profile {profile.name}, seed {run_seed}"
    return run_and_report(args.report_dir, produce, title, options=options, budget=machine_examples(profile))


# -- octet-conformance hostcore (host RPC protocol v11) ------------------------------------------


def hostcore_command(argv: list[str]) -> HostcoreCommand:
    """The host-core to certify: the argv after ``--`` (the reference without one)."""
    from .peers.rpc_client import HostcoreCommand
    from .runner.hostcore import reference_command

    if argv and argv[0] == "--":
        argv = argv[1:]
    return HostcoreCommand(tuple(argv), Path.cwd()) if argv else reference_command()


def certify_hostcore_command(args: argparse.Namespace) -> int:
    """``octet-conformance hostcore [-- CMD ...]``: the harness plays the client."""
    from .peers.rpc_client import DATA_DIR
    from .runner.hostcore import certify_hostcore

    command = hostcore_command(list(args.target_argv))
    # Before anything starts: a command that cannot receive its data directory
    # would run against the wrong one, or create "{datadir}" right here.
    problem = arguments.data_dir_problem(command.argv, DATA_DIR)
    if problem is not None:
        return refused(ValueError(problem))
    return _certify_rpc(args, "hostcore", "host-core", command, certify_hostcore)


def _certify_rpc(
    args: argparse.Namespace, role: str, label: str, command: Any, certify: Callable[..., RunResult]
) -> int:
    """``hostcore`` and ``client``: the same options, selection, run and report;
    ``certify(command, profile, seed, ...)`` plays the other side."""
    from .protocol.rpc_limits import PROTOCOL_VERSION

    options = run_options(args, role)
    if options is None:
        return EXIT_HARNESS
    profile = PROFILES[args.profile]
    run_seed = profile.default_seed if args.seed is None else args.seed
    what = f"{label} {shlex.join(command.argv)}"
    if options.dry_run:  # lists what would be judged: nothing is started, so nothing is looked for
        return dry_run(options, str(PROTOCOL_VERSION), what)
    try:  # before anything starts, as for the other roles
        check_startable(list(command.argv), command.cwd, sanitized_env(), folder=CURRENT_FOLDER)
    except StartFailure as exc:
        return refused(exc)

    def produce(trace_dir: Path, watch: Watch) -> RunResult:
        return certify(
            command, profile, run_seed, response_s=args.patience, trace_dir=trace_dir, judged=options.judged,
            watch=watch,
        )  # fmt: skip

    title = f"{what}, profile {profile.name}, seed {run_seed}"
    return run_and_report(args.report_dir, produce, title, options=options, budget=profile.examples)


# -- octet-conformance client (host RPC protocol v11) ----------------------------------------------


def client_command(argv: list[str]) -> ClientCommand:
    """The client to certify: the argv after ``--`` (the reference without one)."""
    from .peers.rpc_hostcore import ClientCommand
    from .runner.client import reference_command

    if argv and argv[0] == "--":
        argv = argv[1:]
    return ClientCommand(tuple(argv), Path.cwd()) if argv else reference_command()


def certify_client_command(args: argparse.Namespace) -> int:
    """``octet-conformance client [-- CMD ...]``: the harness plays the host-core."""
    from .runner.client import certify_client

    command = client_command(list(args.target_argv))
    return _certify_rpc(args, "client", "client", command, certify_client)


# -- commands that only read finished run directories (ARCHITECTURE rule 6) --------------------


def _add_report_commands(sub: Any) -> None:
    html = sub.add_parser("report", help="one self-contained HTML file comparing run directories side by side")
    html.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="report directories (holding matrix.json)")
    html.add_argument(
        "-o", "--output", type=Path, default=Path("report.html"), help="file to write (report.html); - for stdout"
    )
    base = sub.add_parser("baseline", help="write a baseline listing every failure of a run directory")
    base.add_argument("run", type=Path, metavar="RUN_DIR")
    base.add_argument("-o", "--output", type=Path, required=True, help="baseline file to write (TOML); - for stdout")
    dif = sub.add_parser("diff", help="compare two run directories; exit 1 when B has new failures")
    dif.add_argument("run_a", type=Path, metavar="RUN_A")
    dif.add_argument("run_b", type=Path, metavar="RUN_B")
    dif.add_argument("--json", action="store_true", help="print the comparison as JSON")
    dif.add_argument(
        "--force", action="store_true", help="compare runs of different roles or targets (refused without it)"
    )


def html_report(args: argparse.Namespace) -> int:
    from .report.html import render
    from .report.rundir import RunDirError, load_run

    try:
        runs = [load_run(d) for d in args.runs]
    except RunDirError as exc:
        print(f"octet-conformance: {terminal(str(exc))}", file=sys.stderr)
        return EXIT_HARNESS
    return write_output(args.output, render(runs), "report", f"{len(runs)} run(s)")


def write_baseline(args: argparse.Namespace) -> int:
    from .report.baseline import baseline_toml
    from .report.rundir import RunDirError, load_run

    try:
        run = load_run(args.run)
    except RunDirError as exc:
        print(f"octet-conformance: {terminal(str(exc))}", file=sys.stderr)
        return EXIT_HARNESS
    text = baseline_toml(run)
    return write_output(args.output, text, "baseline", f"{text.count('[[expected]]')} expected failure(s)")


def write_output(path: Path, text: str, what: str, detail: str) -> int:
    """``-o PATH``: the file, written whole or not at all (conformance/outfiles.py),
    and a line saying so; ``-o -``: the text on stdout, and that line on
    stderr, so the document stays clean."""
    from .outfiles import write_text

    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        print(f"{what}: written to stdout ({detail})", file=sys.stderr)
        return EXIT_OK
    try:
        write_text(path, text)
    except OSError as exc:
        print(terminal(f"octet-conformance: cannot write {path}: {exc.strerror or exc}; nothing was changed"),
              file=sys.stderr)  # fmt: skip
        return EXIT_HARNESS
    print(terminal(f"{what}: {path} ({detail})"))
    return EXIT_OK


def diff_command(args: argparse.Namespace) -> int:
    from .report.diff import diff_runs, diff_text, refusals
    from .report.rundir import RunDirError, load_run

    try:
        a, b = load_run(args.run_a), load_run(args.run_b)
    except RunDirError as exc:
        print(f"octet-conformance: {terminal(str(exc))}", file=sys.stderr)
        return EXIT_HARNESS
    refused_for = refusals(a, b)
    if refused_for and not args.force:
        for x in refused_for:
            print(terminal(f"octet-conformance: {args.run_a} and {args.run_b}: {x.line()}"), file=sys.stderr)
        print("octet-conformance: diff compares two runs of one target; --force compares them anyway", file=sys.stderr)
        return EXIT_HARNESS
    d = diff_runs(a, b)
    if args.json:
        print(json.dumps(d.as_json(str(args.run_a), str(args.run_b)), indent=2, ensure_ascii=False))
    else:
        print(terminal(diff_text(d), keep_newlines=True))
    return EXIT_FAIL if d.new_failures else EXIT_OK


READ_ONLY_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "diff": diff_command,
    "report": html_report,
    "baseline": write_baseline,
}


def catalog_diff(other: Path) -> int:
    """Added, removed and changed entries of this catalog against ``other``."""
    from .requirements.compare import compare, diff_lines, read_other

    try:
        d = compare(read_other(other))
    except CatalogError as exc:
        print(f"octet-conformance: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    for line in diff_lines(d):
        print(line)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
