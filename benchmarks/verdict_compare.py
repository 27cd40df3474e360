"""Certify the same targets on two checkouts and compare their verdicts.

    python benchmarks/verdict_compare.py [--rev main | --base DIR] [--head .]
        [--targets ref-host,ref-hostcore,host/NAME,hostcore/NAME,...]
        [--repeat-changed 1] [--work /tmp/verdict-compare] [--json reports/verdict-compare.json]

A refactor that must leave verdicts alone (issue 23) is proven here: every
target is certified at the ``quick`` profile, one at a time, once on the
base checkout and once on the head checkout, and the verdicts are diffed.

Each side runs entirely on its own code. The harness is a child process of
that side's own interpreter, and the targets it starts inherit that
interpreter: ``sanitized_env`` (conformance/transport/process.py) drops
``PYTHONPATH`` but puts the running interpreter's folder first on a target's
``PATH``, so a target's ``python3``, ``octet-hostcore`` and
``octet-hostcore-client`` are the side's. (Putting a checkout first on
``PYTHONPATH``, as this script once did, reached the harness only: every
target imported the editable install, i.e. the head.) A side's interpreter is:

- the running one, when it already imports ``conformance`` from that
  checkout (the head, usually: this checkout's editable install);
- otherwise a virtual environment cached under ``--work``: made with
  ``venv --without-pip``, given a ``.pth`` naming the running interpreter's
  site-packages (the dependencies, not reinstalled; their ``.pth`` files, so
  the head's editable finder, are not processed from there), and the
  checkout installed into it with ``pip install --no-deps -e`` (its own
  package layout and console scripts, whose first line names the venv).

``--rev REV`` (default ``main``) names the base: ``git archive REV`` is
unpacked under ``--work`` (cached by commit); ``--base DIR`` takes a folder
instead. Before certifying, each side is probed: the harness and a target
started as the harness starts targets print where they import
``conformance`` from, and the run stops unless both are the side's checkout.
The probes go in the JSON.

Targets: ``ref-host`` and ``ref-hostcore`` (the references, through the
command line, compared on their matrix.json results), and ``ROLE/NAME`` for
a fixture of the side's own ``fixtures/`` (certified with the options its
fixture test gives it: the side's own ``benchmarks/fixture_walls.certify``,
or the head's when the side has none). For each, the per-requirement
verdicts and the violated (fail/warn) ids are diffed. A racy scenario may
flip a ``pass`` to ``untested`` or back between two runs of the same code:
with ``--repeat-changed N`` a target whose verdicts differ is certified N
more times on both sides, and a difference that the base also shows between
its own runs is reported as noise, not as a change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FOLDERS = {"extension": "extensions", "host": "hosts", "hostcore": "hostcores", "client": "clients"}
SEED = 20261130  # the quick profile's default seed
REFERENCES = {
    "ref-host": ["host", "--profile", "quick", "--seed", str(SEED)],
    "ref-hostcore": ["hostcore", "--profile", "quick", "--seed", str(SEED)],
}
SETUP_TIMEOUT_S = 300.0  # making a side's venv (pip may fetch its build backend)
Verdicts = dict[str, str]


@dataclass(frozen=True)
class Side:
    """One checkout and the interpreter whose harness and targets run its code."""

    name: str  # "base" or "head"
    checkout: Path
    python: Path
    probe: dict[str, str]


# -- each side's interpreter ----------------------------------------------------------------------

# Run by a side's interpreter: where the harness imports conformance from, and
# where a target started the way the harness starts targets does.
PROBE = r"""
import json, subprocess
from pathlib import Path
import conformance
try:
    from conformance.transport.process import resolve_argv, sanitized_env
except ImportError:  # a checkout without these helpers: say so rather than guess
    raise SystemExit(json.dumps({"harness": conformance.__file__, "target": "", "error": "no sanitized_env"}))
env = sanitized_env()
show = "import conformance, sys; print(conformance.__file__); print(sys.executable)"
argv = resolve_argv(["python3", "-c", show], Path.cwd(), env)
out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout.split("\n") + ["", ""]
print(json.dumps({"harness": conformance.__file__, "target": out[0], "target_python": out[1],
                  "octet_hostcore": resolve_argv(["octet-hostcore"], Path.cwd(), env)[0]}))
