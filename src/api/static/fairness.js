/*
 * Upgrader provable fairness, algorithm hmac_sha256_v1 (decisions section 3).
 *
 * A plain script: no modules, no build step, no dependencies, no network.
 * Browser: <script src="fairness.js"></script> exposes window.UpgraderFairness and,
 * when the page has a <form id="verifier"> or <form id="box-verifier">, wires it up
 * (verifier.html; no inline
 * script, so it works under Content-Security-Policy script-src 'self').
 * Node 20: require("./fairness.js") (or load it as a script) uses globalThis.crypto.
 *
 * For cursor i = 0, 1, 2, ...: h = HMAC_SHA256(key = serverSeed as ASCII,
 * msg = clientSeed + ":" + nonce + ":" + i), read as eight big-endian u32 words. The
 * first word u < 4294960000 gives rolledBps = u % 10000.
 * serverSeedHash = lowercase hex sha256(serverSeed as ASCII).
 *
 * The box draw (decisions section 10) is the same over any space T = totalTickets in
 * 1..2^31: the first word u < floor(2^32 / T) * T gives ticket = u % T (drawTrace, draw);
 * the roll is the draw over 10000. A box round of K boxes draws with K consecutive
 * nonces from its first one, and each box's item is the one whose ticket range holds its
 * ticket (drawReels, verifyBoxDraw; the page's <form id="box-verifier">, wireBoxPage).
 *
 * Everything is async (WebCrypto). Only integer-safe math: u32 words come from
 * DataView.getUint32(offset, false), all below 2^32, and the bound 2^32 - (2^32 % T) is
 * exact in a double (no BigInt needed).
 */
