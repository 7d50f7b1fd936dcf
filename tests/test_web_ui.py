"""`multiverse ui`: the web view of a home, in process through Starlette's TestClient (the token,
the pages, the answers written as the CLI writes them, sanitising, paths), and one journey in the
OS's Chromium through Playwright against a real `multiverse ui` child and a serving daemon.

The browser journey skips, saying why, where no Chromium can be found or installed. With
UI_SCREENSHOTS=DIR (`make ui-screenshots`) it saves the three main pages there as PNG.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from app.web import create_app
from multiverse.home import Home
from multiverse.roles import ApprovalStatus
from multiverse.runs import ApprovalBook

from journey import cli, once, serving

TOKEN = "test-token-0123456789"
ORIGIN = {"origin": "http://testserver"}
UNSAFE_LINK = re.compile(r"""(href|src)\s*=\s*["']?\s*(javascript|data|vbscript):""", re.I)
BRIEF_ASSETS = Path(__file__).resolve().parent / "fixtures" / "brief_assets"
CHART_REQUEST = (
    "Write a one-page memo for an investor with a bar chart of total revenue by country."
)
HOSTILE = (
    "# Notes <script>alert('asset')</script>\n\n"
    "Revenue grew. <img src=x onerror=alert(1)> [click](javascript:alert(2)) "
    "[data](data:text/html,<script>alert(3)</script>)\n\n"
    "<script>alert('block')</script>\n"
)


def _assets(home: Home) -> None:
    for path in BRIEF_ASSETS.iterdir():
        shutil.copy(path, home.assets / path.name)


def _proposed(home: Home, text: str = CHART_REQUEST) -> str:
    """A run waiting for its answer (submitted, then the daemon's pass that proposes it)."""
    before = set(os.listdir(home.runs))
    assert cli(home, "submit", text).returncode == 0
    once(home)
    new = sorted(set(os.listdir(home.runs)) - before - {"archive"})
    assert len(new) == 1, new
    return new[0]


def _answers(home: Home, run_id: str) -> list[str]:
    folder = home.run(run_id).answers
    if not folder.is_dir():
        return []
    return [path.read_text(encoding="utf-8") for path in sorted(folder.iterdir())]


@pytest.fixture
def client(home: Home) -> Iterator[TestClient]:
    """The web view of the test's home, holding the token's cookie after a first visit."""
    with TestClient(create_app(home, TOKEN)) as browser:
        assert browser.get(f"/?token={TOKEN}").status_code == 200
        yield browser


def test_every_request_needs_the_token(home: Home) -> None:
    """Without the URL's token (or its cookie) every page, file and answer is 403."""
    run_id = _proposed(home)
    anonymous = TestClient(create_app(home, TOKEN))
    for url in ("/", f"/runs/{run_id}", "/tables/catalog", "/static/htmx.min.js",
                f"/runs/{run_id}/panel", "/?token=wrong"):  # fmt: skip
        assert anonymous.get(url).status_code == 403, url
    posted = anonymous.post(f"/runs/{run_id}/answer", data={"kind": "CONFIRM"}, headers=ORIGIN)
    assert posted.status_code == 403
    assert _answers(home, run_id) == []
    first = anonymous.get(f"/?token={TOKEN}")
    assert first.status_code == 200
    assert "HttpOnly" in first.headers["set-cookie"]
    assert "SameSite=Strict" in first.headers["set-cookie"]
    assert "script-src 'self'" in first.headers["content-security-policy"]
    assert anonymous.get(f"/runs/{run_id}").status_code == 200  # the cookie carries it now


