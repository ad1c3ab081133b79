"""The workbench in a real browser: `streamlit run` on a free port, driven by Playwright + Chromium.

Skips (with the reason) when Debian's Chromium is not installed, except in CI
(env ``CI`` set), where a missing browser is a failure: ``.ci/run`` installs it.
Screenshots of every page go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
START_TIMEOUT_S = 60
# Semantic and hybrid load the embedding model on first use (several seconds).
RUN_TIMEOUT_MS = 120_000
QUERY = "refund a customer for a duplicate charge"
PAGES = {  # page -> title shown on it (None: any title; the pages of issue 7)
    "catalog": "Catalog",
    "playground": "Query playground",  # the default page: served at "/"
    "compare": "Compare",
    "editor": None,
    "evaluation": None,
    "recall": None,
}
RUNNING = '[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]'
# Elements still loading (their placeholders), and what a finished page shows.
LOADING = '[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]'
LOADED = '[data-testid="stMainBlockContainer"] h1, [data-testid="stException"]'


def _url(server: str, name: str) -> str:
    return f"{server}/" if name == "playground" else f"{server}/{name}"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def _require(condition: bool, reason: str) -> None:
    if condition:
        return
    if _in_ci():
        pytest.fail(f"{reason} (CI is set, so the browser test must run)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a `streamlit run workbench/app.py` started for this module, stopped after it."""
    _require(CHROMIUM.exists(), f"{CHROMIUM} is missing; install Debian's chromium package to run "
             "the browser tests (see DEVELOPERS.md)")
    tmp = tmp_path_factory.mktemp("streamlit")
    port = _free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "RANKLENS_CACHE_DIR": str(tmp / "cache"),
        "RANKLENS_CATALOG": str(ROOT / "sample_catalogs" / "support_billing.json"),
        "RANKLENS_AUTOSAVE_DIR": str(tmp / "autosave"),  # never the user's own autosaves
    }
    log = tmp / "streamlit.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "workbench/app.py",
             "--server.port", str(port), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def browser(server: str):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require(False, "playwright is not installed; it is a dev dependency: pip install -e '.[dev]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 1800})
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


def _settle(page) -> None:
    """Wait until the script run is over and every element has rendered."""
    idle = f"() => !document.querySelector('{RUNNING}, {LOADING}')"
    page.wait_for_selector(LOADED, timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(idle, timeout=RUN_TIMEOUT_MS)
    page.wait_for_timeout(1000)
    page.wait_for_function(idle, timeout=RUN_TIMEOUT_MS)


def _no_exception(page, where: str) -> None:
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{where}: {exceptions.first.inner_text()}"


def _svg_texts(locator, selector: str) -> list[str]:
    """Text of SVG elements (which have no innerText)."""
    return locator.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


def _shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.mark.parametrize("name", list(PAGES))
def test_page_loads_without_exception(server: str, page, name: str) -> None:
    page.goto(_url(server, name))
    _settle(page)
    _shoot(page, name)
    _no_exception(page, name)
    assert page.get_by_text("Page not found").count() == 0
    title = PAGES[name]
    if title is not None:
        assert page.locator('[data-testid="stMainBlockContainer"] h1').first.inner_text().strip() == title


def test_playground_query_renders_ranked_table_and_chart(server: str, page) -> None:
    page.goto(_url(server, "playground"))
    _settle(page)
    box = page.locator(".st-key-playground_query input")
    box.fill(QUERY)
    box.press("Enter")
    page.get_by_text(f"“{QUERY}”", exact=False).first.wait_for(timeout=RUN_TIMEOUT_MS)
    _settle(page)
    _no_exception(page, "playground after a query")

    table = page.locator('.st-key-playground_results_box [data-testid="stDataFrame"]')
    table.wait_for(timeout=RUN_TIMEOUT_MS)
    assert table.bounding_box()["height"] > 100
    # The grid draws on a canvas; its accessible table holds the same cells.
    cells = table.locator("table").inner_text()
    assert "create_refund" in cells and "8.635" in cells

    chart = page.locator('.st-key-playground_chart .js-plotly-plot')
    chart.wait_for(timeout=RUN_TIMEOUT_MS)
    bars = chart.locator("g.trace.bars")
    assert bars.count() >= 3  # one trace per query term: refund, custom, duplic, charg
    legend = _svg_texts(chart, ".legendtext")
    assert {"refund", "duplic", "charg"} <= set(legend)
    # The top hit's label is on the y axis.
    assert "#1 create_refund" in _svg_texts(chart, ".ytick text")
    _shoot(page, "playground-query")

    # "Why not this tool?" for a tool ranked below the winners.
    combo = page.locator('.st-key-playground_why_not input[role="combobox"]')
    combo.click()
    combo.fill("get_refund")
    page.get_by_role("option", name="get_refund", exact=True).click()
    warning = page.get_by_text("lacks 2 query terms", exact=False)
    warning.wait_for(timeout=RUN_TIMEOUT_MS)
    _settle(page)
    _no_exception(page, "playground after picking a tool")
    warning.scroll_into_view_if_needed()
    _shoot(page, "playground-why-not")


def test_compare_page_renders_both_sides_and_grid(server: str, page) -> None:
    page.goto(_url(server, "compare"))
    _settle(page)
    _no_exception(page, "compare")
    # B is hybrid: unless an earlier search loaded the model, the page waits for a click.
    run = page.locator(".st-key-compare_run button")
    if run.count():
        assert page.get_by_text("about 10 s", exact=False).count() >= 1
        run.click()
        page.locator('[data-testid="stDataFrame"]').nth(1).wait_for(timeout=RUN_TIMEOUT_MS)
        _settle(page)
        _no_exception(page, "compare after pressing Compare")
    frames = page.locator('[data-testid="stDataFrame"]')
    assert frames.count() == 2  # side A, side B
    assert "create_ticket" in frames.nth(0).locator("table").inner_text()
    grid = page.locator(".st-key-compare_grid table.rl-grid")
    headers = grid.locator("th").all_inner_texts()
    assert headers == ["query", "bm25 top 3"]  # semantic and hybrid only when asked for
    assert grid.locator("tbody tr").count() == 6  # the first six judged queries
    assert "create_ticket" in grid.locator("tbody tr").first.inner_text()
    _shoot(page, "compare-after-run")


def _pick(page, key: str, option: str) -> None:
    combo = page.locator(f'.st-key-{key} input[role="combobox"]')
    combo.click()
    combo.fill(option)
    page.get_by_role("option", name=option, exact=True).click()
    _settle(page)


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text=title).wait_for(
        timeout=RUN_TIMEOUT_MS)
    _settle(page)


def test_editor_undo_redo_keeps_the_edited_tool_and_json_errors_keep_the_tab(server: str, page) -> None:
    """The review's path: edit list_refunds, leave the page, come back, Undo, Redo. The tool to
    edit stays list_refunds (it used to jump to the first tool). A failed Apply JSON keeps the
    JSON tab open with the error above the text."""
    page.goto(_url(server, "editor"))
    _settle(page)
    discard = page.locator(".st-key-editor_discard_autosave button")
    if discard.count():  # an autosave of an earlier run of this test
        discard.click()
        _settle(page)
    _pick(page, "editor_tool_select", "list_refunds")
    area = page.locator(".st-key-editor_description textarea")
    area.fill(area.input_value() + " Refund a duplicate charge.")
    area.blur()
    page.locator(".st-key-editor_apply button").click()
    page.get_by_text("1 edit applied", exact=False).wait_for(timeout=RUN_TIMEOUT_MS)
    _settle(page)
    _nav(page, "Evaluation")
    _nav(page, "What-if editor")
    for button, status in (("editor_undo", "0 edits applied"), ("editor_redo", "1 edit applied")):
        page.locator(f".st-key-{button} button").click()
        page.get_by_text(status, exact=False).wait_for(timeout=RUN_TIMEOUT_MS)
        _settle(page)
        _no_exception(page, f"editor after {button}")
        picked = page.locator('.st-key-editor_tool_select input[role="combobox"]').input_value()
        assert picked == "list_refunds", f"after {button} the editor shows {picked!r}"
        assert page.get_by_text("Indexed words of list_refunds", exact=False).count() == 1
    _shoot(page, "editor-after-redo")

    json_tab = page.get_by_role("tab", name="JSON")
    json_tab.click()
    _settle(page)
    box = page.locator(".st-key-editor_json textarea")
    box.fill('{"id": "list_refunds", "name": ')
    box.blur()
    page.locator(".st-key-editor_apply_json button").click()
    page.get_by_text("invalid JSON at line 1", exact=False).wait_for(timeout=RUN_TIMEOUT_MS)
    _settle(page)
    assert json_tab.get_attribute("aria-selected") == "true", "the JSON tab stays open"
    assert page.get_by_text("invalid JSON at line 1", exact=False).first.is_visible()
    _shoot(page, "editor-json-error")
    page.get_by_role("button", name="Revert all").click()  # leave no autosave behind
    _settle(page)


def test_catalog_row_click_inspects_that_tool(server: str, page) -> None:
    page.goto(_url(server, "catalog"))
    _settle(page)
    table = page.locator('[data-testid="stDataFrame"]').first
    box = table.bounding_box()
    row_height = 35  # Streamlit's default dataframe row height, header included
    page.mouse.click(box["x"] + 16, box["y"] + row_height * 3 + row_height / 2)  # third row's marker
    page.locator("h4", has_text="update_ticket").wait_for(timeout=RUN_TIMEOUT_MS)
    _settle(page)
    assert page.locator(".st-key-catalog_item input").input_value() == "update_ticket"
    spans = page.locator(".rl-projection .rl-span")
    assert spans.count() > 5 and spans.first.inner_text() == "update_ticket"
    _no_exception(page, "catalog after a row click")
