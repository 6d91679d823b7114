"""The browser verifier's box draw (src/api/static/fairness.js) against the box vectors.

Runs fairness.js under Node (skipped when ``node`` is not on PATH): every case of
tests/vectors/box_draw_v1.json, ticket, cursor and word index, must match, loaded both as
a CommonJS module and as a plain browser script.
"""

from __future__ import annotations

import json

import pytest

from domain.fairness import block_words, first_accepted, rejection_bound
from tests.unit.test_box_draw import BOX_VECTORS, THIRD
from tests.unit.test_fairness_js import needs_node, run_node

DRIVER = r"""
"use strict";
const fs = require("fs");
const vm = require("vm");
const [scriptPath, vectorsPath, third] = process.argv.slice(2);
const F = require(scriptPath);
const sandbox = { crypto: globalThis.crypto };
vm.runInNewContext(fs.readFileSync(scriptPath, "utf8"), sandbox, { filename: scriptPath });
const B = sandbox.UpgraderFairness;

async function main() {
  const doc = JSON.parse(fs.readFileSync(vectorsPath, "utf8"));
  const out = { cases: doc.cases.length, verified: 0, failures: [], rejected: 0,
                blockRejected: 0, extra: {} };
  for (let i = 0; i < doc.cases.length; i++) {
    const c = doc.cases[i];
    const problems = [];
    const api = i % 2 ? F : B;  // half as a module, half as a browser script
    const t = await api.drawTrace(c.serverSeed, c.clientSeed, c.nonce, c.totalTickets);
    if (t.ticket !== c.ticket) problems.push("ticket " + t.ticket);
    if (t.cursor !== c.cursor || t.wordIndex !== c.wordIndex)
      problems.push("at " + t.cursor + "/" + t.wordIndex);
    if (t.cursor || t.wordIndex) out.rejected++;
    if (t.cursor) out.blockRejected++;
    const ticket = await api.draw(c.serverSeed, c.clientSeed, String(c.nonce), c.totalTickets);
    if (ticket !== c.ticket) problems.push("draw(string nonce) " + ticket);
    if (c.totalTickets === 10000) {
      const rolled = await api.roll(c.serverSeed, c.clientSeed, c.nonce);
      if (rolled !== c.ticket) problems.push("roll " + rolled);
    }
    if (problems.length) out.failures.push({ case: i, problems });
    else out.verified++;
  }
  const c0 = doc.cases[0];
  const errors = [];
  for (const space of [0, -1, 2147483649, 1.5, "10", null, 10n]) {
    try { await F.draw(c0.serverSeed, c0.clientSeed, 0, space); errors.push("accepted"); }
    catch (e) { errors.push(e.name); }
  }
  out.extra.errors = errors;
  // Block 0 all at the bound of T = third (rejected): the draw comes from block 1.
  const real = globalThis.crypto.subtle;
  const bound = 2 * Number(third);
  const fake = {
    importKey: (...a) => real.importKey(...a),
    digest: (...a) => real.digest(...a),
    sign: (alg, key, data) => {
      if (!new TextDecoder().decode(data).endsWith(":0")) return real.sign(alg, key, data);
      const view = new DataView(new ArrayBuffer(32));
      for (let w = 0; w < 8; w++) view.setUint32(w * 4, bound + w, false);
      return Promise.resolve(view.buffer);
    },
  };
  const sandbox2 = { crypto: { subtle: fake } };
  vm.runInNewContext(fs.readFileSync(scriptPath, "utf8"), sandbox2, { filename: scriptPath });
  out.extra.skipBlock = await sandbox2.UpgraderFairness.drawTrace(c0.serverSeed, c0.clientSeed,
    c0.nonce, Number(third));
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(3); });
"""


@pytest.fixture(scope="module")
def node_result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_node(tmp_path_factory, DRIVER, BOX_VECTORS, THIRD)


@needs_node
def test_every_box_vector_matches_in_node(node_result: dict) -> None:
    cases = json.loads(BOX_VECTORS.read_text(encoding="ascii"))["cases"]
    assert node_result["failures"] == []
    assert (node_result["cases"], node_result["verified"]) == (len(cases), len(cases))
    rejected = [c for c in cases if (c["cursor"], c["wordIndex"]) != (0, 0)]
    assert node_result["rejected"] == len(rejected) >= 100
    assert node_result["blockRejected"] == sum(1 for c in cases if c["cursor"]) == 4


@needs_node
def test_bad_spaces_are_refused_in_node(node_result: dict) -> None:
    assert node_result["extra"]["errors"] == ["FairnessInputError"] * 7


@needs_node
def test_whole_rejected_block_moves_to_the_next_cursor_in_node(node_result: dict) -> None:
    case = json.loads(BOX_VECTORS.read_text(encoding="ascii"))["cases"][0]
    words = block_words(case["serverSeed"], case["clientSeed"], case["nonce"], 1)
    index = first_accepted(words, rejection_bound(THIRD))
    assert index is not None
    expected = {"ticket": words[index] % THIRD, "cursor": 1, "wordIndex": index}
    assert node_result["extra"]["skipBlock"] == expected
