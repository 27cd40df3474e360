"""The HTML report in a real browser: Debian's chromium, headless, driven by
Selenium through Debian's chromium-driver (Playwright's own browser
download is not reachable from CI machines). `.ci/run` installs both with
apt when missing; where they cannot be installed the browser part skips
with the reason, after the report built from real runs has been checked
without a browser.

Four real runs are recorded once per module, in parallel, with small
budgets: the reference extension on the simulated transport and three faulty
fixtures. Three are compared with the `report` command; the fourth's own
report.html (every certification writes one) is opened as a user opens it
after a failing run. Set OCTET_UPDATE_SCREENSHOT=1 to refresh
docs/report.png and docs/report-failing.png from these tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "extensions"
FAULTY = {"double-reply": "JSONRPC-5-one-response", "empty-description": "EXT-1.1-tool-description"}
SINGLE = ("wrong-cancel-code", "EXT-1.9-cancel-reply-code")  # the failing run whose own page is screenshotted
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
RUN_TIMEOUT_S = 300  # a guard against a hang, not a performance assertion
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1600,1000",
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _record(tmp_path_factory.mktemp("runs"))


def _record(tmp: Path) -> list[Path]:
    """Four certification runs at once (each in its own CLI process)."""
    plans = [(tmp / "reference", ["--simulate"])]
    plans += [(tmp / name, [str(FIXTURES / name / "extension.toml")]) for name in (*FAULTY, SINGLE[0])]
    procs = []
    try:
        for out, extra in plans:
            argv = [sys.executable, "-m", "conformance.cli", "extension", *extra, "--profile", "quick"]
            procs.append(subprocess.Popen([*argv, "--report-dir", str(out)], stdout=subprocess.DEVNULL))
        codes = [p.wait(timeout=RUN_TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert codes == [0, 1, 1, 1]
    return [out for out, _ in plans]


def _driver(profile_dir: Path):  # type: ignore[no-untyped-def]
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile_dir}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))


def _need_browser() -> None:
    if not (CHROMIUM and DRIVER):
        pytest.skip("no headless browser: apt-get install chromium chromium-driver (.ci/run does it as root)")


def test_report_of_three_runs_filters_and_opens_a_failure(recorded: list[Path], tmp_path: Path) -> None:
    runs = recorded[:3]
    report = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "-o", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    # Without a browser: every failure is in the page with its replay command.
    for requirement in FAULTY.values():
        assert f"octet-conformance replay traces/{requirement}.jsonl" in html
    assert "http://" not in html and "https://" not in html  # self-contained: nothing to fetch

    _need_browser()
    driver = _driver(tmp_path / "chromium-profile")
    try:
        _exercise(driver, report, tmp_path)
    finally:
        driver.quit()


def _exercise(driver, report: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(report.as_uri())
    assert len(driver.find_elements(By.CSS_SELECTOR, ".run")) == 3
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.req-row")

    # With failures, the page opens on fail and warn, the first failure open, and the URL says so.
    assert Select(driver.find_element(By.ID, "f-verdict")).first_selected_option.get_attribute("value") == "failing"
    shown = [r for r in rows if r.is_displayed()]
    assert set(FAULTY.values()) <= {r.get_attribute("data-id") for r in shown}
    assert all(set(r.get_attribute("data-verdicts").split()) & {"fail", "warn"} for r in shown)
    assert driver.find_element(By.ID, "evidence").is_displayed()
    assert "verdict=failing" in driver.current_url and "&open=" in driver.current_url

    Select(driver.find_element(By.ID, "f-verdict")).select_by_value("")
    assert len([r for r in rows if r.is_displayed()]) > 50
    assert "verdict=" not in driver.current_url

    Select(driver.find_element(By.ID, "f-verdict")).select_by_value("fail")
    shown_ids = {r.get_attribute("data-id") for r in rows if r.is_displayed()}
    assert shown_ids == set(FAULTY.values())
    Select(driver.find_element(By.ID, "f-level")).select_by_value("should")
    assert not [r for r in rows if r.is_displayed()]  # both failures are must-requirements
    Select(driver.find_element(By.ID, "f-level")).select_by_value("")

    # A link reproduces a view: the filters and the open cell come from the fragment.
    driver.get(report.as_uri() + "#verdict=fail&level=should")
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.req-row")
    assert not [r for r in rows if r.is_displayed()]
    assert driver.find_element(By.ID, "evidence").is_displayed() is False
    driver.get(report.as_uri() + "#verdict=fail&open=2%3AEXT-1.1-tool-description")
    panel = driver.find_element(By.ID, "evidence")
    assert panel.is_displayed() and panel.get_attribute("data-req") == "EXT-1.1-tool-description"
    driver.find_element(By.ID, "close-evidence").click()
    assert "open=" not in driver.current_url

    driver.find_element(By.CSS_SELECTOR, 'button[data-run="1"][data-req="JSONRPC-5-one-response"]').click()
    panel = driver.find_element(By.ID, "evidence")
    assert panel.is_displayed()
    assert "answered a second time" in panel.text
    assert "jsonrpc-2.0 §5" in panel.text
    # frames are collapsible JSON trees; the initialize request is the first host frame
    host = panel.find_elements(By.CSS_SELECTOR, ".exchange .host .j-frame, .exchange .host pre")
    target = panel.find_elements(By.CSS_SELECTOR, ".exchange .target .j-frame, .exchange .target pre")
    assert host and target and '"initialize"' in host[0].text
    command = panel.find_element(By.CSS_SELECTOR, ".replay-command").text
    assert command.endswith("octet-conformance replay traces/JSONRPC-5-one-response.jsonl")
    copy = panel.find_element(By.CSS_SELECTOR, "button.copy")
    copy.click()
    # The clipboard API answers asynchronously: wait for the button to say how it went.
    WebDriverWait(driver, 30).until(lambda _: copy.text != "copy")
    assert copy.text in ("copied", "select and copy")

    driver.execute_script("window.scrollTo(0, 0); document.getElementById('evidence').scrollTop = 0")
    shot = tmp_path / "report.png"
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("OCTET_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, ROOT / "docs" / "report.png")


def test_a_failing_runs_own_report_opens_on_its_failure(recorded: list[Path], tmp_path: Path) -> None:
    """What a user sees after `octet-conformance extension` failed: the page the run wrote."""
    run, requirement = recorded[3], SINGLE[1]
    page = run / "report.html"
    html = page.read_text(encoding="utf-8")
    assert f"octet-conformance replay traces/{requirement}.jsonl" in html
    assert "http://" not in html and "https://" not in html
    _need_browser()
    driver = _driver(tmp_path / "chromium-profile")
    try:
        _failing_page(driver, page, requirement, tmp_path)
    finally:
        driver.quit()


def _failing_page(driver, page: Path, requirement: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    driver.set_window_size(1600, 1400)  # tall enough for the failure, its replay and the outlined frame at once
    driver.get(page.as_uri())
    shown = [
        r.get_attribute("data-id") for r in driver.find_elements(By.CSS_SELECTOR, "tr.req-row") if r.is_displayed()
    ]
    assert shown == [requirement]  # only the failure: no pass, skip or untested row
    panel = driver.find_element(By.ID, "evidence")
    assert panel.is_displayed() and panel.get_attribute("data-req") == requirement  # opened without a click
    failure = panel.find_element(By.CSS_SELECTOR, ".failure")
    assert f"FAIL §1.9 {requirement}" in failure.text
    assert failure.find_element(By.CSS_SELECTOR, ".expected").text == "expected -32800 (or a normal result)"
    assert "answered with error code -32603 (at .error.code)" in failure.find_element(By.CSS_SELECTOR, ".observed").text
    # the frame the violation was judged on: a JSON tree, outlined
    marked = panel.find_element(By.CSS_SELECTOR, ".exchange .marked .j-frame")
    assert '"code": -32603' in marked.text
    command = panel.find_element(By.CSS_SELECTOR, ".replay-command").text
    assert command.endswith(f"octet-conformance replay traces/{requirement}.jsonl")

    shot = tmp_path / "report-failing.png"
    driver.save_screenshot(str(shot))
    panel.find_element(By.CSS_SELECTOR, "button.to-evidence").click()  # brings the outlined frame into view
    assert driver.execute_script(
        "var r = arguments[0].getBoundingClientRect(), p = arguments[1].getBoundingClientRect();"
        "return r.top >= p.top && r.top < p.bottom;",
        marked,
        panel,
    )
    driver.execute_script("arguments[0].scrollTop = 0", panel)
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("OCTET_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, ROOT / "docs" / "report-failing.png")