def test_the_pages_show_the_home(home: Home, client: TestClient) -> None:
    """The runs list, a run with its proposal and buttons, and both tables render."""
    _assets(home)
    run_id = _proposed(home)
    listing = client.get("/")
    assert run_id in listing.text
    assert "AWAITING_CONFIRMATION" in listing.text
    assert "your answer to its proposal" in listing.text
    assert "No daemon serves this home" in listing.text
    page = client.get(f"/runs/{run_id}").text
    assert home.run(run_id).feedback.exists()
    assert 'value="CONFIRM"' in page and 'value="MODIFY"' in page and 'value="CANCEL"' in page
    assert '<label for="modify-text">' in page
    assert "/static/htmx.min.js" in page and "//" not in page.split("/static/htmx")[0][-8:]
    assert client.get("/static/htmx.min.js").status_code == 200
    cli(home, "confirm", run_id)
    once(home)
    catalog = client.get("/tables/catalog").text
    assert "revenue_by_country.csv" in catalog and 'class="sortable"' in catalog
    assert client.get("/tables/instructions").status_code == 200
    assert client.get("/tables/secrets").status_code == 404


def test_the_runs_list_filters_as_runs_does(home: Home, client: TestClient) -> None:
    """`status` and `since` filter as `multiverse runs` does; a bad date says the forms."""
    run_id = _proposed(home)
    assert run_id not in client.get("/?status=final").text
    assert run_id in client.get("/?status=open&since=7d").text
    bad = client.get("/?since=someday")
    assert bad.status_code == 400 and "is not a date" in bad.text


def test_confirm_writes_the_answer_the_cli_writes(home: Home, client: TestClient) -> None:
    """Confirm in the page writes the same answer file as `multiverse confirm`."""
    _assets(home)
    by_web, by_cli = _proposed(home), _proposed(home, "Write a memo on the Nordic market.")
    answered = client.post(
        f"/runs/{by_web}/answer", data={"csrf": TOKEN, "kind": "CONFIRM"}, headers=ORIGIN,
        follow_redirects=False,
    )  # fmt: skip
    assert answered.status_code == 303
    assert answered.headers["location"] == f"/runs/{by_web}?said=CONFIRM"
    assert cli(home, "confirm", by_cli).returncode == 0
    assert _answers(home, by_web) == _answers(home, by_cli) != []
    once(home)
    assert "COMPLETED" in client.get(f"/runs/{by_web}/progress").text


def test_modify_takes_its_text_and_refuses_none(home: Home, client: TestClient) -> None:
    """Modify writes its text as `multiverse modify` does; without text it is refused."""
    run_id = _proposed(home)
    empty = client.post(f"/runs/{run_id}/answer", data={"csrf": TOKEN, "kind": "MODIFY"},
                        headers=ORIGIN)  # fmt: skip
    assert empty.status_code == 400 and "say what to change" in empty.text
    assert _answers(home, run_id) == []
    client.post(f"/runs/{run_id}/answer", headers=ORIGIN,
                data={"csrf": TOKEN, "kind": "MODIFY", "text": "Make it two pages"})  # fmt: skip
    [answer] = _answers(home, run_id)
    assert answer.startswith("MODIFY") and "Make it two pages" in answer


def test_an_answer_is_csrf_safe(home: Home, client: TestClient) -> None:
    """An answer without the form token, from another origin, or by GET writes nothing."""
    run_id = _proposed(home)
    url, confirm = f"/runs/{run_id}/answer", {"csrf": TOKEN, "kind": "CONFIRM"}
    assert client.post(url, data={"kind": "CONFIRM"}, headers=ORIGIN).status_code == 403
    other = {"origin": "http://evil.example"}
    assert client.post(url, data=confirm, headers=other).status_code == 403
    assert client.post(url, data=confirm).status_code == 403  # no Origin, no Referer
    assert client.get(url).status_code == 405
    assert _answers(home, run_id) == []


def test_a_refused_answer_says_why(home: Home, client: TestClient) -> None:
    """Retry of a run that did not fail is refused with the CLI's reason, nothing written."""
    run_id = _proposed(home)
    refused = client.post(f"/runs/{run_id}/answer", data={"csrf": TOKEN, "kind": "RETRY"},
                          headers=ORIGIN)  # fmt: skip
    assert refused.status_code == 409 and "FAILED" in refused.text
    assert _answers(home, run_id) == []