"""


def probe(python: Path, cwd: Path) -> dict[str, str]:
    done = subprocess.run([str(python), "-c", PROBE], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False, env=_env())  # fmt: skip
    try:
        found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"harness": "", "target": "", "error": done.stderr.strip()[-300:]}
    return found


def runs_checkout(found: dict[str, str], checkout: Path) -> bool:
    package = checkout / "conformance"
    return all(found.get(k) and Path(found[k]).resolve().is_relative_to(package) for k in ("harness", "target"))


def _env() -> dict[str, str]:
    # PYTHONPATH would put some other code ahead of the side's own.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def make_venv(checkout: Path, venv: Path) -> Path:
    """A venv running ``checkout`` with the running interpreter's dependencies
    (cached: made once per checkout and running interpreter)."""
    python = venv / "bin" / "python"
    if (venv / "ready").is_file():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)], check=True,
                   timeout=SETUP_TIMEOUT_S)  # fmt: skip
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip()  # fmt: skip
    # A plain path line: the dependencies (pip and the build backend's too)
    # without running the .pth files there, the head's editable finder among them.
    (Path(own) / "_verdict_compare_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(checkout)], check=True,
                   env=_env(), timeout=SETUP_TIMEOUT_S)  # fmt: skip
    (venv / "ready").write_text(str(checkout) + "\n", encoding="utf-8")
    return python


def export_rev(rev: str, repo: Path, work: Path) -> tuple[Path, str]:
    """``git archive REV`` unpacked under ``work`` (cached by commit)."""
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=True, timeout=60).stdout.strip()  # fmt: skip
    code = work / f"rev-{sha[:12]}" / "code"
    if not (code / ".complete").is_file():
        code.mkdir(parents=True, exist_ok=True)
        tar = code.parent / "code.tar"
        subprocess.run(["git", "-C", str(repo), "archive", "-o", str(tar), sha], check=True, timeout=SETUP_TIMEOUT_S)
        subprocess.run(["tar", "-x", "-f", str(tar), "-C", str(code)], check=True, timeout=SETUP_TIMEOUT_S)
        tar.unlink()
        (code / ".complete").write_text(sha + "\n", encoding="utf-8")
    return code, sha


def side(name: str, checkout: Path, work: Path) -> Side:
    """The checkout's interpreter, proven to run the checkout's code in the
    harness and in a target; the run stops otherwise."""
    work.mkdir(parents=True, exist_ok=True)
    python = Path(sys.executable)
    found = probe(python, work)
    if not runs_checkout(found, checkout):
        venv = work / f"venv-{_key(str(checkout), sys.prefix)}"
        python = make_venv(checkout, venv)
        found = probe(python, work)
    if not runs_checkout(found, checkout):
        raise SystemExit(f"{name}: {python} does not run {checkout}/conformance: {found}")
    return Side(name, checkout, python, found)


# -- certifying -----------------------------------------------------------------------------------


def certify(target: str, on: Side, timeout_s: float) -> tuple[Verdicts | None, str]:
    """The target's verdicts on side ``on`` (None and why when none came)."""
    with tempfile.TemporaryDirectory(prefix="verdict-compare-") as work:
        if target in REFERENCES:
            report = Path(work) / "report"
            argv = [str(on.python), "-m", "conformance.cli", *REFERENCES[target], "--report-dir", str(report), "-q"]
        else:
            role, name = target.split("/", 1)
            folder = on.checkout / "fixtures" / FOLDERS[role] / name
            if not folder.is_dir():
                return None, f"no fixture {folder}"
            argv = [str(on.python), str(Path(__file__).resolve()), "--one", role, str(folder),
                    "--code", str(on.checkout)]  # fmt: skip
        try:
            done = subprocess.run(argv, env=_env(), cwd=work, capture_output=True, text=True,
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


def one(role: str, folder: Path, code: Path) -> Verdicts:
    """In the child: a fixture certified as the side's fixture test does; its verdicts by id."""
    own = code / "benchmarks"
    sys.path.insert(0, str(own if (own / "fixture_walls.py").is_file() else HERE))
    from fixture_walls import certify as certify_fixture

    with tempfile.TemporaryDirectory(prefix="verdict-compare-one-") as work:
        run = certify_fixture(role, folder, Path(work))
    return {v.requirement.id: v.verdict for v in run.verdicts}


def violated(verdicts: Verdicts) -> set[str]:
    return {rid for rid, verdict in verdicts.items() if verdict in ("fail", "warn")}


def differences(a: Verdicts, b: Verdicts) -> dict[str, tuple[str | None, str | None]]:
    return {rid: (a.get(rid), b.get(rid)) for rid in sorted(set(a) | set(b)) if a.get(rid) != b.get(rid)}


def compare(target: str, base: Side, head: Side, timeout_s: float, repeat: int) -> dict[str, Any]:
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
        for on, runs in ((base, bases), (head, heads)):
            again, _ = certify(target, on, timeout_s)
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
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)  # with --one: the side's checkout
    parser.add_argument("--rev", default="main", help="the base as a git revision of the head's repository")
    parser.add_argument("--base", type=Path, help="the base as a folder holding conformance/ (instead of --rev)")
    parser.add_argument("--head", type=Path, default=HERE.parent, help="the checkout under test (default: this one)")
    parser.add_argument("--targets", default="ref-host,ref-hostcore", help="comma-separated (see the docstring)")
    parser.add_argument("--repeat-changed", type=int, default=1, help="re-runs of a target whose verdicts differ")
    parser.add_argument("--timeout", type=float, default=900.0, help="per certification, seconds (a hang guard)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "verdict-compare",
                        help="where the base's export and the venvs are cached")  # fmt: skip
    parser.add_argument("--json", type=Path, default=Path("reports/verdict-compare.json"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], Path(args.one[1]), args.code or HERE.parent)))
        return 0
    work, head_dir = args.work.resolve(), args.head.resolve()
    sha = ""
    if args.base is not None:
        base_dir = args.base.resolve()
    else:
        base_dir, sha = export_rev(args.rev, head_dir, work)
    base, head = side("base", base_dir, work), side("head", head_dir, work)
    sides = {s.name: {"checkout": str(s.checkout), "python": str(s.python), "probe": s.probe} for s in (base, head)}
    sides["base"]["rev"] = "" if args.base is not None else f"{args.rev} {sha}"
    for s in (base, head):
        print(f"{s.name}: {s.python} -> harness {s.probe['harness']}, target {s.probe['target']}",
              file=sys.stderr, flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    for target in [t for t in args.targets.split(",") if t]:
        rows.append(compare(target, base, head, args.timeout, args.repeat_changed))
        r = rows[-1]
        print(f"{r['wall_s']:7.1f} s  {target}: {r['status']} {r.get('changed') or ''}", file=sys.stderr, flush=True)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"sides": sides, "rows": rows}, indent=1) + "\n")
    print(summary(rows))
    return 0 if all(r["status"] in ("same", "noise") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
