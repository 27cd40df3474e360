r"""Mutation testing of the reference implementations: does certification notice a one-node change?

    python benchmarks/mutation.py --role extension [--profile quick] [--count 40]
                                  [--modules calls.py,server.py] [--only M0007,M0012]
                                  [--work-dir /tmp/octet-mutation] [--json reports/mutation-extension-quick.json]
    python benchmarks/mutation.py --table reports/mutation-*.json

Issue 20 asks for a standing measure of how many deliberate single changes to
a reference (extension, host, host-core) the certification kills. Each
*mutant* changes one AST node of one module of the reference package (a
comparison flipped, ``and``/``or`` swapped, a ``not`` dropped, an ``if``
negated, a number moved by one, a boolean flipped, ``+``/``-`` swapped, a
simple statement replaced by ``pass``), written over the node's own source
span so the rest of the file stays as it was.

A mutant is run from a copy of the ``conformance`` package with the one
module changed, put first on ``sys.path`` by a small launcher (an editable
install's finder comes after the path, see NOTES.md), and certified through
the command line exactly as a user would certify a third-party
implementation. The harness itself always runs the unchanged suite; only the
target (the extension process, the host behind its driver, the host-core
process) runs the mutant.

Outcomes:

- ``no-start``: the mutant cannot complete its first handshake (initialize,
  the driver's hello, app.handshake) within a few seconds. Such a mutant
  would be caught by anyone; it is left out of the kill rate, which the issue
  defines over the mutants that still start.
- ``killed``: the certification exits 1 (a ``must`` failed) or 2 (a harness
  error or an ``error`` verdict), or reports a ``warn``.
- ``survived``: exit 0, no fail, warn or error.
- ``timeout``: the certification outlived ``--timeout`` (counted as killed:
  a run that does not end is noticed, but the table shows it apart).

Survivors are listed with their one-line change: read each, and where the
change cannot alter anything observable on the wire (a log message, a
defensive branch no peer can reach, a bound that only matters past another
bound), add it to ``benchmarks/mutation_equivalent.toml`` with the reason;
the kill rate is then over the non-equivalent mutants that start. A survivor
that does change observable behaviour is a missing check: add one.

Mutant ids (``M0001`` ...) are stable for a given source tree and
``--count``: candidates are enumerated in file and source order and sampled
at even strides, so a rerun with ``--only`` reaches the same mutant.

``--api-version 0.2,0.4,0.1`` certifies at the first version and a survivor
again at each next one: the reference extension serves all three, and a
change on a branch only another version takes is invisible at the first (a
mutant that no longer starts at a later version is killed there).
``--table`` merges runs of one role and profile (a later file's row replaces
an earlier one with the same id: a rerun after a check was added) and reads
the equivalent list afresh. Entries whose reason starts "not a spec
obligation:" are observable changes the documents leave to the
implementation; the table counts them apart, inside "equivalent".

Measured (issue 20 item 3; two cores shared with other work; the runs are
kept in ``benchmarks/mutation-runs/``)::

    python benchmarks/mutation.py --role extension --profile quick --count 40 \
        --json benchmarks/mutation-runs/extension-quick.json
    python benchmarks/mutation.py --role extension --profile quick --count 40 \
        --only <the survivors> --api-version 0.2,0.4,0.1 \
        --json benchmarks/mutation-runs/extension-quick-rerun-survivors.json
    python benchmarks/mutation.py --table benchmarks/mutation-runs/extension-quick.json \
        benchmarks/mutation-runs/extension-quick-rerun-survivors.json \
        benchmarks/mutation-runs/extension-quick-rerun-M0027.json \
        benchmarks/mutation-runs/hostcore-quick.json \
        benchmarks/mutation-runs/hostcore-quick-rerun-M0039.json

| role | profile | mutants | no start | started | equivalent (of which not required) | killed | survived | kill rate |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| extension, before | quick | 40 | 5 | 35 | 0 (0) | 11 | 24 | 31% |
| extension, after | quick | 40 | 5 | 35 | 20 (12) | 13 | 2 | 87% |
| hostcore, before | quick | 40 | 4 | 36 | 0 (0) | 22 | 14 | 61% |
| hostcore, after | quick | 40 | 4 | 36 | 10 (4) | 23 | 3 | 88% |

After: M0040 (the writer's frame-size guard dropped) is killed by the
frame-size scenario's tool call whose name fills 1 MiB - 1 bytes
(EXT-0-frame-bound; fixture ``quotes-name-past-bound``), and M0027 (the API
0.4 feature list unbound) by the retry at 0.4. The two survivors discard
every host answer to the extension's own requests (M0026) and refuse string
arguments their schema allows with -32602 (M0031): both are observable, but
on the wire a -32602 for schema-valid arguments reads the same as a tool's
own semantic refusal, which the text allows (the catalog's
JSONRPC-5.1-predefined-meanings reasoning), so no check is added.

The host-core run took ``--timeout 240`` (two mutants that wedge admission
ran into it: counted as killed). M0039, a TodoWrite that replaced the list
answered ok false with errorCode null, is killed since RPC-5-execute-result
demands a string errorCode on every ok-false outcome (fixture
``todo-written-not-ok``). Its three survivors are misses the suite should
catch, each left for a check in the host-core scenario modules (being
reorganized when this was measured): M0015 refuses the lowest value of a
window option the text allows (messageLimit 1, messageBefore 0; the suite
never sends a windowed session.get); M0018 lets accept-edits write outside
the workspace without a permissions.request (RPC-5-outside-path-permission
is driven only under ask); and M0030 starts a turn for a sessionMessageId that
names no queued delivery (never sent). The default profile was
not measured for either role: at quick the certifications already took
10-180 s each on a loaded machine.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGE = ROOT / "conformance"
EQUIVALENT = HERE / "mutation_equivalent.toml"
CLI = [sys.executable, "-m", "conformance.cli"]

# -- roles -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Role:
    """How to mutate and certify one reference."""

    name: str
    package: str  # the reference package, relative to the repository root
    module: str  # what the launcher runs (``python -m`` style)
    skip: tuple[str, ...]  # files of the package never mutated (fault catalogs, simulation glue)


ROLES = {
    "extension": Role(
        "extension", "conformance/reference/extension", "conformance.reference.extension", ("__main__.py",)
    ),
    "host": Role(
        "host",
        "conformance/reference/host",
        "conformance.reference.host.driver",
        ("simulated.py", "__init__.py"),
    ),
    "hostcore": Role(
        "hostcore",
        "conformance/reference/hostcore",
        "conformance.reference.hostcore",
        ("__main__.py", "__init__.py"),
    ),
}

# -- mutants -----------------------------------------------------------------------------------

_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add}


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str  # relative to the repository root
    line: int
    operator: str
    before: str  # the source span replaced
    after: str  # what replaced it


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of string constants that are docstrings (never mutated)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside a type annotation (changing them changes nothing at run time)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        annotations: list[ast.AST | None] = []
        if isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        elif isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        for a in annotations:
            if a is not None:
                found.update(id(n) for n in ast.walk(a))
    return found


def _candidates(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, operator name, replacement source) for every mutation of ``tree``."""
    skip = _docstring_nodes(tree) | _annotation_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE_SWAP:
            swapped = ast.Compare(node.left, [_COMPARE_SWAP[type(node.ops[0])]()], node.comparators)
            yield node, f"compare {type(node.ops[0]).__name__}->{type(swapped.ops[0]).__name__}", ast.unparse(swapped)
        elif isinstance(node, ast.BoolOp):
            other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield (
                node,
                f"boolop {type(node.op).__name__}->{type(other).__name__}",
                ast.unparse(ast.BoolOp(other, node.values)),
            )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "drop not", f"({ast.unparse(node.operand)})"
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
            swapped_op = _BINOP_SWAP[type(node.op)]()
            replacement = ast.unparse(ast.BinOp(node.left, swapped_op, node.right))
            yield node, f"binop {type(node.op).__name__}->{type(swapped_op).__name__}", f"({replacement})"
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, "flip bool", repr(not node.value)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield node, "int +1", repr(node.value + 1)
        elif isinstance(node, ast.If | ast.While) and ast.unparse(node.test) != "TYPE_CHECKING":
            test = node.test
            yield test, "negate condition", f"(not ({ast.unparse(test)}))"
        if isinstance(node, ast.Expr | ast.Assign | ast.AugAssign | ast.Return | ast.Raise) and (
            node.lineno == node.end_lineno and id(getattr(node, "value", None)) not in skip
        ):
            yield node, f"replace {type(node).__name__} with pass", "pass"


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers index it at line - 1)."""
    starts, total = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    return starts


def _span(source: str, starts: list[int], node: ast.AST) -> tuple[int, int]:
    # ast columns are UTF-8 byte offsets; convert through the line's bytes.
    def at(line: int, col: int) -> int:
        text = source[starts[line - 1] :].split("\n", 1)[0]
        return starts[line - 1] + len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    return at(node.lineno, node.col_offset), at(node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def mutants_of(role: Role, modules: list[str] | None = None) -> list[tuple[Mutant, str]]:
    """Every candidate mutant of the role's package, in file and source order, with its new source."""
    out: list[tuple[Mutant, str]] = []
    base = ROOT / role.package
    files = sorted(p for p in base.glob("*.py") if p.name not in role.skip)
    if modules:
        files = [p for p in files if p.name in modules]
    for path in files:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        starts = _offsets(source)
        found = sorted(_candidates(tree), key=lambda c: (c[0].lineno, c[0].col_offset, c[1]))  # type: ignore[attr-defined]
        for node, operator, replacement in found:
            start, end = _span(source, starts, node)
            before = source[start:end]
            if before == replacement:
                continue
            mutated = source[:start] + replacement + source[end:]
            try:
                ast.parse(mutated)
            except SyntaxError:
                continue
            rel = str(path.relative_to(ROOT))
            out.append((Mutant("", rel, node.lineno, operator, before, replacement), mutated))  # type: ignore[attr-defined]
    return out