def test_no_script_from_an_asset_or_a_deliverable_reaches_the_page(
    home: Home, client: TestClient
) -> None:
    """An asset's and a deliverable's <script>, handlers and javascript: links stay inert."""
    _assets(home)
    (home.assets / "hostile_notes.md").write_text(HOSTILE, encoding="utf-8")
    run_id = _proposed(home)
    cli(home, "confirm", run_id)
    once(home)
    outputs = home.outputs / run_id
    (outputs / "notes.md").write_text(HOSTILE, encoding="utf-8")
    home.run(run_id).messages.write_text(
        home.run(run_id).messages.read_text(encoding="utf-8") + HOSTILE, encoding="utf-8"
    )
    for url in (f"/runs/{run_id}", f"/runs/{run_id}/panel", f"/runs/{run_id}/outputs/notes.md",
                f"/runs/{run_id}/outputs/report.md", "/tables/catalog"):  # fmt: skip
        page = client.get(url).text
        scripts = re.findall(r"<script[^>]*>", page, flags=re.IGNORECASE)
        assert all('src="/static/' in tag for tag in scripts), (url, scripts)
        assert not UNSAFE_LINK.search(page), url
        assert not re.search(r"<img[^>]*onerror", page, flags=re.IGNORECASE), url
    notes = client.get(f"/runs/{run_id}/outputs/notes.md").text
    assert "&lt;script&gt;" in notes and '<a href="#">click</a>' in notes
    chart = client.get(f"/runs/{run_id}/outputs/report-chart-1.svg")
    assert chart.headers["content-type"].startswith("image/svg+xml")
    assert chart.headers["content-security-policy"].startswith("sandbox")
    shown = client.get(f"/runs/{run_id}").text
    assert f'src="/runs/{run_id}/outputs/report-chart-1.svg"' in shown


def test_only_the_runs_outputs_are_served(home: Home, client: TestClient, tmp_path: Path) -> None:
    """Traversal, a link out of the home, a hidden file or a bad run id are refused (404)."""
    run_id = _proposed(home)
    outputs = home.outputs / run_id
    outputs.mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret", encoding="utf-8")
    (outputs / "leak.txt").symlink_to(secret)
    (outputs / ".hidden.md").write_text("hidden", encoding="utf-8")
    (outputs / "ok.txt").write_text("fine", encoding="utf-8")
    assert client.get(f"/runs/{run_id}/outputs/ok.txt").text == "fine"
    for name in ("..%2F..%2Fdb%2Fprocess_runs.md", "%2e%2e/%2e%2e/runtime-mapping.yaml",
                 "leak.txt", ".hidden.md", "nothing.md"):  # fmt: skip
        answer = client.get(f"/runs/{run_id}/outputs/{name}")
        assert answer.status_code == 404, name
        assert "secret" not in answer.text
    assert client.get("/runs/..%2F..%2Fetc/outputs/passwd").status_code == 404
    assert client.get("/runs/not-a-run").status_code == 404


def test_a_live_part_is_sent_again_only_when_it_changed(home: Home, client: TestClient) -> None:
    """The polled panel answers 204 for the version the page has, and the new one after a change."""
    run_id = _proposed(home)
    first = client.get(f"/runs/{run_id}/panel")
    version = re.search(r'"v": "([0-9a-f]+)"', first.text)
    assert version is not None
    assert client.get(f"/runs/{run_id}/panel?v={version[1]}").status_code == 204
    cli(home, "confirm", run_id)
    once(home)
    assert client.get(f"/runs/{run_id}/panel?v={version[1]}").status_code == 200


