"""``octet-conformance``: the command line.

Exit status: 0 no ``must`` requirement failed; 1 one did; 2 the harness could
not run (bad arguments, bad manifest, target could not be spawned, a harness
error); 128 + N stopped by signal N (SIGINT, SIGTERM, SIGHUP).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from .manifest import Manifest, ManifestError, load_manifest
from .peers.ext_host import Launcher, Patience, spawn_process
from .peers.rpc_client import HostcoreCommand
from .peers.simulated import is_reference, simulated_reference
from .report.junit import write_junit
from .report.matrix import write_matrix
from .requirements import load_catalog
from .runner import arguments, stopping
from .runner.extension import RunResult, certify_extension
from .runner.fuzz import fuzz
from .runner.hostcore import HostcoreRunResult, certify_hostcore, reference_command
from .runner.profiles import PROFILES
from .runner.replay import NotReplayable, replay
from .runner.reportdir import ReportDirError, staged
from .transport.process import Stopping, enable_subreaper, kill_orphans, kill_spawned_groups, raise_if_stopping
from .verdicts import summary

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
        help="where matrix.json, junit.xml and traces/ go (default reports/latest); written whole at the end",
    )
    ext.add_argument("--profile", choices=sorted(PROFILES), default="default")
    ext.add_argument("--seed", type=arguments.seed, default=None, help=SEED_HELP)
    ext.add_argument("--patience", type=arguments.patience, default=15.0, help=PATIENCE_HELP)
    ext.add_argument(
        "--regressions", type=arguments.existing_dir, default=None, help="replay saved fuzz cases (a directory) first"
    )
    ext.add_argument("--simulate", action="store_true", help=SIMULATE_HELP)

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

    hc = sub.add_parser(
        "hostcore",
        help="certify a host-core (host RPC protocol v11); the harness plays the client",
        description="Command after --; {data_dir} in it receives a fresh directory. No command: the reference.",
    )
    hc.add_argument("--report-dir", type=arguments.output_dir, default=Path("reports/latest"))
    hc.add_argument("--profile", choices=sorted(PROFILES), default="default")
    hc.add_argument("--seed", type=arguments.seed, default=None, help=SEED_HELP)
    hc.add_argument("--patience", type=arguments.patience, default=15.0, help=PATIENCE_HELP)
    hc.add_argument(
        "target_argv", nargs=argparse.REMAINDER, metavar="-- CMD", help="-- CMD ARG ... (default: the reference)"
    )

    req = sub.add_parser("requirements", help="list catalog entries")
    sides = sorted({r.side for r in load_catalog()})
    req.add_argument("--side", choices=sides, default=None, help="only entries of this side")
    req.add_argument("--stats", action="store_true", help="per-section counts instead of the entries")
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "requirements":
        return requirement_stats(args.side) if args.stats else list_requirements(args.side)
    if args.command == "replay":
        return replay_trace(args)
    if args.command == "fuzz":
        return fuzz_target(args)
    if args.command == "hostcore":
        return certify_hostcore_cli(args)
    return certify(args)


def launcher_for(manifest: Manifest, simulate: bool) -> Launcher:
    if not simulate:
        return spawn_process
    if not is_reference(manifest):
        raise ManifestError(f"--simulate runs only the reference extension in-process; {manifest.path} is another")
    return simulated_reference


def fuzz_target(args: argparse.Namespace) -> int:
    """Exit 1 when exploration found a new failing requirement, else 0."""
    try:
        manifest = load_manifest(args.manifest)
        launcher_for(manifest, args.simulate)
    except ManifestError as exc:
        print(f"octet-conformance: manifest rejected before spawn: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    try:
        result = fuzz(
            manifest,
            seconds=args.seconds,
            regressions=args.regressions,
            work_dir=args.work_dir,
            patience=Patience.of(args.patience),
            first_seed=args.seed,
            launcher=launcher_for(manifest, args.simulate),
        )
    except ReportDirError as exc:
        print(f"octet-conformance: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    for f in result.found:
        print(f"new failure {f.requirement} (seed {f.seed}): regression case {f.case}")
    if result.harness_errors:
        # The round that failed judged nothing: never report it as "no failures".
        for e in result.harness_errors:
            print(f"harness error: {e}", file=sys.stderr)
        return EXIT_HARNESS
    print(f"{len(result.found)} new failing requirement(s) in {result.rounds} round(s); cases in {args.regressions}")
    return EXIT_FAIL if result.found else EXIT_OK


def replay_trace(args: argparse.Namespace) -> int:
    """Exit 1 when the failure reproduces (in any run), 0 when it does not."""
    try:
        outcomes = replay(args.trace, target=args.target, runs=args.runs, patience=Patience.of(args.patience))
    except (OSError, ValueError, KeyError, TypeError, ManifestError, NotReplayable) as exc:
        print(f"octet-conformance: cannot replay {args.trace}: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    raise_if_stopping()  # a replay cut short by a signal proves nothing either way
    hits = sum(o.reproduced for o in outcomes)
    first = next((o for o in outcomes if o.reproduced), outcomes[0])
    print(f"{first.requirement}: reproduced {hits}/{len(outcomes)}: {first.evidence}")
    return EXIT_FAIL if hits else EXIT_OK


def list_requirements(side: str | None) -> int:
    for r in load_catalog():
        if side and r.side != side:
            continue
        status = "check" if r.has_check else "none: " + r.reason
        print(f"{r.id}\t{r.section}\t{r.level}\t{r.side}\t{status}")
    return EXIT_OK


_STAT_COLUMNS = ("entries", "check", "reason", "extension", "host", "both", "must", "should")


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
    try:
        manifest = load_manifest(args.manifest or default_manifest())
        launcher_for(manifest, args.simulate)
    except ManifestError as exc:
        print(f"octet-conformance: manifest rejected before spawn: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    profile = PROFILES[args.profile]
    run_seed = profile.default_seed if args.seed is None else args.seed
    try:
        # The run is written whole into a staging directory and moved into
        # place at the end: an interrupted run leaves the directory as it was.
        with staged(args.report_dir) as stage:
            run = certify_extension(
                manifest,
                profile,
                run_seed,
                Patience.of(args.patience),
                trace_dir=stage / "traces",
                regressions=args.regressions,
                launcher=launcher_for(manifest, args.simulate),
            )
            write_matrix(run, stage)
            write_junit(run, stage)
    except ReportDirError as exc:
        print(f"octet-conformance: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    heading = f"{manifest.name} {manifest.version} (API {manifest.api_version})"
    return report_outcome(run, heading, args.report_dir)


def report_outcome(run: RunResult | HostcoreRunResult, heading: str, report_dir: Path) -> int:
    """Print a certification's summary; its exit status (0, 1 or 2)."""
    counts = summary(run.verdicts)
    tally = ", ".join(f"{n} {k}" for k, n in counts.items())
    print(f"{heading}, profile {run.profile.name}, seed {run.seed}: {tally}")
    for v in run.verdicts:
        if v.verdict in ("fail", "warn", "error"):
            print(f"  {v.verdict.upper():5} {v.requirement.id}: {v.evidence.splitlines()[0]}")
    print(f"matrix: {report_dir / 'matrix.json'}")
    if run.strays:
        print(
            f"{len(run.strays)} stray process(es) killed: descendants that had left their target's process group "
            f"(first: {run.strays[0]}; all in run.strays of matrix.json)",
            file=sys.stderr,
        )
    if run.harness_errors:
        for e in run.harness_errors:
            print(f"harness error: {e}", file=sys.stderr)
        return EXIT_HARNESS
    return EXIT_FAIL if counts["fail"] else EXIT_OK


def hostcore_command(argv: list[str]) -> HostcoreCommand:
    """The host-core to certify: the argv after ``--`` (the reference without one)."""
    if argv and argv[0] == "--":
        argv = argv[1:]
    return HostcoreCommand(tuple(argv), Path.cwd()) if argv else reference_command()


def certify_hostcore_cli(args: argparse.Namespace) -> int:
    """``octet-conformance hostcore [-- CMD ...]``: the harness plays the client."""
    command = hostcore_command(list(args.target_argv))
    profile = PROFILES[args.profile]
    run_seed = profile.default_seed if args.seed is None else args.seed
    try:
        with staged(args.report_dir) as stage:
            run = certify_hostcore(command, profile, run_seed, response_s=args.patience, trace_dir=stage / "traces")
            write_matrix(run, stage)
            write_junit(run, stage)
    except ReportDirError as exc:
        print(f"octet-conformance: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    return report_outcome(run, run.title, args.report_dir)


if __name__ == "__main__":
    sys.exit(main())
