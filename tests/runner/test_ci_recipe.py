"""docs/ci.md: the GitHub Actions workflow's commands are valid against the
command line's own argument parser and the pytest plugin's options."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from conformance import pytest_plugin
from conformance.cli import _parser

ROOT = Path(__file__).resolve().parents[2]


def workflow() -> str:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "docs/ci.md holds one workflow"
    return blocks[0]


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
    assert any(c.startswith("octet-conformance report ") and " -o " in c for c in commands)
    assert "actions/upload-artifact@" in yaml and "if: always()" in yaml


def test_every_octet_conformance_command_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # files the workflow names exist in the repository it runs in
    commands = [shlex.split(c) for c in run_commands(workflow())]
    ours = [argv for argv in commands if Path(argv[0]).name == "octet-conformance"]
    assert len(ours) >= 3
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