def test_an_approval_is_answered_as_approve_answers_it(home: Home, client: TestClient) -> None:
    """An action waiting for approval shows Approve and Deny; Approve records it approved."""
    run_id = _proposed(home)
    book = ApprovalBook(home.run(run_id).root)
    asked = book.request(run_id, "P1-S01-T01", "run_shell_command", {"command": "ls"}, 3600)
    page = client.get(f"/runs/{run_id}").text
    assert asked.id in page and 'value="APPROVE"' in page and 'value="DENY"' in page
    done = client.post(f"/runs/{run_id}/approval", headers=ORIGIN,
                       data={"csrf": TOKEN, "approval_id": asked.id, "decision": "APPROVE"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303
    [record] = book.all()
    assert record.status is ApprovalStatus.APPROVED


def test_cancel_and_fork_go_through_the_cli_functions(home: Home, client: TestClient) -> None:
    """Cancel writes `multiverse cancel`'s answer; Fork of a final run makes a new run."""
    _assets(home)
    run_id = _proposed(home)
    client.post(f"/runs/{run_id}/answer", data={"csrf": TOKEN, "kind": "CANCEL"}, headers=ORIGIN)
    assert [answer.split()[0] for answer in _answers(home, run_id)] == ["CANCEL"]
    once(home)
    page = client.get(f"/runs/{run_id}").text
    assert "CANCELLED" in page and 'value="CONFIRM"' not in page
    done = _proposed(home, "Write a memo on the Nordic market.")
    cli(home, "confirm", done)
    once(home)
    forked = client.post(f"/runs/{done}/fork", data={"csrf": TOKEN, "step": "P3"},
                         headers=ORIGIN, follow_redirects=False)  # fmt: skip
    assert forked.status_code == 303, forked.text
    new = forked.headers["location"].split("/")[2].split("?")[0]
    assert new != done and home.run(new).root.is_dir()
    assert f"forked from {done} at P3" in client.get(forked.headers["location"]).text


def test_other_commands_do_not_load_the_web_view() -> None:
    """Loading the CLI (every command but `ui`) imports neither Starlette nor uvicorn."""
    probe = "import sys, app.cli; print(sorted({'starlette', 'uvicorn'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# -- the journey in a real browser ------------------------------------------------------------


def chromium() -> str | None:
    """The OS's Chromium; installed from the OS packages when missing and we may (root, apt)."""
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    found = next((shutil.which(name) for name in names if shutil.which(name)), None)
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        if subprocess.run(command, env=env, capture_output=True, timeout=600).returncode:
            return None
    return shutil.which("chromium")


@pytest.fixture
def browser_path() -> str:
    """Chromium's path, or a skip saying why there is none."""
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    path = chromium()
    if path is None:
        message = ("no Chromium here (chromium not on PATH, and it cannot be installed with "
                   "apt-get: not root or no apt)")  # fmt: skip
        if os.environ.get("MULTIVERSE_REQUIRE_BROWSER"):  # CI installs it first (.ci/run)
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def ui_url(home: Home) -> Iterator[str]:
    """A real `multiverse ui --port 0` child serving the home; its printed URL."""
    child = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "ui", "--port", "0", "--home", str(home.root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        assert found, (line, child.stderr.read() if child.poll() is not None else "")
        yield found[0]
    finally:
        child.terminate()
        child.wait(timeout=30)


def test_a_run_from_proposal_to_report_in_a_browser(
    home: Home, browser_path: str, ui_url: str
) -> None:
    """In Chromium: the proposal shows, Confirm is clicked, the run completes live, and the
    report shows its chart."""
    from playwright.sync_api import expect, sync_playwright

    shots = os.environ.get("UI_SCREENSHOTS")
    _assets(home)
    with serving(home), sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(ui_url)
        assert cli(home, "submit", CHART_REQUEST).returncode == 0
        link = page.locator("table.runs a").first
        expect(link).to_be_visible(timeout=30_000)  # the live list shows the new run
        expect(page.locator("table.runs")).to_contain_text("AWAITING_CONFIRMATION", timeout=60_000)
        if shots:
            page.screenshot(path=f"{shots}/ui-runs.png", full_page=True)
        link.click()
        expect(page.locator("#proposal-title")).to_be_visible()
        page.get_by_role("button", name="Confirm").click()
        expect(page.locator(".said")).to_contain_text("Confirmed")
        summary = page.locator("#progress-live .summary")
        expect(summary).to_contain_text("COMPLETED", timeout=120_000)
        chart = page.locator(".report img").first
        expect(chart).to_be_visible(timeout=10_000)
        assert chart.evaluate("img => img.complete && img.naturalWidth > 0")
        if shots:
            page.screenshot(path=f"{shots}/ui-run.png")
            page.goto(ui_url.split("?")[0] + "tables/catalog")
            page.get_by_role("button", name="file_path").click()
            page.screenshot(path=f"{shots}/ui-catalog.png")
        browser.close()


def test_modify_an_approval_a_refusal_and_inert_scripts_in_a_browser(
    home: Home, browser_path: str, ui_url: str
) -> None:
    """In Chromium: a URL without the token is refused; Modify through the form brings a
    revised proposal; an action waiting for approval is approved from the page; an asset's
    <script> never runs (no dialog opens on any page)."""
    from playwright.sync_api import expect, sync_playwright

    _assets(home)
    (home.assets / "hostile_notes.md").write_text(HOSTILE, encoding="utf-8")
    dialogs: list[str] = []
    with serving(home), sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        anonymous = browser.new_page()
        refused = anonymous.goto(ui_url.split("?")[0])
        assert refused is not None and refused.status == 403
        page = browser.new_page(viewport={"width": 420, "height": 900})  # a phone's width
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(ui_url)
        assert cli(home, "submit", CHART_REQUEST).returncode == 0
        expect(page.locator("table.runs")).to_contain_text("AWAITING_CONFIRMATION", timeout=60_000)
        page.locator("table.runs a").first.click()
        run_id = page.url.split("/runs/")[1].split("?")[0]
        page.get_by_label("What to change").fill("Leave out the chart; one page only.")
        page.get_by_role("button", name="Modify").click()
        expect(page.locator(".said")).to_contain_text("revised proposal")
        feedback = home.run(run_id).feedback
        expect(page.locator("#panel-live")).to_contain_text("Leave out the chart", timeout=60_000)
        assert "Leave out the chart" in feedback.read_text(encoding="utf-8")
        book = ApprovalBook(home.run(run_id).root)
        asked = book.request(run_id, "P1-S01-T01", "run_shell_command", {"command": "ls"}, 3600)
        page.reload()
        page.locator(f"#approve-{asked.id}").click()
        expect(page.locator(".said")).to_contain_text("Approved")
        assert [record.status for record in book.all()] == [ApprovalStatus.APPROVED]
        outputs = home.outputs / run_id
        outputs.mkdir(parents=True, exist_ok=True)
        (outputs / "notes.md").write_text(HOSTILE, encoding="utf-8")
        messages = home.run(run_id).messages
        messages.write_text(messages.read_text(encoding="utf-8") + HOSTILE, encoding="utf-8")
        page.goto(ui_url.split("?")[0] + f"runs/{run_id}/outputs/notes.md")
        expect(page.locator("body")).to_contain_text("<script>alert('asset')</script>")
        page.goto(ui_url.split("?")[0] + f"runs/{run_id}")
        expect(page.locator("body")).to_contain_text("<script>alert('block')</script>")
        page.get_by_role("link", name="click").first.click()  # a javascript: link, made inert
        browser.close()
    assert dialogs == []


def _luminance(colour: str) -> float:
    red, green, blue = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def test_every_text_colour_has_aa_contrast_on_its_background() -> None:
    """WCAG 2 contrast of the stylesheet's text on its backgrounds: at least 4.5:1 (AA)."""
    css = (Path(__file__).resolve().parents[1] / "app" / "web" / "static" / "app.css").read_text()
    colours = dict(re.findall(r"--(\w+):\s*(#[0-9a-fA-F]{6})", css))
    pairs = [("ink", "bg"), ("muted", "bg"), ("muted", "soft"), ("link", "bg"), ("link", "soft"),
             ("ok", "okbg"), ("bad", "badbg"), ("wait", "waitbg"), ("run", "runbg"),
             ("bad", "bg")]  # fmt: skip
    for text, back in pairs:
        high, low = sorted((_luminance(colours[text]), _luminance(colours[back])), reverse=True)
        assert (high + 0.05) / (low + 0.05) >= 4.5, (text, back)
    assert "button.primary { background: #1d4ed8; border-color: #1d4ed8; color: #fff; }" in css
    assert (_luminance("#ffffff") + 0.05) / (_luminance("#1d4ed8") + 0.05) >= 4.5
