"""Certify the same targets on two checkouts and compare their verdicts.

    python benchmarks/verdict_compare.py --base /tmp/main-code [--head .]
        [--targets ref-host,ref-hostcore,host/NAME,hostcore/NAME,...]
        [--repeat-changed 1] [--json reports/verdict-compare.json]

A refactor that must leave verdicts alone (issue 23) is proven here: every
target is certified at the ``quick`` profile, one at a time, in a child
process whose ``PYTHONPATH`` starts with the checkout's folder (ahead of the
editable install, as benchmarks/fixture_walls.py ``--code`` does), once for
the base and once for the head. Make the base with
``git archive main | tar -x -C /tmp/main-code``.

Targets: ``ref-host`` and ``ref-hostcore`` (the references, through the
command line, compared on their matrix.json results), and ``ROLE/NAME`` for
a fixture of ``fixtures/`` (certified with the options its fixture test
gives it: ``fixture_walls.certify``). For each, the per-requirement verdicts
and the violated (fail/warn) ids are diffed. A racy scenario may flip a
``pass`` to ``untested`` or back between two runs of the same code: with
``--repeat-changed N`` a target whose verdicts differ is certified N more
times on both sides, and a difference that the base also shows between its
own runs is reported as noise, not as a change.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
FOLDERS = {"extension": "extensions", "host": "hosts", "hostcore": "hostcores", "client": "clients"}
SEED = 20261130  # the quick profile's default seed
REFERENCES = {
    "ref-host": ["host", "--profile", "quick", "--seed", str(SEED)],
    "ref-hostcore": ["hostcore", "--profile", "quick", "--seed", str(SEED)],
}
Verdicts = dict[str, str]


def _env(code: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def certify(target: str, code: Path, timeout_s: float) -> tuple[Verdicts | None, str]:
    """The target's verdicts on ``code`` (None and why when none came)."""
    with tempfile.TemporaryDirectory(prefix="verdict-compare-") as work:
        if target in REFERENCES:
            report = Path(work) / "report"
            argv = [sys.executable, "-m", "conformance.cli", *REFERENCES[target], "--report-dir", str(report), "-q"]
        else:
            role, name = target.split("/", 1)
            folder = FIXTURES / FOLDERS[role] / name
            argv = [sys.executable, str(Path(__file__).resolve()), "--one", role, str(folder)]
        try:
            done = subprocess.run(argv, env=_env(code), cwd=work, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            return None, f"over {timeout_s:g} s"
        if target in REFERENCES:
            try:
                matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None, f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
            return {r["id"]: r["verdict"] for r in matrix["results"]}, ""
        try:
            return json.loads(done.stdout.strip().splitlines()[-1]), ""
        except (IndexError, ValueError):
            return None, f"exit {done.returncode}: {done.stderr.strip()[-300:]}"


def one(role: str, folder: Path) -> Verdicts:
    """In the child: a fixture certified as its test does; its verdicts by id."""
    sys.path.insert(0, str(HERE))
    from fixture_walls import certify as certify_fixture

    with tempfile.TemporaryDirectory(prefix="verdict-compare-one-") as work:
        run = certify_fixture(role, folder, Path(work))
    return {v.requirement.id: v.verdict for v in run.verdicts}


def violated(verdicts: Verdicts) -> set[str]:
    return {rid for rid, verdict in verdicts.items() if verdict in ("fail", "warn")}


def differences(a: Verdicts, b: Verdicts) -> dict[str, tuple[str | None, str | None]]:
    return {rid: (a.get(rid), b.get(rid)) for rid in sorted(set(a) | set(b)) if a.get(rid) != b.get(rid)}


def compare(target: str, base: Path, head: Path, timeout_s: float, repeat: int) -> dict[str, Any]:
    started = time.monotonic()
    first_base, why_base = certify(target, base, timeout_s)
    first_head, why_head = certify(target, head, timeout_s)
    row: dict[str, Any] = {"target": target, "base_error": why_base, "head_error": why_head}
    if first_base is None or first_head is None:
        row.update(status="no-verdicts", wall_s=round(time.monotonic() - started, 1))
        return row
    diff = differences(first_base, first_head)
    bases, heads = [first_base], [first_head]
    for _ in range(repeat if diff else 0):
        for side, runs in ((base, bases), (head, heads)):
            again, _ = certify(target, side, timeout_s)
            if again is not None:
                runs.append(again)
    # A requirement is noisy when either side alone gave it two verdicts;
    # it is changed when no run of the base ever gave a verdict the head gave.
    seen_base = {rid: {r.get(rid) for r in bases} for rid in diff}
    seen_head = {rid: {r.get(rid) for r in heads} for rid in diff}
    noisy = {rid for rid in diff if len(seen_base[rid]) > 1 or len(seen_head[rid]) > 1}
    changed = {rid: d for rid, d in diff.items() if rid not in noisy or not seen_head[rid] & seen_base[rid]}
    row.update(
        status="changed" if changed else ("noise" if diff else "same"),
        requirements=len(first_head),
        violated_base=sorted(violated(first_base)),
        violated_head=sorted(violated(first_head)),
        changed={rid: list(d) for rid, d in changed.items()},
        noise={rid: [sorted(map(str, seen_base[rid])), sorted(map(str, seen_head[rid]))] for rid in noisy},
        runs=len(bases),
        wall_s=round(time.monotonic() - started, 1),
    )
    return row


def summary(rows: list[dict[str, Any]]) -> str:
    lines = [f"| {'target':44} | status | requirements | violated (base = head) | changed |",
             f"| {'-' * 44} | --- | ---: | --- | --- |"]  # fmt: skip
    for r in rows:
        same_violated = r.get("violated_base") == r.get("violated_head")
        lines.append(
            f"| {r['target']:44} | {r['status']} | {r.get('requirements', '')} | "
            f"{', '.join(r.get('violated_head', [])) or '-'} ({'same' if same_violated else 'DIFFERENT'}) | "
            f"{r.get('changed') or ''} |"
        )
    counts = {s: sum(r["status"] == s for r in rows) for s in ("same", "noise", "changed", "no-verdicts")}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--one", nargs=2, metavar=("ROLE", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument("--base", type=Path, help="the checkout to compare against (its folder holds conformance/)")
    parser.add_argument("--head", type=Path, default=HERE.parent, help="the checkout under test (default: this one)")
    parser.add_argument("--targets", default="ref-host,ref-hostcore", help="comma-separated (see the docstring)")
    parser.add_argument("--repeat-changed", type=int, default=1, help="re-runs of a target whose verdicts differ")
    parser.add_argument("--timeout", type=float, default=900.0, help="per certification, seconds (a hang guard)")
    parser.add_argument("--json", type=Path, default=Path("reports/verdict-compare.json"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], Path(args.one[1]))))
        return 0
    if args.base is None:
        parser.error("--base is required")
    rows: list[dict[str, Any]] = []
    for target in [t for t in args.targets.split(",") if t]:
        rows.append(compare(target, args.base.resolve(), args.head.resolve(), args.timeout, args.repeat_changed))
        r = rows[-1]
        print(f"{r['wall_s']:7.1f} s  {target}: {r['status']} {r.get('changed') or ''}", file=sys.stderr, flush=True)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        record = {"base": str(args.base), "head": str(args.head), "rows": rows}
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    print(summary(rows))
    return 0 if all(r["status"] in ("same", "noise") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
