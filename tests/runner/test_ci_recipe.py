"""docs/ci.md: the GitHub Actions workflow's commands are valid against the
command line's own argument parser and the pytest plugin's options, and they
work: run in a fresh virtual environment, in a copy of a small faulty
fixture extension's folder standing for the extension's repository, they
install the suite (from this checkout, built as a wheel, in place of the
``OCTET_CONFORMANCE`` git URL), list, certify with a baseline, write the HTML
report, and certify again as pytest items, each exiting 0, and every path the
workflow uploads exists afterwards."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance import pytest_plugin
from conformance.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
# The extension the recipe certifies: small, quick, and with one failure the
# baseline lists (so the baseline and xfail path is run, not just parsed).
FIXTURE = ROOT / "fixtures" / "extensions" / "double-reply"
BASELINE = """format = "octet-conformance/baseline@1"

[[expected]]
requirement = "JSONRPC-5-one-response"
reason = "every successful tool call answered twice: the fixture's fault"
"""
# What installs the extension's own runtime in the workflow; the fixture's
# runtime is the fresh environment's python3, so these are not run here.
RUNTIME_INSTALLS = ("npm ci", "npm install", "yarn install", "pnpm install")
# Guards against a hang only (a run that takes this long is broken), never a performance goal.
STEP_GUARD_S = 600


def workflow() -> str:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "docs/ci.md holds one workflow"
    return blocks[0]


def env_of(yaml: str) -> dict[str, str]:
    """The workflow's top-level ``env:`` (one ``NAME: value`` a line)."""
    block = re.search(r"^env:\n((?:[ \t]+.*\n|\s*\n)+)", yaml, flags=re.M)
    found: dict[str, str] = {}
    for line in block.group(1).splitlines() if block else []:
        match = re.match(r"^\s+([A-Z_][A-Z0-9_]*):\s*(.+?)\s*$", line)
        if match:
            found[match.group(1)] = match.group(2).strip("\"'")
    return found


def uploaded_paths(yaml: str) -> list[str]:
    """Every ``path:`` of an upload-artifact step (one line, or a ``|`` block)."""
    paths: list[str] = []
    lines = yaml.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)path:\s*(.*)$", line)
        if not match:
            continue
        if match.group(2) not in ("|", ">"):
            paths.append(match.group(2))
            continue
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= len(match.group(1)):
                break
            if following.strip():
                paths.append(following.strip())
    return paths


def run_commands(yaml: str) -> list[str]:
    """Every ``run:`` of the workflow (one-line or ``run: |`` blocks, with ``\\`` continuations)."""
    commands: list[str] = []
    lines = yaml.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)(?:- )?run:\s*(.*)$", line)
        if not match:
            continue
        if match.group(2) not in ("|", ">"):
            commands.append(match.group(2))
            continue
        indent = len(match.group(1))
        body = []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following.strip())
        commands.extend(c for c in "\n".join(body).replace("\\\n", " ").splitlines() if c.strip())
    return commands