(function (root) {
  "use strict";

  var ALGORITHM_KEY = "hmac_sha256_v1";
  var REJECTION_BOUND = 4294960000;
  var WORDS_PER_BLOCK = 8;
  var ROLL_SPACE = 10000;
  var WORD_SPACE = 4294967296;
  var MAX_DRAW_SPACE = 2147483648;
  var SERVER_SEED = /^[0-9a-f]{64}$/;
  var HEX64 = /^[0-9a-fA-F]{64}$/;
  var CLIENT_SEED = /^[\x20-\x7e]{1,64}$/;
  var DIGITS = /^[0-9]+$/;

  /** Malformed input (the CLI's exit 2): nothing can be verified. */
  function FairnessInputError(message) {
    var error = new Error(message);
    error.name = "FairnessInputError";
    return error;
  }

  function subtle() {
    var c = root && root.crypto;
    if ((!c || !c.subtle) && typeof require === "function") {
      try {
        c = require("crypto").webcrypto;
      } catch (ignored) {
        c = null;
      }
    }
    if (!c || !c.subtle) {
      throw new Error(
        "WebCrypto (crypto.subtle) is not available here. Open the page from disk, " +
          "over HTTPS, or from localhost."
      );
    }
    return c.subtle;
  }

  function ascii(text) {
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) {
      var code = text.charCodeAt(i);
      if (code > 0x7e) {
        throw FairnessInputError("text must be ASCII");
      }
      bytes[i] = code;
    }
    return bytes;
  }

  function hex(buffer) {
    var bytes = new Uint8Array(buffer);
    var out = "";
    for (var i = 0; i < bytes.length; i++) {
      out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    }
    return out;
  }

  function checkServerSeed(serverSeed) {
    if (typeof serverSeed !== "string" || !SERVER_SEED.test(serverSeed)) {
      throw FairnessInputError("server seed must be 64 lowercase hex characters");
    }
    return serverSeed;
  }

  function checkClientSeed(clientSeed) {
    if (typeof clientSeed !== "string" || !CLIENT_SEED.test(clientSeed)) {
      throw FairnessInputError("client seed must be 1 to 64 printable ASCII characters");
    }
    return clientSeed;
  }

  /** The nonce as canonical decimal text (a safe integer, a digit string or a BigInt). */
  function nonceText(nonce) {
    if (typeof nonce === "bigint") {
      if (nonce < 0) {
        throw FairnessInputError("nonce must be a non-negative integer");
      }
      return nonce.toString();
    }
    if (typeof nonce === "number") {
      if (!Number.isSafeInteger(nonce) || nonce < 0) {
        throw FairnessInputError(
          "nonce must be a non-negative integer (pass larger ones as a digit string)"
        );
      }
      return String(nonce);
    }
    if (typeof nonce === "string" && DIGITS.test(nonce)) {
      return nonce.replace(/^0+(?=[0-9])/, "");
    }
    throw FairnessInputError("nonce must be a non-negative decimal integer");
  }

  function intIn(value, low, high, name) {
    var n = value;
    if (typeof n === "string") {
      if (!DIGITS.test(n) || n.length > 16) {
        throw FairnessInputError(name + " must be a whole number in " + low + ".." + high);
      }
      n = Number(n);
    }
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < low || n > high) {
      throw FairnessInputError(name + " must be a whole number in " + low + ".." + high);
    }
    return n;
  }

  /** serverSeedHash: lowercase hex SHA-256 of the server seed as ASCII. */
  function seedHash(serverSeed) {
    return Promise.resolve().then(function () {
      checkServerSeed(serverSeed);
      return subtle().digest("SHA-256", ascii(serverSeed));
    }).then(hex);
  }

  function checkSpace(totalTickets) {
    if (
      typeof totalTickets !== "number" ||
      !Number.isSafeInteger(totalTickets) ||
      totalTickets < 1 ||
      totalTickets > MAX_DRAW_SPACE
    ) {
      throw FairnessInputError("totalTickets must be a whole number in 1..2147483648");
    }
    return totalTickets;
  }

  /**
   * The draw over 0..totalTickets-1 with where it came from: {ticket, cursor, wordIndex}.
   * The first word below floor(2^32 / totalTickets) * totalTickets gives the ticket.
   */
  function drawTrace(serverSeed, clientSeed, nonce, totalTickets) {
    var api;
    var prefix;
    var bound;
    return Promise.resolve()
      .then(function () {
        checkServerSeed(serverSeed);
        checkClientSeed(clientSeed);
        bound = WORD_SPACE - (WORD_SPACE % checkSpace(totalTickets));
        prefix = clientSeed + ":" + nonceText(nonce) + ":";
        api = subtle();
        return api.importKey(
          "raw",
          ascii(serverSeed),
          { name: "HMAC", hash: "SHA-256" },
          false,
          ["sign"]
        );
      })
      .then(function (key) {
        function block(cursor) {
          return api.sign("HMAC", key, ascii(prefix + cursor)).then(function (digest) {
            var view = new DataView(digest);
            for (var index = 0; index < WORDS_PER_BLOCK; index++) {
              var word = view.getUint32(index * 4, false);
              if (word < bound) {
                return { ticket: word % totalTickets, cursor: cursor, wordIndex: index };
              }
            }
            return block(cursor + 1);
          });
        }
        return block(0);
      });
  }

  /** The ticket in 0..totalTickets-1 for (serverSeed, clientSeed, nonce). */
  function draw(serverSeed, clientSeed, nonce, totalTickets) {
    return drawTrace(serverSeed, clientSeed, nonce, totalTickets).then(function (trace) {
      return trace.ticket;
    });
  }

  /** The roll with where it came from: {rolledBps, cursor, wordIndex}. */
  function rollTrace(serverSeed, clientSeed, nonce) {
    return drawTrace(serverSeed, clientSeed, nonce, ROLL_SPACE).then(function (trace) {
      return { rolledBps: trace.ticket, cursor: trace.cursor, wordIndex: trace.wordIndex };
    });
  }

  /** rolledBps in 0..9999 for (serverSeed, clientSeed, nonce). */
  function roll(serverSeed, clientSeed, nonce) {
    return rollTrace(serverSeed, clientSeed, nonce).then(function (trace) {
      return trace.rolledBps;
    });
  }

  function isWin(rolledBps, chanceBps) {
    return rolledBps < chanceBps;
  }

  function present(value) {
    return value !== undefined && value !== null && value !== "";
  }

  /**
   * Flatten the input: claims {serverSeed, clientSeed, nonce, serverSeedHash?, rolledBps?,
   * chanceBps?, isWin?, algorithmKey?}, or a round as the API returns it (also a play
   * answer {round: {...}}) with the revealed server seed as the second argument.
   */
  function claimsOf(input, serverSeed) {
    if (!input || typeof input !== "object") {
      throw FairnessInputError("nothing to verify");
    }
    if (input.round && typeof input.round === "object") {
      input = input.round;
    }
    var claims = {};
    var fairness = input.fairness;
    if (fairness && typeof fairness === "object") {
      if (!present(fairness.algorithmKey)) {
        throw FairnessInputError("round fairness has no algorithmKey");
      }
      claims.algorithmKey = fairness.algorithmKey;
      claims.clientSeed = fairness.clientSeed;
      claims.nonce = fairness.nonce;
      claims.serverSeedHash = fairness.serverSeedHash;
      claims.serverSeed = input.serverSeed;
      claims.publicId = input.publicId;
    } else if ("publicId" in input || "status" in input) {
      throw FairnessInputError(
        "round " + (input.publicId || "?") + " has no fairness data (a voided round has no roll)"
      );
    } else {
      claims.algorithmKey = input.algorithmKey;
      claims.clientSeed = input.clientSeed;
      claims.nonce = input.nonce;
      claims.serverSeedHash = input.serverSeedHash;
      claims.serverSeed = input.serverSeed;
    }
    claims.rolledBps = input.rolledBps;
    claims.chanceBps = input.chanceBps;
    claims.isWin = input.isWin;
    if (present(serverSeed)) {
      claims.serverSeed = serverSeed;
    }
    if (present(claims.algorithmKey) && claims.algorithmKey !== ALGORITHM_KEY) {
      throw FairnessInputError(
        "unsupported algorithmKey " + JSON.stringify(claims.algorithmKey) +
          ": this verifier knows only " + ALGORITHM_KEY
      );
    }
    if (!present(claims.serverSeed)) {
      throw FairnessInputError("the revealed server seed is required");
    }
    checkServerSeed(claims.serverSeed);
    checkClientSeed(claims.clientSeed);
    if (!present(claims.nonce)) {
      throw FairnessInputError("the nonce is required");
    }
    claims.nonce = nonceText(claims.nonce);
    if (present(claims.serverSeedHash)) {
      if (typeof claims.serverSeedHash !== "string" || !HEX64.test(claims.serverSeedHash)) {
        throw FairnessInputError("server seed hash must be 64 hex characters");
      }
      claims.serverSeedHash = claims.serverSeedHash.toLowerCase();
    } else {
      claims.serverSeedHash = null;
    }
    claims.rolledBps = present(claims.rolledBps)
      ? intIn(claims.rolledBps, 0, ROLL_SPACE - 1, "rolled bps")
      : null;
    claims.chanceBps = present(claims.chanceBps)
      ? intIn(claims.chanceBps, 0, ROLL_SPACE, "chance bps")
      : null;
    if (present(claims.isWin)) {
      if (typeof claims.isWin !== "boolean") {
        throw FairnessInputError("isWin must be true or false");
      }
      if (claims.chanceBps === null) {
        throw FairnessInputError("an isWin claim needs the chance");
      }
    } else {
      claims.isWin = null;
    }
    return claims;
  }

  /**
   * Recompute and check every claim given. Resolves to {ok, algorithmKey, serverSeedHash,
   * rolledBps, cursor, wordIndex, chanceBps, isWin, checks: [{claim, ok, claimed,
   * recomputed}]}; rejects with a FairnessInputError on malformed input.
   */
  function verifyRound(input, serverSeed) {
    var claims;
    var result;
    return Promise.resolve()
      .then(function () {
        claims = claimsOf(input, serverSeed);
        return seedHash(claims.serverSeed);
      })
      .then(function (hash) {
        result = {
          ok: true,
          algorithmKey: ALGORITHM_KEY,
          publicId: claims.publicId || null,
          clientSeed: claims.clientSeed,
          nonce: claims.nonce,
          serverSeedHash: hash,
          rolledBps: null,
          cursor: null,
          wordIndex: null,
          chanceBps: claims.chanceBps,
          isWin: null,
          checks: []
        };
        return rollTrace(claims.serverSeed, claims.clientSeed, claims.nonce);
      })
      .then(function (trace) {
        result.rolledBps = trace.rolledBps;
        result.cursor = trace.cursor;
        result.wordIndex = trace.wordIndex;
        if (claims.chanceBps !== null) {
          result.isWin = isWin(trace.rolledBps, claims.chanceBps);
        }
        function check(claim, claimed, recomputed) {
          var ok = claimed === recomputed;
          result.checks.push({ claim: claim, ok: ok, claimed: claimed, recomputed: recomputed });
          result.ok = result.ok && ok;
        }
        if (claims.serverSeedHash !== null) {
          check("serverSeedHash", claims.serverSeedHash, result.serverSeedHash);
        }
        if (claims.rolledBps !== null) {
          check("rolledBps", claims.rolledBps, result.rolledBps);
        }
        if (claims.isWin !== null) {
          check("isWin", claims.isWin, result.isWin);
        }
        return result;
      });
  }

  /* ---- box draws (decisions section 10) ------------------------------------------
   * A box round of K boxes uses K consecutive nonces from its first one; box k draws a
   * ticket with nonce first + k over T = totalTickets (drawTrace), and its item is the
   * one whose inclusive ticket range [ticketFrom, ticketTo] holds the ticket. Ranges are
   * in table order, the first from ticket 0, each starting where the previous one ended.
   */

  var MAX_BOXES = 100;
  var RANGE_LINE = /^\s*([0-9]+)\s*[:=]?\s+([0-9]+)\s*(?:-|\.\.|\s)\s*([0-9]+)\s*$/;

  /** intIn for a value typed by hand: surrounding spaces are not part of the number. */
  function wholeNumber(value, low, high, name) {
    return intIn(typeof value === "string" ? value.trim() : value, low, high, name);
  }

  /**
   * A table from ranges [{itemId, ticketFrom, ticketTo}] in table order: checked to start
   * at 0 and to be contiguous, at most 2^31 tickets. Returns {totalTickets, ranges}.
   */
  function tableOf(ranges) {
    if (!Array.isArray(ranges) || !ranges.length) {
      throw FairnessInputError("the box needs at least one item with its ticket range");
    }
    var next = 0;
    var out = [];
    for (var i = 0; i < ranges.length; i++) {
      var r = ranges[i] || {};
      var where = "item " + (i + 1);
      var itemId = wholeNumber(r.itemId, 0, Number.MAX_SAFE_INTEGER, where + ": itemId");
      var from = wholeNumber(r.ticketFrom, 0, MAX_DRAW_SPACE - 1, where + ": ticketFrom");
      var to = wholeNumber(r.ticketTo, 0, MAX_DRAW_SPACE - 1, where + ": ticketTo");
      if (from !== next) {
        throw FairnessInputError(
          where + " (itemId " + itemId + ") starts at ticket " + from + ", expected " + next +
            " (ranges start at 0 and follow each other in table order)"
        );
      }
      if (to < from) {
        throw FairnessInputError(where + " (itemId " + itemId + ") ends before it starts");
      }
      out.push({ itemId: itemId, ticketFrom: from, ticketTo: to });
      next = to + 1;
    }
    return { totalTickets: next, ranges: out };
  }

  function isId(value) {
    return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
  }

  /**
   * A box version as the catalogue answers it carries what its oddsHash commits to:
   * table.oddsHash (the hash it shows) and table.commitment ({boxId, boxVersionId,
   * priceMinor, items: [[itemId, weight], ...]}, the weights from the ranges), kept when
   * the document has them.
   */
  function commitmentOf(doc, table) {
    if (typeof doc.oddsHash === "string" && HEX64.test(doc.oddsHash)) {
      table.oddsHash = doc.oddsHash.toLowerCase();
    }
    if (isId(doc.boxId) && isId(doc.boxVersionId) && isId(doc.priceMinor)) {
      table.commitment = {
        boxId: doc.boxId,
        boxVersionId: doc.boxVersionId,
        priceMinor: doc.priceMinor,
        items: table.ranges.map(function (r) {
          return [r.itemId, r.ticketTo - r.ticketFrom + 1];
        })
      };
      table.currency = typeof doc.currency === "string" ? doc.currency : null;
    }
  }

  /**
   * oddsHash (decisions section 10): lowercase hex SHA-256 of the compact JSON
   * {"boxId":B,"boxVersionId":V,"priceMinor":P,"items":[[itemId,weight],...]}.
   */
  function oddsHash(commitment) {
    return Promise.resolve().then(function () {
      var text = JSON.stringify({
        boxId: commitment.boxId,
        boxVersionId: commitment.boxVersionId,
        priceMinor: commitment.priceMinor,
        items: commitment.items
      });
      return subtle().digest("SHA-256", ascii(text));
    }).then(hex);
  }

  /**
   * The box's table from what a player can paste: a box version as the catalogue answers
   * it ({items: [{itemId, ticketFrom, ticketTo}, ...], totalTickets?}, or a list of those
   * items, or {box: {...}}), or lines "ITEM FROM-TO" (e.g. "101 0-9"). A given
   * totalTickets must equal the ranges' total.
   */
  function parseTable(text) {
    var trimmed = String(text || "").trim();
    if (!trimmed) {
      throw FairnessInputError("give the box's ticket ranges or its total tickets");
    }
    if (trimmed.charAt(0) === "{" || trimmed.charAt(0) === "[") {
      var doc;
      try {
        doc = JSON.parse(trimmed);
      } catch (error) {
        throw FairnessInputError("the ticket ranges are not valid JSON");
      }
      if (doc && doc.box && typeof doc.box === "object" && doc.box.items) {
        doc = doc.box;
      }
      var items = Array.isArray(doc) ? doc : doc && doc.items;
      var table = tableOf(items);
      if (doc && !Array.isArray(doc) && doc.totalTickets !== undefined &&
          doc.totalTickets !== table.totalTickets) {
        throw FairnessInputError(
          "totalTickets says " + doc.totalTickets + " but the ranges hold " + table.totalTickets
        );
      }
      if (doc && !Array.isArray(doc)) {
        commitmentOf(doc, table);
      }
      return table;
    }
    var ranges = [];
    var lines = trimmed.split(/\r?\n/);
    for (var i = 0; i < lines.length; i++) {
      if (!lines[i].trim()) {
        continue;
      }
      var match = RANGE_LINE.exec(lines[i]);
      if (!match) {
        throw FairnessInputError(
          "line " + (i + 1) + " is not ITEM FROM-TO (for example: 101 0-9): " + lines[i].trim()
        );
      }
      ranges.push({ itemId: match[1], ticketFrom: match[2], ticketTo: match[3] });
    }
    return tableOf(ranges);
  }

  /** The range of the table that holds the ticket (binary search). */
  function rangeOf(table, ticket) {
    var low = 0;
    var high = table.ranges.length - 1;
    while (low < high) {
      var mid = (low + high) >> 1;
      if (table.ranges[mid].ticketTo < ticket) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return table.ranges[low];
  }

  /** The nonce of box k as decimal text: first + k (BigInt beyond 2^53). */
  function nonceOf(first, k) {
    if (first.length < 16) {
      return String(Number(first) + k);
    }
    return (BigInt(first) + BigInt(k)).toString();
  }

  function firstNonce(nonce) {
    var text = typeof nonce === "number" ? String(nonce) : String(nonce || "").trim();
    if (!DIGITS.test(text)) {
      throw FairnessInputError("the first nonce must be a non-negative whole number");
    }
    return text.replace(/^0+(?=[0-9])/, "");
  }

  /**
   * The reels of a round: resolves to [{box, nonce, ticket, cursor, wordIndex,
   * totalTickets, itemId, ticketFrom, ticketTo}] (item fields null without a table).
   * ``space`` is a table (parseTable, tableOf) or a total number of tickets.
   */
  function drawReels(serverSeed, clientSeed, nonce, count, space) {
    return Promise.resolve().then(function () {
      var first = firstNonce(nonce);
      var boxes = wholeNumber(count, 1, MAX_BOXES, "the number of boxes");
      var table = space && typeof space === "object" ? space : null;
      var total = table
        ? table.totalTickets
        : wholeNumber(space, 1, MAX_DRAW_SPACE, "total tickets");
      var reels = [];
      function one(k) {
        if (k === boxes) {
          return reels;
        }
        var n = nonceOf(first, k);
        return drawTrace(serverSeed, clientSeed, n, total).then(function (trace) {
          var held = table ? rangeOf(table, trace.ticket) : null;
          reels.push({
            box: k + 1,
            nonce: n,
            ticket: trace.ticket,
            cursor: trace.cursor,
            wordIndex: trace.wordIndex,
            totalTickets: total,
            itemId: held ? held.itemId : null,
            ticketFrom: held ? held.ticketFrom : null,
            ticketTo: held ? held.ticketTo : null
          });
          return one(k + 1);
        });
      }
      return one(0);
    });
  }

  function claimList(value, name) {
    var text = String(value === undefined || value === null ? "" : value).trim();
    if (!text) {
      return null;
    }
    return text.split(",").map(function (part) {
      return wholeNumber(part, 0, Number.MAX_SAFE_INTEGER, name);
    });
  }

  /**
   * Recompute a box round and check the claims given. Input: {serverSeed, clientSeed,
   * nonce (the first), count, ranges (text for parseTable) or totalTickets,
   * serverSeedHash?, tickets? and items? (comma lists, one per box)}. Resolves to
   * {ok, serverSeedHash, totalTickets, reels, checks: [{claim, ok, claimed, recomputed}]}.
   */
  function verifyBoxDraw(input) {
    var table;
    var tickets;
    var items;
    var nonces;
    var claimedOdds;
    var count;
    var result = { ok: true, checks: [], notes: [] };
    return Promise.resolve()
      .then(function () {
        var rangesText = String(input.ranges || "").trim();
        table = rangesText ? parseTable(rangesText) : null;
        var total = String(input.totalTickets === undefined ? "" : input.totalTickets).trim();
        if (table && total && Number(total) !== table.totalTickets) {
          throw FairnessInputError(
            "total tickets " + total + " differs from the ranges' " + table.totalTickets
          );
        }
        if (!table && !total) {
          throw FairnessInputError("give the box's ticket ranges or its total tickets");
        }
        tickets = claimList(input.tickets, "a claimed ticket");
        items = claimList(input.items, "a claimed item id");
        nonces = nonceList(input.nonces);
        var odds = String(input.oddsHash || "").trim();
        if (odds && !HEX64.test(odds)) {
          throw FairnessInputError("the oddsHash must be 64 hex characters");
        }
        claimedOdds = odds ? odds.toLowerCase() : null;
        if (items && !table) {
          throw FairnessInputError("items can only be checked with the box's ticket ranges");
        }
        var given = String(input.count === undefined ? "" : input.count).trim();
        count = given ? wholeNumber(given, 1, MAX_BOXES, "the number of boxes")
          : (tickets || items || [0]).length;
        [["tickets", tickets], ["items", items], ["nonces", nonces]].forEach(function (pair) {
          if (pair[1] && pair[1].length !== count) {
            throw FairnessInputError(
              pair[1].length + " " + pair[0] + " given for " + count + " boxes (one per box)"
            );
          }
        });
        var hash = String(input.serverSeedHash || "").trim();
        if (hash && !/^[0-9a-fA-F]{64}$/.test(hash)) {
          throw FairnessInputError("server seed hash must be 64 hex characters");
        }
        result.claimedHash = hash ? hash.toLowerCase() : null;
        return seedHash(input.serverSeed);
      })
      .then(function (hash) {
        result.serverSeedHash = hash;
        return drawReels(input.serverSeed, input.clientSeed, input.nonce, count,
          table || input.totalTickets);
      })
      .then(function (reels) {
        result.reels = reels;
        result.totalTickets = reels[0].totalTickets;
        function check(claim, claimed, recomputed) {
          var ok = claimed === recomputed;
          result.checks.push({ claim: claim, ok: ok, claimed: claimed, recomputed: recomputed });
          result.ok = result.ok && ok;
        }
        if (result.claimedHash) {
          check("serverSeedHash", result.claimedHash, result.serverSeedHash);
        }
        delete result.claimedHash;
        if (claimedOdds && table && table.oddsHash) {
          check("oddsHash", claimedOdds, table.oddsHash);
        }
        for (var k = 0; k < reels.length; k++) {
          var name = "box " + (k + 1) + " (nonce " + reels[k].nonce + ")";
          if (nonces) {
            check("box " + (k + 1) + " nonce", nonces[k], reels[k].nonce);
          }
          if (tickets) {
            check(name + " ticket", tickets[k], reels[k].ticket);
          }
          if (items) {
            check(name + " item", items[k], reels[k].itemId);
          }
        }
        var committed = table && (table.oddsHash || claimedOdds);
        if (!table || !table.commitment || !committed) {
          return result;
        }
        return oddsHash(table.commitment).then(function (recomputed) {
          result.tableOddsHash = recomputed;
          if (recomputed === committed) {
            check("odds table's oddsHash", committed, recomputed);
          } else {
            // a version fetched in another currency shows a repriced priceMinor: not the
            // base price the hash commits to, so this is said, not counted as a failure
            result.notes.push(
              "The pasted table (box " + table.commitment.boxId + " version " +
                table.commitment.boxVersionId + ", priceMinor " + table.commitment.priceMinor +
                (table.currency ? " " + table.currency : "") + ") hashes to " + recomputed +
                ", not " + committed + ". The oddsHash commits to the price in the " +
                "operator's base currency: fetch the version with ?currency= set to it and " +
                "paste it again. In the base currency, a different hash means a different table."
            );
          }
          return result;
        });
      });
  }

  /** Claimed nonces, one per box (digit strings, any size), or null. */
  function nonceList(value) {
    var text = String(value === undefined || value === null ? "" : value).trim();
    if (!text) {
      return null;
    }
    return text.split(",").map(function (part) {
      if (!DIGITS.test(part.trim())) {
        throw FairnessInputError("a claimed nonce must be a non-negative whole number");
      }
      return firstNonce(part);
    });
  }

  var api = {
    ALGORITHM_KEY: ALGORITHM_KEY,
    REJECTION_BOUND: REJECTION_BOUND,
    MAX_DRAW_SPACE: MAX_DRAW_SPACE,
    seedHash: seedHash,
    roll: roll,
    rollTrace: rollTrace,
    draw: draw,
    drawTrace: drawTrace,
    isWin: isWin,
    verifyRound: verifyRound,
    MAX_BOXES: MAX_BOXES,
    parseTable: parseTable,
    tableOf: tableOf,
    drawReels: drawReels,
    verifyBoxDraw: verifyBoxDraw,
    oddsHash: oddsHash
  };

  /* ---- the page (verifier.html) ------------------------------------------------- */

  function outcomeWord(win) {
    return win ? "win" : "loss";
  }

  function describe(check) {
    if (check.claim === "serverSeedHash") {
      return check.ok
        ? "The server seed hash matches: SHA-256 of the revealed server seed is " +
            check.recomputed + ", the hash published before the round."
        : "The server seed hash does NOT match: SHA-256 of the revealed server seed is " +
            check.recomputed + ", but the hash given is " + check.claimed + ".";
    }
    if (check.claim === "rolledBps") {
      return check.ok
        ? "The roll matches: the seeds give " + check.recomputed + "."
        : "The roll does NOT match: the seeds give " + check.recomputed +
            ", but the roll given is " + check.claimed + ".";
    }
    return check.ok
      ? "The outcome matches: " + outcomeWord(check.recomputed) + "."
      : "The outcome does NOT match: the roll gives a " + outcomeWord(check.recomputed) +
          ", but the outcome given is a " + outcomeWord(check.claimed) + ".";
  }

  function wirePage(doc) {
    var form = doc.getElementById("verifier");
    if (!form || form.getAttribute("data-wired") === "yes") {
      return;
    }
    form.setAttribute("data-wired", "yes");
    var output = doc.getElementById("result");
    var pasted = doc.getElementById("round-json");
    var fill = doc.getElementById("fill-from-round");

    function field(name) {
      return form.elements.namedItem(name);
    }

    function show(status, title, lines) {
      output.textContent = "";
      output.setAttribute("data-status", status);
      var heading = doc.createElement("h2");
      heading.textContent = title;
      output.appendChild(heading);
      var list = doc.createElement("ul");
      for (var i = 0; i < lines.length; i++) {
        var item = doc.createElement("li");
        item.className = lines[i].className || "";
        item.textContent = lines[i].text;
        list.appendChild(item);
      }
      output.appendChild(list);
      heading.setAttribute("tabindex", "-1");
      heading.focus();
    }

    if (fill && pasted) {
      fill.addEventListener("click", function () {
        try {
          var document_ = JSON.parse(pasted.value);
          var round = document_ && document_.round ? document_.round : document_;
          var fairness = (round && round.fairness) || {};
          if (present(fairness.algorithmKey) && fairness.algorithmKey !== ALGORITHM_KEY) {
            throw FairnessInputError(
              "unsupported algorithmKey " + JSON.stringify(fairness.algorithmKey)
            );
          }
          if (!round || !round.fairness) {
            throw FairnessInputError("this JSON has no fairness block (a voided round?)");
          }
          field("clientSeed").value = fairness.clientSeed || "";
          field("nonce").value = present(fairness.nonce) ? String(fairness.nonce) : "";
          field("serverSeedHash").value = fairness.serverSeedHash || "";
          field("rolledBps").value = present(round.rolledBps) ? String(round.rolledBps) : "";
          field("chanceBps").value = present(round.chanceBps) ? String(round.chanceBps) : "";
          field("isWin").value =
            round.isWin === true ? "win" : round.isWin === false ? "loss" : "";
          show("filled", "Form filled from the round", [
            { text: "Now enter the revealed server seed and press Verify." }
          ]);
          field("serverSeed").focus();
        } catch (error) {
          show("error", "Could not read that round", [
            { text: error instanceof SyntaxError ? "That is not valid JSON." : error.message }
          ]);
        }
      });
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var claimedOutcome = field("isWin").value;
      var input = {
        serverSeed: field("serverSeed").value.trim(),
        clientSeed: field("clientSeed").value,
        nonce: field("nonce").value.trim(),
        serverSeedHash: field("serverSeedHash").value.trim(),
        rolledBps: field("rolledBps").value.trim(),
        chanceBps: field("chanceBps").value.trim(),
        isWin: claimedOutcome === "win" ? true : claimedOutcome === "loss" ? false : null
      };
      output.textContent = "Checking...";
      verifyRound(input).then(
        function (result) {
          var lines = [
            { text: "Server seed hash (SHA-256 of the server seed): " + result.serverSeedHash },
            {
              text:
                "Roll: " + result.rolledBps + " (of 0 to 9999; block " + result.cursor +
                ", word " + result.wordIndex + ")"
            }
          ];
          if (result.isWin !== null) {
            lines.push({
              text:
                "With a chance of " + result.chanceBps + " the round is a " +
                outcomeWord(result.isWin) + " (" + result.rolledBps +
                (result.isWin ? " is below " : " is not below ") + result.chanceBps + ")."
            });
          }
          for (var i = 0; i < result.checks.length; i++) {
            lines.push({
              className: result.checks[i].ok ? "ok" : "bad",
              text: (result.checks[i].ok ? "\u2714 " : "\u2718 ") + describe(result.checks[i])
            });
          }
          var failed = result.checks.filter(function (c) {
            return !c.ok;
          }).length;
          if (!result.checks.length) {
            show("computed", "Computed (no claims given to check)", lines);
          } else if (failed) {
            show("bad", "NOT verified: " + failed + " of " + result.checks.length +
              " checks failed", lines);
          } else {
            show("ok", "Verified: all " + result.checks.length + " checks passed", lines);
          }
        },
        function (error) {
          show("error", "Cannot verify", [{ text: error.message }]);
        }
      );
    });
  }

  /**
   * The box form's fields from a box round as the API answers it (the open answer, a
   * round_settled webhook or its data, a round history entry, or the round): seeds,
   * first nonce, count, total tickets, oddsHash, and the nonces, tickets and items of
   * facts.reels (a history entry's reels) when present.
   */
  function boxRoundFields(doc) {
    if (doc && doc.data && typeof doc.data === "object") {
      doc = doc.data;
    }
    var round = doc && doc.round && typeof doc.round === "object" ? doc.round : doc;
    var facts = doc && doc.round ? doc.facts : null;
    if (!round || typeof round !== "object" || !round.box || typeof round.box !== "object") {
      throw FairnessInputError("this JSON holds no box round (no round.box)");
    }
    var fairness = round.fairness;
    if (!fairness || typeof fairness !== "object") {
      throw FairnessInputError("this round has no fairness block (a voided round?)");
    }
    if (fairness.algorithmKey !== ALGORITHM_KEY) {
      throw FairnessInputError("unsupported algorithmKey " + JSON.stringify(fairness.algorithmKey));
    }
    // a round history entry carries its reels beside the round's keys
    var reels = facts && Array.isArray(facts.reels) ? facts.reels
      : Array.isArray(round.reels) ? round.reels : null;
    function column(key) {
      return reels ? reels.map(function (reel) { return String(reel[key]); }).join(",") : "";
    }
    return {
      boxClientSeed: String(fairness.clientSeed || ""),
      boxNonce: present(fairness.nonce) ? String(fairness.nonce) : "",
      boxCount: present(round.box.count) ? String(round.box.count) : "",
      boxTotalTickets: present(round.box.totalTickets) ? String(round.box.totalTickets) : "",
      boxServerSeedHash: String(fairness.serverSeedHash || ""),
      boxOddsHash: typeof round.box.oddsHash === "string" ? round.box.oddsHash : "",
      boxNonces: column("nonce"),
      boxTickets: column("ticket"),
      boxItems: column("itemId"),
      boxId: String(round.box.boxId),
      boxVersionId: String(round.box.boxVersionId)
    };
  }

  /** One line per check: what was compared with what. */
  function boxCheckText(c) {
    if (c.claim === "oddsHash") {
      return c.ok
        ? "\u2714 The round's oddsHash is the pasted version's: " + c.recomputed + "."
        : "\u2718 The round's oddsHash " + c.claimed + " is NOT the pasted version's " +
            c.recomputed + ": this is not the table the round drew from.";
    }
    if (c.claim === "odds table's oddsHash") {
      return "\u2714 The pasted table (items, weights, price) hashes to the oddsHash " +
        c.recomputed + ".";
    }
    return c.ok
      ? "\u2714 The " + c.claim + " matches: " + c.recomputed + "."
      : "\u2718 The " + c.claim + " does NOT match: the seeds give " + c.recomputed +
          ", but " + c.claimed + " was given.";
  }

  function wireBoxPage(doc) {
    var form = doc.getElementById("box-verifier");
    if (!form || form.getAttribute("data-wired") === "yes") {
      return;
    }
    form.setAttribute("data-wired", "yes");
    var output = doc.getElementById("box-result");

    function field(name) {
      return form.elements.namedItem(name).value;
    }

    function show(status, title, lines) {
      output.textContent = "";
      output.setAttribute("data-status", status);
      var heading = doc.createElement("h2");
      heading.textContent = title;
      output.appendChild(heading);
      var list = doc.createElement("ul");
      for (var i = 0; i < lines.length; i++) {
        var item = doc.createElement("li");
        item.className = lines[i].className || "";
        if (lines[i].reel) {
          item.setAttribute("data-box", String(lines[i].reel.box));
          item.setAttribute("data-ticket", String(lines[i].reel.ticket));
          if (lines[i].reel.itemId !== null) {
            item.setAttribute("data-item", String(lines[i].reel.itemId));
          }
        }
        item.textContent = lines[i].text;
        list.appendChild(item);
      }
      output.appendChild(list);
      heading.setAttribute("tabindex", "-1");
      heading.focus();
    }

    var pasted = doc.getElementById("box-round-json");
    var fill = doc.getElementById("fill-from-box-round");
    if (fill && pasted) {
      fill.addEventListener("click", function () {
        try {
          var filled = boxRoundFields(JSON.parse(pasted.value));
          Object.keys(filled).forEach(function (name) {
            var input = form.elements.namedItem(name);
            if (input) {
              input.value = filled[name];
            }
          });
          show("filled", "Form filled from the round", [
            {
              text: "Now enter the revealed server seed and the ticket ranges of box " +
                filled.boxId + " version " + filled.boxVersionId + ": paste the version's " +
                "JSON as GET /api/play/boxes/" + filled.boxId + "/versions/" +
                filled.boxVersionId + " answers it (every version, retired ones included; " +
                "in the operator's base currency its oddsHash is recomputed too), or keep " +
                "the total tickets to check tickets only, and press Verify."
            }
          ]);
          form.elements.namedItem("boxServerSeed").focus();
        } catch (error) {
          show("error", "Could not read that round", [
            { text: error instanceof SyntaxError ? "That is not valid JSON." : error.message }
          ]);
        }
      });
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      output.textContent = "Checking...";
      verifyBoxDraw({
        serverSeed: field("boxServerSeed").trim(),
        clientSeed: field("boxClientSeed"),
        nonce: field("boxNonce").trim(),
        count: field("boxCount").trim(),
        ranges: field("boxRanges"),
        totalTickets: field("boxTotalTickets").trim(),
        serverSeedHash: field("boxServerSeedHash"),
        oddsHash: field("boxOddsHash"),
        nonces: field("boxNonces"),
        tickets: field("boxTickets"),
        items: field("boxItems")
      }).then(
        function (result) {
          var lines = [
            { text: "Server seed hash (SHA-256 of the server seed): " + result.serverSeedHash },
            { text: "Total tickets: " + result.totalTickets + " (tickets 0 to " +
              (result.totalTickets - 1) + ")" }
          ];
          result.reels.forEach(function (reel) {
            var text = "Box " + reel.box + ": nonce " + reel.nonce + ", ticket " + reel.ticket +
              " (block " + reel.cursor + ", word " + reel.wordIndex + ")";
            if (reel.itemId !== null) {
              text += " \u2192 item " + reel.itemId + " (tickets " + reel.ticketFrom + " to " +
                reel.ticketTo + ")";
            }
            lines.push({ className: "reel", text: text, reel: reel });
          });
          if (result.tableOddsHash) {
            lines.push({ text: "oddsHash of the pasted table: " + result.tableOddsHash });
          }
          result.checks.forEach(function (c) {
            lines.push({ className: c.ok ? "ok" : "bad", text: boxCheckText(c) });
          });
          result.notes.forEach(function (note) {
            lines.push({ className: "note", text: note });
          });
          var failed = result.checks.filter(function (c) {
            return !c.ok;
          }).length;
          if (!result.checks.length) {
            show("computed", "Computed (no claims given to check)", lines);
          } else if (failed) {
            show("bad", "NOT verified: " + failed + " of " + result.checks.length +
              " checks failed", lines);
          } else {
            show("ok", "Verified: all " + result.checks.length + " checks passed", lines);
          }
        },
        function (error) {
          show("error", "Cannot verify", [{ text: error.message }]);
        }
      );
    });
  }

  api.wirePage = wirePage;
  api.wireBoxPage = wireBoxPage;
  api.boxRoundFields = boxRoundFields;

  if (typeof document !== "undefined" && document && document.getElementById) {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () {
        wirePage(document);
        wireBoxPage(document);
      });
    } else {
      wirePage(document);
      wireBoxPage(document);
    }
  }

  if (root) {
    root.UpgraderFairness = api;
  }
  if (typeof module !== "undefined" && module && module.exports) {
    module.exports = api;
  }
})(typeof globalThis !== "undefined" ? globalThis : typeof window !== "undefined" ? window : this);
