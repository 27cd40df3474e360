"""``octet-conformance``: the command line.

Exit status: 0 no ``must`` requirement failed; 1 one did; 2 the harness could
not run (bad manifest, target could not be spawned, a harness error).
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from .manifest import Manifest, ManifestError, load_manifest
from .peers.ext_host import Launcher, Patience, preflight, spawn_process
from .peers.simulated import is_reference, simulated_reference
from .report.console import run_lines
from .report.junit import write_junit
from .report.matrix import write_matrix
from .requirements import load_catalog
from .runner.extension import certify_extension
from .runner.fuzz import fuzz
from .runner.profiles import PROFILES
from .runner.replay import NotReplayable, replay
from .safe_text import terminal
from .transport.process import kill_spawned_groups
from .transport.startup import StartFailure
from .verdicts import summary

EXIT_OK, EXIT_FAIL, EXIT_HARNESS = 0, 1, 2


def default_manifest() -> Path:
    """The bundled default target: the reference extension at API 0.2."""
    ref = resources.files("conformance.reference.extension") / "manifests" / "api-0.2" / "extension.toml"
    return Path(str(ref))


def _end_targets(signum: int, frame: object) -> None:
    """SIGTERM/SIGHUP to the harness: no target may outlive it."""
    kill_spawned_groups()
    raise SystemExit(128 + signum)


SIMULATE_HELP = (
    "run the reference extension in-process on a virtual clock (deterministic, fast; "
    "only for the reference extension; traces still replay against the real process)"
)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the real command line, not a caller embedding main()
        # Hypothesis keeps caches (its character map costs ~200 MiB to build
        # cold) in a storage directory; keep it per user, not in the cwd.
        os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path.home() / ".cache" / "octet-conformance"))
        signal.signal(signal.SIGTERM, _end_targets)
        signal.signal(signal.SIGHUP, _end_targets)
        atexit.register(kill_spawned_groups)
    parser = argparse.ArgumentParser(prog="octet-conformance", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)

    ext = sub.add_parser("extension", help="certify an extension described by its extension.toml")
    ext.add_argument("manifest", nargs="?", type=Path, help="path to extension.toml (default: the reference extension)")
    ext.add_argument("--report-dir", type=Path, default=Path("reports/latest"))
    ext.add_argument("--profile", choices=sorted(PROFILES), default="default")
    ext.add_argument("--seed", type=int, default=None)
    ext.add_argument(
        "--patience", type=float, default=15.0, help="seconds to wait for any one response (default 15; startup: twice)"
    )
    ext.add_argument("--regressions", type=Path, default=None, help="replay saved fuzz cases (a directory) first")
    ext.add_argument("--simulate", action="store_true", help=SIMULATE_HELP)

    fz = sub.add_parser("fuzz", help="explore with fresh seeds for a while; keep every failure as a regression case")
    fz.add_argument("manifest", type=Path)
    fz.add_argument("--seconds", type=float, default=300.0, help="time box (default 300)")
    fz.add_argument("--regressions", type=Path, default=Path("fuzz-regressions"))
    fz.add_argument("--work-dir", type=Path, default=Path("reports/fuzz"))
    fz.add_argument("--seed", type=int, default=None, help="seed of the seed sequence (default: random)")
    fz.add_argument("--patience", type=float, default=15.0)
    fz.add_argument("--simulate", action="store_true", help=SIMULATE_HELP)

    rep = sub.add_parser("replay", help="re-run a recorded failure and re-check its requirement")
    rep.add_argument("trace", type=Path, help="a trace written beside matrix.json (traces/<id>.jsonl)")
    rep.add_argument("--target", type=Path, default=None, help="another extension.toml to replay against")
    rep.add_argument("--runs", type=int, default=1, help="replay N times and report the reproduction rate")
    rep.add_argument("--patience", type=float, default=15.0)

    req = sub.add_parser("requirements", help="list catalog entries")
    req.add_argument("--side", default=None, help="only entries of this side (extension, host, ...)")

    args = parser.parse_args(argv)
    if args.command == "requirements":
        return list_requirements(args.side)
    if args.command == "replay":
        return replay_trace(args)
    if args.command == "fuzz":
        return fuzz_target(args)
    return certify(args)


def launcher_for(manifest: Manifest, simulate: bool) -> Launcher:
    """How targets start; raises StartFailure when the command cannot."""
    if not simulate:
        preflight(manifest)
        return spawn_process
    if not is_reference(manifest):
        raise ManifestError(f"--simulate runs only the reference extension in-process; {manifest.path} is another")
    return simulated_reference


def refused(exc: Exception) -> int:
    """One line (or two, with a hint) on stderr for a run that cannot happen."""
    what = "" if isinstance(exc, StartFailure) else "manifest rejected before spawn: "
    print(f"octet-conformance: {what}{terminal(str(exc), keep_newlines=True)}", file=sys.stderr)
    return EXIT_HARNESS


def fuzz_target(args: argparse.Namespace) -> int:
    """Exit 1 when exploration found a new failing requirement, else 0."""
    try:
        manifest = load_manifest(args.manifest)
        launcher = launcher_for(manifest, args.simulate)
        found = fuzz(
            manifest,
            seconds=args.seconds,
            regressions=args.regressions,
            work_dir=args.work_dir,
            patience=Patience.of(args.patience),
            first_seed=args.seed,
            launcher=launcher,
        )
    except (ManifestError, StartFailure) as exc:
        return refused(exc)
    for f in found:
        print(terminal(f"new failure {f.requirement} (seed {f.seed}): regression case {f.case}"))
    print(terminal(f"{len(found)} new failing requirement(s); cases in {args.regressions}"))
    return EXIT_FAIL if found else EXIT_OK


def replay_trace(args: argparse.Namespace) -> int:
    """Exit 1 when the failure reproduces (in any run), 0 when it does not."""
    try:
        outcomes = replay(args.trace, target=args.target, runs=args.runs, patience=Patience.of(args.patience))
    except (OSError, ValueError, KeyError, ManifestError, NotReplayable) as exc:
        print(terminal(f"octet-conformance: cannot replay {args.trace}: {exc}", keep_newlines=True), file=sys.stderr)
        return EXIT_HARNESS
    hits = sum(o.reproduced for o in outcomes)
    first = next((o for o in outcomes if o.reproduced), outcomes[0])
    print(terminal(f"{first.requirement}: reproduced {hits}/{len(outcomes)}: {first.evidence}"))
    return EXIT_FAIL if hits else EXIT_OK


def list_requirements(side: str | None) -> int:
    for r in load_catalog():
        if side and r.side != side:
            continue
        status = "check" if r.has_check else "none: " + r.reason
        print(f"{r.id}\t{r.section}\t{r.level}\t{r.side}\t{status}")
    return EXIT_OK


def certify(args: argparse.Namespace) -> int:
    try:
        manifest = load_manifest(args.manifest or default_manifest())
        launcher = launcher_for(manifest, args.simulate)
    except (ManifestError, StartFailure) as exc:
        return refused(exc)
    profile = PROFILES[args.profile]
    run_seed = profile.default_seed if args.seed is None else args.seed
    for stale in (args.report_dir / "traces").glob("*.jsonl"):
        stale.unlink()  # the report directory holds one run: no trace may outlive its verdict
    try:
        run = certify_extension(
            manifest,
            profile,
            run_seed,
            Patience.of(args.patience),
            trace_dir=args.report_dir / "traces",
            regressions=args.regressions,
            launcher=launcher,
        )
    except StartFailure as exc:  # a later generation could not start: no verdict from this run
        return refused(exc)
    matrix_path = write_matrix(run, args.report_dir)
    write_junit(run, args.report_dir)
    counts = summary(run.verdicts)
    for line in run_lines(run, matrix_path):
        print(line)
    if run.harness_errors:
        for e in run.harness_errors:
            print(f"harness error: {terminal(e, keep_newlines=True)}", file=sys.stderr)
        return EXIT_HARNESS
    return EXIT_FAIL if counts["fail"] else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
