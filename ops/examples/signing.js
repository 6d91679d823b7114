// Signing an S2S request to the Upgrader platform (interface 5.1), in Node.js 18+ with
// nothing but the standard library. Copy what you need.
//
//   node ops/examples/signing.js
//       a signed GET /api/s2s/health and POST /api/s2s/launches against $UPGRADER_URL
//       (default http://127.0.0.1:8000, what `make run` serves)
//   node ops/examples/signing.js sign METHOD PATH [BODY [TIMESTAMP]]
//       prints the three headers as JSON (TIMESTAMP defaults to now), e.g. the README's
//       worked example: sign POST /api/s2s/launches '{"playerExternalId":...}' 1767225600
//
// The key comes from $UPGRADER_KEY_ID and $UPGRADER_SECRET (defaults: the demo key).
"use strict";

const crypto = require("node:crypto");

// The canonical string is four lines: the timestamp, the upper-cased method, the path
// exactly as sent (no scheme, host or query), and the hex SHA-256 of the exact body bytes.
function sign(secret, timestamp, method, path, body) {
  const bodyHash = crypto.createHash("sha256").update(body).digest("hex");
  const canonical = [timestamp, method.toUpperCase(), path, bodyHash].join("\n");
  return crypto.createHmac("sha256", secret).update(canonical).digest("hex");
}

function signedHeaders(keyId, secret, method, path, body, timestamp) {
  const ts = String(timestamp ?? Math.floor(Date.now() / 1000));
  return {
    "X-Key-Id": keyId,
    "X-Timestamp": ts,
    "X-Signature": sign(secret, ts, method, path, body),
  };
}

async function call(baseUrl, keyId, secret, method, path, body = "") {
  // Sign the very bytes that are sent: build the body string once, use it twice.
  const headers = signedHeaders(keyId, secret, method, path, Buffer.from(body, "utf8"));
  if (body) headers["Content-Type"] = "application/json";
  const response = await fetch(baseUrl + path, { method, headers, body: body || undefined });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

async function main(argv) {
  const keyId = process.env.UPGRADER_KEY_ID || "demo-key";
  const secret = process.env.UPGRADER_SECRET || "change-me-inbound";
  if (argv[0] === "sign") {
    const [, method, path, body = "", timestamp] = argv;
    const headers = signedHeaders(keyId, secret, method, path, Buffer.from(body, "utf8"), timestamp);
    console.log(JSON.stringify(headers));
    return;
  }
  const baseUrl = process.env.UPGRADER_URL || "http://127.0.0.1:8000";
  console.log(JSON.stringify(await call(baseUrl, keyId, secret, "GET", "/api/s2s/health")));
  const launch = JSON.stringify({ playerExternalId: "player-1", gameKey: "upgrader", target: {} });
  console.log(JSON.stringify(await call(baseUrl, keyId, secret, "POST", "/api/s2s/launches", launch)));
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error.message);
  process.exit(1);
});