class Options:
    """Records what the plugin's pytest_addoption declares."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def getgroup(self, *args: Any, **kwargs: Any) -> Options:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.names.update(names)


def test_the_workflow_certifies_applies_a_baseline_and_uploads_the_report() -> None:
    yaml = workflow()
    commands = run_commands(yaml)
    assert any(c.startswith("octet-conformance extension ") and "--baseline" in c for c in commands)
    # The certification writes report.html itself (uploaded with the directory): no `report` step.
    certify = [c for c in commands if c.startswith("octet-conformance extension ") and "--report-dir" in c]
    assert certify and all("--report-dir reports/conformance" in c for c in certify)
    assert "actions/upload-artifact@" in yaml and "if: always()" in yaml


def test_every_octet_conformance_command_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # files the workflow names exist in the repository it runs in
    commands = [shlex.split(c) for c in run_commands(workflow())]
    ours = [argv for argv in commands if Path(argv[0]).name == "octet-conformance"]
    assert len(ours) >= 2  # --list, then the certification (which writes report.html itself)
    for argv in ours:
        for token in argv:
            if token.endswith(".toml"):
                Path(token).parent.mkdir(parents=True, exist_ok=True)
                Path(token).touch()
        try:
            _parser().parse_args(argv[1:])
        except SystemExit as exc:  # argparse's usage error: name the command
            pytest.fail(f"docs/ci.md: {shlex.join(argv)} is refused by the command line (exit {exc.code})")


def test_the_pytest_job_uses_the_plugins_options() -> None:
    declared = Options()
    pytest_plugin.pytest_addoption(declared)  # type: ignore[arg-type]
    runs = [shlex.split(c) for c in run_commands(workflow())]
    pytest_runs = [argv for argv in runs if argv[0] == "pytest"]
    assert pytest_runs
    used = {t.split("=", 1)[0] for argv in pytest_runs for t in argv if t.startswith("--octet-")}
    assert used and used <= declared.names, used - declared.names


def test_the_workflow_installs_from_the_repository_and_the_targets_runtime() -> None:
    yaml = workflow()
    install = env_of(yaml).get("OCTET_CONFORMANCE", "")
    assert install.startswith("git+https://"), "the suite is on no index: install it from its repository"
    commands = run_commands(yaml)
    assert not any("octet-conformance==" in c for c in commands), "no pinned version from an index"
    assert sum('pip install "$OCTET_CONFORMANCE"' in c for c in commands) == 2  # both jobs
    assert yaml.count("actions/setup-node@") == 2 and sum(c in RUNTIME_INSTALLS for c in commands) == 2
    assert any(c.startswith("pytest ") for c in commands)
    # Both jobs keep their report whatever the outcome.
    assert yaml.count("actions/upload-artifact@") == 2
    assert all(chunk.count("if: always()") >= 1 for chunk in yaml.split("actions/upload-artifact@")[:-1])


def fresh_environment(where: Path) -> dict[str, str]:
    """A new virtual environment with pip and nothing else, first on PATH,
    and none of this test run's own environment (no PYTHONPATH, no virtual
    environment, no pytest variables)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=STEP_GUARD_S)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "COV_"))}
    env["PATH"] = f"{where / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(where)
    return env


def wheel_of_this_checkout(into: Path) -> Path:
    """What a job that builds the suite's wheel installs (docs/ci.md, Install)."""
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(into), str(ROOT)]
    subprocess.run(argv, check=True, capture_output=True, timeout=STEP_GUARD_S)
    (wheel,) = into.glob("octet_conformance-*.whl")
    return wheel


def as_run_here(command: str) -> str:
    """The workflow's command at the quick profile (the recipe's default
    profile is the one to use in CI; here it would only take longer)."""
    for option in ("--profile", "--octet-profile"):
        command = command.replace(f"{option} default", f"{option} quick")
    return command


@pytest.mark.slow
def test_the_workflow_runs_in_a_fresh_environment(tmp_path: Path) -> None:
    yaml = workflow()
    repository = tmp_path / "extension-repo"
    shutil.copytree(FIXTURE, repository, ignore=shutil.ignore_patterns("expect.toml", "__pycache__"))
    (repository / "conformance-baseline.toml").write_text(BASELINE, encoding="utf-8")
    env = fresh_environment(tmp_path / "venv")
    env["OCTET_CONFORMANCE"] = str(wheel_of_this_checkout(tmp_path / "dist"))
    timings: list[str] = []
    for command in run_commands(yaml):
        if command in RUNTIME_INSTALLS:
            continue  # the fixture's runtime is the fresh environment's own python3
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "-e", "-c", as_run_here(command)],
            cwd=repository, env=env, capture_output=True, text=True, timeout=STEP_GUARD_S,
        )  # fmt: skip
        timings.append(f"{time.monotonic() - started:6.1f}s  {command[:90]}")
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    print("\n".join(timings))  # shown with -s: where the recipe's time goes
    # It ran the installed suite, not this checkout.
    where = subprocess.run(
        ["python", "-c", "import conformance; print(conformance.__file__)"],
        cwd=repository, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert str(tmp_path / "venv") in where.stdout, where
    for path in uploaded_paths(yaml):
        assert (repository / path).exists(), f"the workflow uploads {path}, which no step wrote"
    certified = (repository / "reports" / "conformance" / "matrix.json").read_text(encoding="utf-8")
    assert '"xfail"' in certified  # the baseline's entry was applied
    assert (repository / "reports" / "conformance" / "report.html").is_file()