def sample(candidates: list[tuple[Mutant, str]], count: int) -> list[tuple[Mutant, str]]:
    """``count`` candidates at even strides (all when fewer), numbered M0001..."""
    if count <= 0 or count >= len(candidates):
        chosen = candidates
    else:
        stride = len(candidates) / count
        chosen = [candidates[int(i * stride)] for i in range(count)]
    return [(replace(m, id=f"M{n:04d}"), s) for n, (m, s) in enumerate(chosen, start=1)]


# -- running one mutant ------------------------------------------------------------------------

LAUNCHER = """\
import runpy, sys
sys.path.insert(0, {root!r})
sys.argv[0] = {module!r}
runpy.run_module({module!r}, run_name="__main__", alter_sys=True)
"""


def materialize(mutant: Mutant, source: str, work: Path, role: Role) -> Path:
    """A directory holding a copy of the package with the mutant applied, and ``launch.py``."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(PACKAGE, work / "conformance", ignore=shutil.ignore_patterns("__pycache__"))
    # conformance.strategies is installed from strategies/: the copy needs it too
    shutil.copytree(ROOT / "strategies", work / "conformance" / "strategies", dirs_exist_ok=True)
    (work / mutant.path).write_text(source, encoding="utf-8")
    (work / "launch.py").write_text(LAUNCHER.format(root=str(work), module=role.module), encoding="utf-8")
    return work / "launch.py"


def certify_command(role: Role, launch: Path, profile: str, report: Path, api: str) -> tuple[list[str], Path]:
    """The command line certifying the mutant, and the folder to run it in."""
    common = ["--profile", profile, "--report-dir", str(report), "-q"]
    python = "python3"  # the sanitized PATH starts with this interpreter's directory
    if role.name == "extension":
        manifest_src = ROOT / "conformance/reference/extension/manifests" / f"api-{api}" / "extension.toml"
        text = manifest_src.read_text(encoding="utf-8")
        head, _, rest = text.partition("command = ")
        _, _, tail = rest.partition("\n")
        command = json.dumps([python, str(launch), "--api-version", api])
        manifest = launch.parent / "extension.toml"
        manifest.write_text(f"{head}command = {command}\n{tail}", encoding="utf-8")
        return [*CLI, "extension", str(manifest), *common], launch.parent
    if role.name == "host":
        return [*CLI, "host", "--driver", f"{python} {launch}", "--api-version", api, *common], launch.parent
    return [*CLI, "hostcore", *common, "--", python, str(launch), "--data-dir", "{data_dir}"], launch.parent


@dataclass
class Row:
    id: str
    path: str
    line: int
    operator: str
    before: str
    after: str
    outcome: str  # killed | survived | no-start | timeout
    exit_status: int | None
    flagged: list[str]
    wall_s: float
    equivalent: str | None = None  # the reason, when benchmarks/mutation_equivalent.toml lists it
    api: str = ""  # the API version of the certification that decided the outcome


def _flagged(report: Path) -> list[str]:
    try:
        matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    results = matrix.get("results", [])
    return sorted(r["id"] for r in results if r.get("verdict") in ("fail", "warn", "error"))


def _run(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    proc = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


def starts(role: Role, launch: Path, api: str, manifest_dir: Path) -> bool:
    """Whether the mutant completes its first handshake: initialize answered
    (extension), the driver's hello (host), app.handshake answered (host-core).
    Runs the unchanged suite's own peers, with a throwaway recorder."""
    from conformance.evidence import Recorder

    recorder = Recorder()
    try:
        if role.name == "extension":
            from conformance.manifest import load_manifest
            from conformance.peers.ext_host import ExtensionHostPeer, Patience, TargetGone
            from conformance.runner.extension import full_offer

            manifest = load_manifest(manifest_dir / "extension.toml")
            peer = ExtensionHostPeer(manifest, recorder, Patience.of(START_S))
            try:
                offer = full_offer(api)
                peer.start(offer)
                return peer.initialize(offer)
            except TargetGone:
                return False
            finally:
                peer.close()
        if role.name == "host":
            from conformance.peers.host_driver import DriverError, HostDriver

            driver = HostDriver.spawn(["python3", str(launch)], cwd=launch.parent)
            try:
                driver.hello(timeout=START_S)
                return True
            except DriverError:
                return False
            finally:
                driver.close()
        from conformance.peers.rpc_client import HostcoreCommand, HostcorePeer
        from conformance.scenarios.hostcore_handshake import handshake

        command = HostcoreCommand(("python3", str(launch), "--data-dir", "{data_dir}"), launch.parent)
        data = Path(tempfile.mkdtemp(prefix="octet-mutation-data-"))
        try:
            with HostcorePeer(command, data, recorder, response_s=START_S) as peer:
                return handshake(peer)
        finally:
            shutil.rmtree(data, ignore_errors=True)
    except Exception:  # noqa: BLE001 -- whatever breaks the first handshake means "does not start"
        return False


