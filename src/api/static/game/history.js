/*
 * The History tab: the player's rounds of every game, newest first, and their
 * verification in the browser once the server seed is revealed. An Upgrader row shows the
 * local time the round settled, the outcome in words, the prize, the stake, the payout,
 * the chance and the roll as percentages; a box row (game "boxes") the box's name, how
 * many were opened and the items when known, the price paid and the payout (its chance
 * and roll are "—"). On a wide screen it is a table; on a phone each row is a card
 * (app.css), so nothing is wider than the screen. Box rounds are checked by
 * box-verify.js.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var Money = App.Money;
  var state = App.state;
  var rounds = [];
  var nextCursor = null;

  /* [key, header, labelled on a phone card] */
  var COLUMNS = [
    ["time", "Time", false],
    ["result", "Result", false],
    ["prize", "Prize", false],
    ["stake", "Stake", true],
    ["payout", "Payout", true],
    ["chance", "Chance", true],
    ["roll", "Roll", true],
    ["round", "Round", false],
    ["verify", "", false]
  ];

  var STATUS_WORDS = {
    voided: ["not played", "Your casino refused the wager: nothing was charged."]
  };

  function refreshHistory(older) {
    var params = { limit: 20, cursor: older ? nextCursor : null };
    return App.api("GET", "/api/play/rounds" + App.query(params)).then(
      function (page) {
        rounds = older ? rounds.concat(page.rounds) : page.rounds;
        nextCursor = page.nextCursor;
        renderHistory();
        learnBoxNames();
      },
      function (error) {
        $("history-message").textContent = error.message;
        $("history-message").hidden = false;
      }
    );
  }

  function renderHead() {
    var row = $("history-head");
    row.textContent = "";
    COLUMNS.forEach(function (column) {
      var th = el("th", "h-" + column[0], column[1]);
      th.scope = "col";
      row.appendChild(th);
    });
  }

  /** Box rounds whose version is not known yet: ask once, then draw the rows again. */
  function learnBoxNames() {
    var asked = {};
    var waits = [];
    rounds.forEach(function (round) {
      var box = round.box;
      if (!box || App.knownBoxVersion(box.boxId, box.boxVersionId)) {
        return;
      }
      var key = box.boxId + ":" + box.boxVersionId;
      if (!asked[key]) {
        asked[key] = true;
        waits.push(App.boxVersion(box.boxId, box.boxVersionId).then(null, function () {
          return null; // an unknown box keeps its id in the row
        }));
      }
    });
    if (waits.length) {
      Promise.all(waits).then(renderHistory);
    }
  }

  function renderHistory() {
    var body = $("history");
    body.textContent = "";
    $("history-message").hidden = rounds.length > 0;
    $("history-message").textContent = "No rounds yet.";
    $("history-more").hidden = !nextCursor;
    var known = Object.keys(state.images).length;
    rounds.forEach(function (round) {
      body.appendChild(roundRow(round));
    });
    if (Object.keys(state.images).length > known) {
      App.emit("images-learned");
    }
  }

  /** One cell per column; the figures are labelled for the phone card (no header). */
  function roundRow(round) {
    var settled = round.status === "settled";
    var cells = !settled ? unsettledCells(round) : isBox(round) ? boxCells(round)
      : settledCells(round);
    var row = el("tr", settled ? "settled" : "unsettled");
    row.setAttribute("data-round", round.publicId);
    row.setAttribute("data-game", isBox(round) ? "boxes" : "upgrader");
    COLUMNS.forEach(function (column) {
      var td = el("td", "h-" + column[0]);
      if (column[2]) {
        td.setAttribute("data-label", column[1]);
      }
      var content = cells[column[0]];
      if (content instanceof Node) {
        td.appendChild(content);
      } else if (content !== undefined) {
        td.textContent = content;
      }
      if (content === undefined || content === "\u2014") {
        td.className += " none";
      }
      row.appendChild(td);
    });
    var outcome = row.querySelector(".h-result");
    outcome.className += " outcome " + cells.outcome;
    row.querySelector(".h-round").className += " mono";
    return row;
  }

  function settledCells(round) {
    if (round.target) {
      App.imageFor(round.target.itemId, round.target.imageUrl);
    }
    return {
      time: App.timeElement(round.settledAt),
      result: round.isWin ? "win" : "miss",
      outcome: round.isWin ? "win" : "loss",
      prize: round.target
        ? round.target.name + " " + App.money(round.target.valueMinor, round.target.currency)
        : "\u2014",
      stake: App.money(round.betMinor, round.currency) +
        (round.mode === "items" ? " in items" : ""),
      payout: App.money(round.payoutMinor, round.currency),
      chance: Money.percent(round.chanceBps),
      roll: Money.rollPercent(round.rolledBps),
      round: round.publicId,
      verify: verifyButton(round)
    };
  }

  function isBox(round) {
    return round.game === "boxes" || !!round.box;
  }

  function verifyButton(round) {
    var verify = el("button", "secondary small", "Verify");
    verify.type = "button";
    verify.setAttribute("data-verify", round.publicId);
    verify.addEventListener("click", function () {
      verifyRound(round);
    });
    return verify;
  }

  /** A box round: the box and the count (the items too once they are known). */
  function boxCells(round) {
    var box = round.box;
    var version = App.knownBoxVersion(box.boxId, box.boxVersionId);
    var name = version ? version.name : box.name || "Box " + box.boxId;
    var reels = App.boxReelsOf(round);
    var prize = name + " \u00d7 " + box.count;
    if (reels && version) {
      prize += ": " + reels.map(function (reel) {
        return App.boxItemName(version, reel.itemId);
      }).join(", ");
    }
    return {
      time: App.timeElement(round.settledAt),
      result: box.count === 1 ? "opened" : "opened " + box.count,
      outcome: "box",
      prize: prize,
      stake: App.money(round.betMinor, round.currency),
      payout: App.money(round.payoutMinor, round.currency),
      chance: "\u2014",
      roll: "\u2014",
      round: round.publicId,
      verify: verifyButton(round)
    };
  }

  function unsettledCells(round) {
    var words = STATUS_WORDS[round.status] ||
      [String(round.status).replace(/_/g, " "), "Nothing was charged."];
    return {
      time: "\u2014",
      result: words[0],
      outcome: "void",
      prize: words[1],
      stake: "\u2014",
      payout: "\u2014",
      chance: "\u2014",
      roll: "\u2014",
      round: round.publicId
    };
  }

  function verifyRound(round) {
    var out = $("verify-output");
    out.hidden = false;
    out.className = "verify";
    out.removeAttribute("data-verified");
    out.setAttribute("data-round", round.publicId);
    out.textContent = "Verifying " + round.publicId + "\u2026";
    var fairness = state.fairness;
    var revealed = fairness && fairness.revealed.filter(function (seed) {
      return seed.serverSeedHash === round.fairness.serverSeedHash;
    })[0];
    if (!revealed) {
      out.className = "verify pending";
      out.textContent = "Round " + round.publicId + " was rolled with the active server seed, " +
        "which is still secret. Rotate your seeds in the Fairness tab to reveal it, then verify.";
      return Promise.resolve();
    }
    if (!window.UpgraderFairness) {
      out.className = "verify bad";
      out.textContent = "The fairness verifier (fairness.js) did not load.";
      return Promise.resolve();
    }
    if (isBox(round)) {
      return App.verifyBoxRound(round, revealed.serverSeed, out).then(null, function (error) {
        out.className = "verify bad";
        out.textContent = "Cannot verify " + round.publicId + ": " + error.message;
      });
    }
    return window.UpgraderFairness.verifyRound(round, revealed.serverSeed).then(
      function (result) {
        out.textContent = "";
        out.className = "verify " + (result.ok ? "ok" : "bad");
        out.setAttribute("data-verified", result.ok ? "ok" : "bad");
        out.appendChild(el("strong", null, result.ok
          ? "Verified in your browser: " + round.publicId
          : "NOT verified: " + round.publicId));
        var lines = el("ul");
        lines.appendChild(el("li", null, "Server seed " + revealed.serverSeed));
        result.checks.forEach(function (check) {
          var words = {
            serverSeedHash: "SHA-256 of the server seed equals the hash shown before the round",
            rolledBps: "HMAC-SHA256(server seed, \"" + result.clientSeed + ":" + result.nonce +
              ":" + result.cursor + "\") gives roll " + check.recomputed + " (" +
              Money.rollPercent(check.recomputed) + ")",
            isWin: "roll " + Money.rollPercent(result.rolledBps) +
              (result.isWin ? " is under " : " is not under ") +
              Money.percent(round.chanceBps) + ": a " + (result.isWin ? "win" : "miss")
          }[check.claim];
          lines.appendChild(el("li", check.ok ? "ok" : "bad",
            (check.ok ? "\u2714 " : "\u2718 ") + words +
            (check.ok ? "" : " (claimed " + check.claimed + ")")));
        });
        out.appendChild(lines);
      },
      function (error) {
        out.className = "verify bad";
        out.textContent = "Cannot verify " + round.publicId + ": " + error.message;
      }
    );
  }

  function wireHistory() {
    renderHead();
    $("history-refresh").addEventListener("click", function () {
      refreshHistory();
    });
    $("history-more").addEventListener("click", function () {
      refreshHistory(true);
    });
    App.on("round-settled", function () {
      refreshHistory();
    });
    App.on("round-refused", function () {
      refreshHistory();
    });
  }

  App.refreshHistory = refreshHistory;
  App.wireHistory = wireHistory;
})(window.GameApp);
