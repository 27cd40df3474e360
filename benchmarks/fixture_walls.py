"""Wall time of a quick-profile certification of every fixture, slowest first.

    python benchmarks/fixture_walls.py [--roles extension,host,hostcore,client,hostile]
                                       [--only NAME,...] [--from-json walls.json --slowest N]
                                       [--code DIR] [--timeout 900] [--json reports/fixture-walls.json]

Every fixture of every role is certified at the ``quick`` profile, one at a
time (never two at once: these are wall times), each in a process of its own
with the options its fixture test gives it (tests/fixtures/): the patience
its ``expect.toml`` names or the test's default, the host scenarios it names,
the host-core walks and fixed scenarios it names, the oversized steps only
where it asks for them; hostile extensions through the command line with
``--patience 3``, as tests/fixtures/test_hostile.py runs them. Only the
profile differs from the tests (``quick`` instead of their smaller ones).

For each: the wall time (measured by this script around the process, so a
hang is caught by ``--timeout`` and reported as such), whether the verdicts
its ``expect.toml`` names came out (``ok``; hostile ones: the exit status),
and whether the run's budget ran out. The JSON (rewritten after every
fixture, so an interrupted run keeps what it measured) has one row per
fixture; the table printed at the end lists the slowest 20 first. Issue 19's
goal: every fixture under 120 s on two cores.

``--code DIR`` runs another checkout's ``conformance`` package (say a copy of
main made with ``git archive main | tar -x -C DIR``): DIR goes first on the
children's ``PYTHONPATH``, ahead of the editable install, so the same script
measures both commits. ``--from-json PREVIOUS --slowest N`` measures only the
N slowest fixtures of an earlier run (a first pass finds them; then both
commits are measured on those). Machines here are shared and noisy: compare
two commits measured in the same session, and read single numbers loosely.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
ROLES = ("extension", "host", "hostcore", "client", "hostile")
FOLDERS = {"extension": "extensions", "host": "hosts", "hostcore": "hostcores", "client": "clients"}
GOAL_S = 120.0
SEED = 20261130  # the quick profile's default seed, as the fixture tests use
# The fixture tests' defaults (tests/fixtures/test_faulty_*.py, test_hostile.py)
EXTENSION_PATIENCE_S, HOST_PATIENCE_S, RPC_RESPONSE_S, HOSTILE_PATIENCE = 10.0, 3.0, 10.0, "3"


@dataclass(frozen=True)
class Row:
    role: str
    name: str
    wall_s: float
    ok: bool | None  # the expected verdicts came out (None: not known, e.g. a timeout)
    budget_spent: bool
    detail: str


def fixtures(roles: list[str], only: set[str]) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for role in roles:
        folder = FIXTURES / ("hostile" if role == "hostile" else FOLDERS[role])
        marker = "extension.toml" if role == "hostile" else "expect.toml"
        for path in sorted(folder.glob(f"*/{marker}")):
            if not only or path.parent.name in only or f"{role}/{path.parent.name}" in only:
                found.append((role, path.parent))
    return found


def measure(role: str, folder: Path, code: Path | None, timeout_s: float) -> Row:
    """Certify one fixture in a child process; the wall time around it."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryDirectory(prefix="fixture-walls-") as work:
        argv = [sys.executable, str(Path(__file__).resolve()), "--one", role, str(folder), "--work", work]
        started = time.monotonic()
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return Row(role, folder.name, round(time.monotonic() - started, 1), None, False, f"over {timeout_s:g} s")
        wall = round(time.monotonic() - started, 1)
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return Row(role, folder.name, wall, None, False, f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
    return Row(role, folder.name, wall, report["ok"], report["budget_spent"], report["detail"])


# -- the child: one certification, as the fixture's test runs it -----------------------------------


def expect_of(folder: Path) -> dict[str, Any]:
    path = folder / "expect.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def certify(role: str, folder: Path, work: Path) -> Any:
    from conformance.runner.profiles import PROFILES

    quick, expect = PROFILES["quick"], expect_of(folder)
    if role == "extension":
        from conformance.manifest import load_manifest
        from conformance.peers.ext_host import Patience
        from conformance.runner.extension import certify_extension

        patience = Patience.of(float(expect.get("patience", EXTENSION_PATIENCE_S)))
        return certify_extension(load_manifest(folder / "extension.toml"), quick, SEED, patience)
    if role == "host":
        from conformance.runner.host import certify_host

        only = tuple(expect.get("scenarios", ()))
        return certify_host(expect["driver"], expect["api_version"], quick, SEED, patience_s=HOST_PATIENCE_S,
                            cwd=folder, machine=False, only=only)  # fmt: skip
    if role == "hostcore":
        from conformance.peers.rpc_client import DATA_DIR, HostcoreCommand
        from conformance.runner.hostcore import certify_hostcore

        scenarios = tuple(expect["scenarios"]) if "scenarios" in expect else (() if expect.get("walks") else None)
        hostcore = HostcoreCommand(("python3", "main.py", "--data-dir", DATA_DIR), folder)
        return certify_hostcore(hostcore, quick, SEED, response_s=float(expect.get("patience", RPC_RESPONSE_S)),
                                oversized=bool(expect.get("oversized", False)),
                                walks=tuple(expect.get("walks", ("sessions",))), scenarios=scenarios)  # fmt: skip
    from conformance.peers.rpc_hostcore import ClientCommand
    from conformance.runner.client import certify_client

    client = ClientCommand(("python3", "main.py"), folder)
    return certify_client(client, quick, SEED, response_s=float(expect.get("patience", RPC_RESPONSE_S)),
                          oversized=bool(expect.get("oversized", False)))  # fmt: skip


def one(role: str, folder: Path, work: Path) -> dict[str, Any]:
    if role == "hostile":
        return hostile(folder, work)
    run = certify(role, folder, work)
    expect = expect_of(folder)
    if "error" in expect:  # a host that breaks the driver contract: an error naming it, nothing flagged
        flagged = {v.requirement.id: v.verdict for v in run.verdicts if v.verdict in ("fail", "warn")}
        ok = not flagged and any(expect["error"] in e for e in run.harness_errors)
        detail = "" if ok else f"flagged {sorted(flagged.items())}, errors {list(run.harness_errors)[:2]}"
        return {"ok": ok, "budget_spent": getattr(run, "budget_spent", None) is not None, "detail": detail}
    flagged = {v.requirement.id: v.verdict for v in run.verdicts if v.verdict in ("fail", "warn", "error")}
    wanted = {expect["requirement"], *expect.get("also", [])}
    ok = set(flagged) == wanted and flagged.get(expect["requirement"]) == expect.get("verdict", "fail")
    detail = "" if ok else f"flagged {sorted(flagged.items())}, expected {sorted(wanted)}"
    return {"ok": ok, "budget_spent": getattr(run, "budget_spent", None) is not None, "detail": detail}


def hostile(folder: Path, work: Path) -> dict[str, Any]:
    report = work / "report"
    argv = [sys.executable, "-m", "conformance.cli", "extension", str(folder / "extension.toml"),
            "--profile", "quick", "--report-dir", str(report), "--patience", HOSTILE_PATIENCE, "-q"]  # fmt: skip
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, check=False)
    try:
        matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"ok": False, "budget_spent": False, "detail": f"exit {done.returncode}, no matrix"}
    spent = bool((matrix["run"].get("budget") or {}).get("spent"))
    return {"ok": done.returncode in (0, 1), "budget_spent": spent, "detail": f"exit {done.returncode}"}


