"""The browser verifier (src/api/static/fairness.js, verifier.html) against the vectors.

Runs fairness.js under Node (skipped when ``node`` is not on PATH): every published
vector case, hash and roll, must match.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from domain.fairness import block_words, first_accepted

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "api" / "static"
FAIRNESS_JS = STATIC / "fairness.js"
VERIFIER_HTML = STATIC / "verifier.html"
VECTORS = ROOT / "tests" / "vectors" / "hmac_sha256_v1.json"
NODE = shutil.which("node")

needs_node = pytest.mark.skipif(
    NODE is None, reason="node is not on PATH: install Node 20+ to test fairness.js"
)

# Loads fairness.js twice: as a CommonJS module (module.exports) and as a plain browser
# script in a fresh context (globalThis.UpgraderFairness, no module, no require).
DRIVER = r"""
"use strict";
const fs = require("fs");
const vm = require("vm");
const [scriptPath, vectorsPath] = process.argv.slice(2);
const F = require(scriptPath);

const sandbox = { crypto: globalThis.crypto };
vm.runInNewContext(fs.readFileSync(scriptPath, "utf8"), sandbox, { filename: scriptPath });
const B = sandbox.UpgraderFairness;

async function main() {
  const doc = JSON.parse(fs.readFileSync(vectorsPath, "utf8"));
  const out = { algorithmKey: doc.algorithmKey, cases: doc.cases.length, verified: 0,
                failed: 0, failures: [], rejectedFirstWord: 0, extra: {} };
  for (let i = 0; i < doc.cases.length; i++) {
    const c = doc.cases[i];
    const problems = [];
    if (!Number.isSafeInteger(c.nonce)) problems.push("nonce not a safe integer");
    const hash = await F.seedHash(c.serverSeed);
    if (hash !== c.serverSeedHash) problems.push("hash " + hash);
    const trace = await F.rollTrace(c.serverSeed, c.clientSeed, c.nonce);
    if (trace.rolledBps !== c.rolledBps) problems.push("roll " + trace.rolledBps);
    if (trace.cursor !== 0 || trace.wordIndex !== 0) out.rejectedFirstWord++;
    const rolled = await F.roll(c.serverSeed, c.clientSeed, String(c.nonce));
    if (rolled !== c.rolledBps) problems.push("roll(string nonce) " + rolled);
    if (problems.length) { out.failed++; out.failures.push({ case: i, problems }); }
    else out.verified++;
  }

  const c0 = doc.cases[0];
  const round = { round: { publicId: "r_1", status: "settled", rolledBps: c0.rolledBps,
    chanceBps: c0.rolledBps + 1, isWin: true,
    fairness: { serverSeedHash: c0.serverSeedHash, clientSeed: c0.clientSeed,
                nonce: c0.nonce, algorithmKey: "hmac_sha256_v1" } } };
  const good = await F.verifyRound(round, c0.serverSeed);
  out.extra.goodRound = [good.ok, good.checks.map((k) => k.claim + ":" + k.ok).join(",")];
  const bad = await B.verifyRound({ serverSeed: c0.serverSeed, clientSeed: c0.clientSeed,
    nonce: c0.nonce, rolledBps: (c0.rolledBps + 1) % 10000, chanceBps: 0, isWin: false });
  out.extra.badRoll = [bad.ok, bad.checks.map((k) => k.claim + ":" + k.ok).join(",")];
  const errors = [];
  for (const input of [
    { serverSeed: "XYZ", clientSeed: "a", nonce: 0 },
    { serverSeed: c0.serverSeed, clientSeed: "", nonce: 0 },
    { serverSeed: c0.serverSeed, clientSeed: "a", nonce: -1 },
    { serverSeed: c0.serverSeed, clientSeed: "a", nonce: 0, algorithmKey: "other_v2" },
    { publicId: "r_2", status: "voided" },
  ]) {
    try { await B.verifyRound(input); errors.push("accepted"); }
    catch (e) { errors.push(e.name); }
  }
  out.extra.errors = errors;
  // Block 0 all rejected (every word 0xffffffff): the roll must come from block 1.
  const real = globalThis.crypto.subtle;
  const fake = {
    importKey: (...a) => real.importKey(...a),
    digest: (...a) => real.digest(...a),
    sign: (alg, key, data) => new TextDecoder().decode(data).endsWith(":0")
      ? Promise.resolve(new Uint8Array(32).fill(255).buffer) : real.sign(alg, key, data),
  };
  const sandbox2 = { crypto: { subtle: fake } };
  vm.runInNewContext(fs.readFileSync(scriptPath, "utf8"), sandbox2, { filename: scriptPath });
  out.extra.skipBlock = await sandbox2.UpgraderFairness.rollTrace(c0.serverSeed, c0.clientSeed,
    c0.nonce);
  out.extra.browserGlobal = typeof B.seedHash + "," + typeof B.roll + "," +
    typeof B.verifyRound;
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(3); });
"""


def run_node(tmp_path_factory: pytest.TempPathFactory, driver: str, *args: object) -> dict:
    """Run a driver script under node with fairness.js and ``args``; its JSON output."""
    assert NODE is not None
    path = tmp_path_factory.mktemp("node") / "driver.js"
    path.write_text(driver, encoding="utf-8")
    completed = subprocess.run(
        [NODE, str(path), str(FAIRNESS_JS), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.fixture(scope="module")
def node_result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_node(tmp_path_factory, DRIVER, VECTORS)


@needs_node
def test_every_vector_case_matches_in_node(node_result: dict) -> None:
    expected = len(json.loads(VECTORS.read_text(encoding="ascii"))["cases"])
    assert expected == 1006
    assert node_result["algorithmKey"] == "hmac_sha256_v1"
    assert node_result["failures"] == []
    assert (node_result["cases"], node_result["verified"], node_result["failed"]) == (
        expected,
        expected,
        0,
    )
    # The file holds cases where the first word is rejected; they must be exercised.
    assert node_result["rejectedFirstWord"] >= 1


@needs_node
def test_verify_round_in_node(node_result: dict) -> None:
    extra = node_result["extra"]
    assert extra["goodRound"] == [True, "serverSeedHash:true,rolledBps:true,isWin:true"]
    assert extra["badRoll"] == [False, "rolledBps:false,isWin:true"]
    assert extra["errors"] == ["FairnessInputError"] * 5
    assert extra["browserGlobal"] == "function,function,function"


@needs_node
def test_whole_rejected_block_moves_to_the_next_cursor(node_result: dict) -> None:
    case = json.loads(VECTORS.read_text(encoding="ascii"))["cases"][0]
    words = block_words(case["serverSeed"], case["clientSeed"], case["nonce"], 1)
    index = first_accepted(words)
    assert index is not None
    expected = {"rolledBps": words[index] % 10000, "cursor": 1, "wordIndex": index}
    assert node_result["extra"]["skipBlock"] == expected


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


def test_page_loads_fairness_js_with_no_inline_code_and_no_urls() -> None:
    html = VERIFIER_HTML.read_text(encoding="utf-8")
    parser = _Scripts()
    parser.feed(html)
    assert [attrs.get("src") for attrs, _ in parser.scripts] == ["fairness.js"]
    assert all(body.strip() == "" for _, body in parser.scripts)
    assert all(attrs.get("type") in (None, "text/javascript") for attrs, _ in parser.scripts)
    assert parser.handlers == []  # no onclick= etc. (blocked by script-src 'self')
    assert '<script src="fairness.js"></script>' in html
    assert "javascript:" not in html.lower()
    assert re.search(r"https?://", html, re.IGNORECASE) is None
    assert re.search(r"https?://", FAIRNESS_JS.read_text(encoding="utf-8")) is None
    for name in ("serverSeed", "clientSeed", "nonce", "serverSeedHash", "rolledBps", "chanceBps"):
        assert f'name="{name}"' in html
    assert 'id="verifier"' in html and 'id="result"' in html


def test_script_uses_no_network_or_modules() -> None:
    source = FAIRNESS_JS.read_text(encoding="utf-8")
    for banned in ("fetch(", "XMLHttpRequest", "import ", "export ", "WebSocket", "eval("):
        assert banned not in source, banned
    assert "getUint32" in source and "crypto" in source


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_page_works_in_a_browser_under_csp() -> None:
    """The page itself, in headless Chromium, served with a strict CSP (no inline script)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: browser test skipped"
    )
    browser_path = _chromium()
    if browser_path is None:
        pytest.skip("no chromium on PATH: browser test skipped")
    case = json.loads(VECTORS.read_text(encoding="ascii"))["cases"][0]
    csp = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'"
    requested: list[str] = []
    errors: list[str] = []

    def serve(route) -> None:
        name = route.request.url.rsplit("/", 1)[1]
        ctype = "text/html" if name.endswith(".html") else "text/javascript"
        route.fulfill(
            status=200,
            body=(STATIC / name).read_bytes(),
            headers={"content-type": ctype, "content-security-policy": csp},
        )

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on(
                "console",
                lambda message: errors.append(message.text) if message.type == "error" else None,
            )
            # localhost is a secure context, so crypto.subtle is available.
            page.route("http://localhost:9/**", serve)
            page.goto("http://localhost:9/verifier.html")
            page.fill("#server-seed", case["serverSeed"])
            page.fill("#client-seed", case["clientSeed"])
            page.fill("#nonce", str(case["nonce"]))
            page.fill("#server-seed-hash", case["serverSeedHash"])
            page.fill("#rolled-bps", str((case["rolledBps"] + 1) % 10000))
            page.click("button[type=submit]")
            page.wait_for_selector("#result h2")
            text = page.inner_text("#result")
            assert "NOT verified: 1 of 2 checks failed" in text
            assert "The server seed hash matches" in text
            assert f"The roll does NOT match: the seeds give {case['rolledBps']}" in text

            page.fill("#rolled-bps", str(case["rolledBps"]))
            page.click("button[type=submit]")
            page.wait_for_function(
                "document.getElementById('result').getAttribute('data-status') === 'ok'"
            )
            assert "Verified: all 2 checks passed" in page.inner_text("#result")
        finally:
            browser.close()
    assert errors == []
    assert requested == ["http://localhost:9/verifier.html", "http://localhost:9/fairness.js"]