START_S = 10.0  # seconds the first handshake may take


def run_mutant(role: Role, mutant: Mutant, source: str, *, profile: str, api: str, work: Path, timeout: float) -> Row:
    launch = materialize(mutant, source, work / "tree", role)
    report = work / "report"
    shutil.rmtree(report, ignore_errors=True)
    argv, cwd = certify_command(role, launch, profile, report, api)
    if not starts(role, launch, api, launch.parent):
        return Row(
            mutant.id,
            mutant.path,
            mutant.line,
            mutant.operator,
            mutant.before,
            mutant.after,
            "no-start",
            None,
            [],
            0.0,
            api=api,
        )
    start = time.perf_counter()
    status, _output = _run(argv, cwd, timeout)
    wall = time.perf_counter() - start
    flagged = _flagged(report)
    if status is None:
        outcome = "timeout"
    elif status == 0 and not any(f for f in flagged):
        outcome = "survived"
    else:
        outcome = "killed"
    return Row(
        mutant.id,
        mutant.path,
        mutant.line,
        mutant.operator,
        mutant.before,
        mutant.after,
        outcome,
        status,
        flagged,
        round(wall, 2),
        api=api,
    )


def run_with_retries(
    role: Role, mutant: Mutant, source: str, *, apis: list[str], profile: str, work: Path, timeout: float
) -> Row:
    """Certify at ``apis[0]``; a survivor is certified again at each further
    version until one kills it. The reference serves every API version, and
    a change to a branch only another version takes (a 0.4-only hook table,
    an 0.1-only refusal) is invisible to a run at the first. A mutant that
    starts at the first version but not at a later one is killed there: its
    certification at that version cannot pass."""
    row = run_mutant(role, mutant, source, profile=profile, api=apis[0], work=work, timeout=timeout)
    wall = row.wall_s
    for api in apis[1:]:
        if row.outcome != "survived":
            break
        again = run_mutant(role, mutant, source, profile=profile, api=api, work=work, timeout=timeout)
        wall += again.wall_s
        if again.outcome == "no-start":
            again = replace(again, outcome="killed", flagged=[f"no first handshake at API {api}"])
        if again.outcome in ("killed", "timeout"):
            row = again
    return replace(row, wall_s=round(wall, 2))