# -- the table -------------------------------------------------------------------------------------


def table(rows: list[Row], limit: int = 20) -> str:
    lines = [f"| {'fixture':48} | wall s | ok | budget spent |", f"| {'-' * 48} | ---: | --- | --- |"]
    for r in sorted(rows, key=lambda r: -r.wall_s)[:limit]:
        ok = "?" if r.ok is None else ("yes" if r.ok else "NO")
        lines.append(f"| {r.role + '/' + r.name:48} | {r.wall_s:6.1f} | {ok} | {'yes' if r.budget_spent else ''} |")
    over = sum(r.wall_s >= GOAL_S for r in rows)
    lines.append(f"{len(rows)} fixture(s); {over} at or over {GOAL_S:g} s")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--one", nargs=2, metavar=("ROLE", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--roles", default=",".join(ROLES))
    parser.add_argument("--only", default="", help="fixtures, comma-separated: NAME (its folder) or ROLE/NAME")
    parser.add_argument("--from-json", type=Path, default=None, help="an earlier run: measure its slowest fixtures")
    parser.add_argument("--slowest", type=int, default=20, help="with --from-json: how many of its slowest")
    parser.add_argument("--code", type=Path, default=None, help="a checkout whose conformance package to run")
    parser.add_argument("--timeout", type=float, default=900.0, help="per fixture, seconds (a hang guard)")
    parser.add_argument("--json", type=Path, default=Path("reports/fixture-walls.json"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], Path(args.one[1]), args.work)))
        return 0
    only = {n for n in args.only.split(",") if n}
    if args.from_json is not None:
        earlier = json.loads(args.from_json.read_text(encoding="utf-8"))["rows"]
        only |= {f"{r['role']}/{r['name']}" for r in sorted(earlier, key=lambda r: -r["wall_s"])[: args.slowest]}
    rows: list[Row] = []
    for role, folder in fixtures([r for r in args.roles.split(",") if r], only):
        rows.append(measure(role, folder, args.code, args.timeout))
        print(f"{rows[-1].wall_s:7.1f} s  {role}/{folder.name}  {rows[-1].detail}", file=sys.stderr, flush=True)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        code = str(args.code) if args.code else "this checkout"
        args.json.write_text(json.dumps({"code": code, "rows": [asdict(r) for r in rows]}, indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
