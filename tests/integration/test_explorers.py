"""The API explorers work offline: Swagger UI, ReDoc and ``GET /`` reference only files
the platform serves itself (each answers 200), never another host, and in a real browser
(Debian's Chromium) they render with every request staying on the platform's host and no
error in the console."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from application.platform import Platform
from entrypoints.app import create_app
from tests.support.config import make_config
from tests.support.live import LiveServer

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None  # type: ignore[assignment]

CHROMIUM = Path("/usr/bin/chromium")
PAGES = ["/", "/api/schema", "/api/schema/redoc", "/api/schema/swagger", "/api/schema/wallet"]
REFERENCE = re.compile(r'(?:src|href|spec-url)="([^"]+)"|"url":\s*"([^"]+)"')


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One platform for the module: the explorers read no store, and change nothing."""
    store = tmp_path_factory.mktemp("explorers") / "store.db"
    platform = Platform(make_config(f"sqlite:///{store}"))
    platform.record_configuration()
    try:
        with LiveServer(create_app(platform)) as server:
            yield server
    finally:
        platform.close()


@pytest.fixture
def http(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=30) as client:
        yield client


def references(html: str) -> list[str]:
    """Every URL a page names: scripts, styles, icons, links, the documents it loads."""
    found = [a or b for a, b in REFERENCE.findall(unescape(html))]
    assert found, "no reference found: the pattern no longer matches the pages"
    return found


@pytest.mark.parametrize("path", PAGES)
def test_every_page_references_only_files_the_platform_serves(
    http: httpx.Client, path: str
) -> None:
    page = http.get(path)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "<script>" not in page.text  # no inline script
    for url in references(page.text):
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{path} points off-host: {url}"
        assert url.startswith("/"), url
        if url == "/api/s2s/health":
            continue  # signed: named on / as the health check, not a page asset
        answer = http.get(url)
        assert answer.status_code == 200, f"{path} -> {url}: {answer.status_code}"
        assert answer.content


def test_the_assets_come_from_the_package_and_unknown_ones_are_404(http: httpx.Client) -> None:
    bundle = http.get("/api/schema/assets/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    assert bundle.headers["content-type"].startswith("text/javascript")
    assert len(bundle.content) > 500_000 and b"SwaggerUIBundle" in bundle.content
    redoc = http.get("/api/schema/assets/redoc.standalone.js")
    assert b"cdn.redoc.ly" not in redoc.content  # its one CDN image is replaced
    for name in ("nope.js", "..%2Fapp.py", "explorers.py"):
        missing = http.get(f"/api/schema/assets/{name}")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "NOT_FOUND"


def test_root_points_to_the_docs_the_health_check_and_the_demo(http: httpx.Client) -> None:
    page = http.get("/").text
    for words in ("/api/schema/redoc", "/api/schema/swagger", "/api/s2s/health", "make run"):
        assert words in page
    as_json = http.get("/", headers={"Accept": "application/json"}).json()
    assert as_json["docs"]["API explorer (Swagger UI)"] == "/api/schema/swagger"
    assert as_json["health"] == {"path": "/api/s2s/health", "signed": True}
    for url in as_json["docs"].values():
        assert http.get(url).status_code == 200
    wallet = http.get("/api/schema/wallet-openapi.json").json()
    assert wallet["info"]["title"].startswith("Upgrader wallet contract")


# -- in a real browser -----------------------------------------------------------------

NO_PLAYWRIGHT = pytest.mark.skipif(
    sync_playwright is None,
    reason="the playwright Python package is not installed (pip install playwright)",
)
NO_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's Chromium is not at /usr/bin/chromium (apt-get install -y chromium)",
)

RENDERED = {
    "/api/schema/swagger": (".swagger-ui .info .title", "Upgrader game platform"),
    "/api/schema/redoc": ("h1", "Upgrader game platform"),
    "/api/schema/wallet": ("h1", "Upgrader wallet contract"),
    "/": ("h1", "Upgrader game platform"),
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


@NO_PLAYWRIGHT
@NO_CHROMIUM
@pytest.mark.parametrize("path", list(RENDERED))
def test_in_a_browser_the_page_renders_and_stays_on_the_host(
    page: Page, live: LiveServer, path: str
) -> None:
    requested: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(live.url + path)
    selector, title = RENDERED[path]
    page.locator(selector, has_text=title).first.wait_for(timeout=20_000)
    if path == "/api/schema/swagger":  # the second document, through the selector
        page.select_option("#select", label="Wallet contract (the operator's endpoint)")
        page.locator(".swagger-ui .info .title", has_text="wallet contract").wait_for()
    page.wait_for_load_state("networkidle")
    hosts = {urlsplit(url).netloc for url in requested if not url.startswith(("blob:", "data:"))}
    assert hosts == {urlsplit(live.url).netloc}, requested
    assert problems == []