# -- the table ---------------------------------------------------------------------------------


def equivalents() -> dict[str, str]:
    """(path:line:operator) -> reason, from benchmarks/mutation_equivalent.toml."""
    if not EQUIVALENT.exists():
        return {}
    data = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8"))
    return {f"{e['path']}:{e['line']}:{e['operator']}": str(e["reason"]) for e in data.get("equivalent", [])}


NOT_REQUIRED = "not a spec obligation:"  # the reason's prefix for an observable change no text forbids


def summary(rows: list[Row]) -> dict[str, Any]:
    started = [r for r in rows if r.outcome != "no-start"]
    relevant = [r for r in started if r.equivalent is None]
    killed = [r for r in relevant if r.outcome in ("killed", "timeout")]
    walls = [r.wall_s for r in rows]
    return {
        "mutants": len(rows),
        "no_start": len(rows) - len(started),
        "started": len(started),
        "equivalent": len(started) - len(relevant),
        "not_required": sum(1 for r in started if (r.equivalent or "").startswith(NOT_REQUIRED)),
        "killed": len(killed),
        "survived": len(relevant) - len(killed),
        "kill_rate": round(len(killed) / len(relevant), 3) if relevant else None,
        "median_wall_s": round(statistics.median(walls), 1) if walls else None,
    }


def merged_runs(files: list[Path]) -> dict[tuple[str, str], list[Row]]:
    """Rows per (role, profile), files read in order: a later file's row for
    the same mutant id replaces the earlier one (a rerun with ``--only``
    after a check was added). Equivalence is read again from
    benchmarks/mutation_equivalent.toml, so the table follows the list."""
    known = equivalents()
    runs: dict[tuple[str, str], dict[str, Row]] = {}
    for f in files:
        data = json.loads(f.read_text(encoding="utf-8"))
        rows = runs.setdefault((data["role"], data["profile"]), {})
        for raw in data["rows"]:
            row = Row(**raw)
            row.equivalent = known.get(f"{row.path}:{row.line}:{row.operator}")
            rows[row.id] = row
    return {key: [rows[i] for i in sorted(rows)] for key, rows in runs.items()}


def print_table(files: list[Path]) -> None:
    print(
        "| role | profile | mutants | no start | started | equivalent (of which not required) "
        "| killed | survived | kill rate |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (role, profile), rows in merged_runs(files).items():
        s = summary(rows)
        rate = f"{100 * s['kill_rate']:.0f}%" if s["kill_rate"] is not None else "-"
        print(
            f"| {role} | {profile} | {s['mutants']} | {s['no_start']} | {s['started']} | "
            f"{s['equivalent']} ({s['not_required']}) | {s['killed']} | {s['survived']} | {rate} |"
        )
    for rows in merged_runs(files).values():
        for r in rows:
            if r.outcome == "survived" and r.equivalent is None:
                print(f"SURVIVED {r.id} {r.path}:{r.line} {r.operator}: {r.before!r} -> {r.after!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=sorted(ROLES))
    parser.add_argument("--profile", default="quick")
    parser.add_argument(
        "--api-version",
        default="0.2",
        help="comma-separated: certify at the first; a survivor again at each next one (e.g. 0.2,0.4,0.1)",
    )
    parser.add_argument("--count", type=int, default=40, help="mutants to sample (0: every candidate)")
    parser.add_argument("--modules", default="", help="comma-separated file names of the package to mutate")
    parser.add_argument("--only", default="", help="comma-separated mutant ids to run")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per certification")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--list", action="store_true", help="print the sampled mutants and run nothing")
    parser.add_argument("--table", nargs="*", type=Path, help="print the table of finished JSON files")
    args = parser.parse_args(argv)
    if args.table:
        print_table(args.table)
        return 0
    if args.role is None:
        parser.error("--role is required")
    role = ROLES[args.role]
    chosen = sample(mutants_of(role, [m for m in args.modules.split(",") if m]), args.count)
    only = {m for m in args.only.split(",") if m}
    if only:
        chosen = [c for c in chosen if c[0].id in only]
    if args.list:
        for m, _ in chosen:
            print(f"{m.id} {m.path}:{m.line} {m.operator}: {m.before!r} -> {m.after!r}")
        return 0
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="octet-mutation-"))
    out = args.json or ROOT / "reports" / f"mutation-{role.name}-{args.profile}.json"
    known = equivalents()
    rows: list[Row] = []
    for mutant, source in chosen:
        apis = [a for a in args.api_version.split(",") if a]
        row = run_with_retries(role, mutant, source, apis=apis, profile=args.profile, work=work, timeout=args.timeout)
        row.equivalent = known.get(f"{row.path}:{row.line}:{row.operator}")
        rows.append(row)
        print(
            f"{row.id} {row.outcome:9} {row.wall_s:7.1f}s api {row.api} {row.path}:{row.line} {row.operator}",
            flush=True,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "role": role.name,
            "profile": args.profile,
            "rows": [asdict(r) for r in rows],
            "summary": summary(rows),
        }
        out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary(rows)))
    for r in rows:
        if r.outcome == "survived" and r.equivalent is None:
            print(f"SURVIVED {r.id} {r.path}:{r.line} {r.operator}: {r.before!r} -> {r.after!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
