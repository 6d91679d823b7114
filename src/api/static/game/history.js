/*
 * The History tab: the player's rounds, newest first, and their verification in the
 * browser once the server seed is revealed. A row shows the local time the round settled,
 * the outcome in words, the prize, the stake, the chance and the roll as percentages.
 * On a wide screen it is a table; on a phone each row is a card (app.css), so nothing is
 * wider than the screen.
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
    ["chance", "Chance", true],
    ["roll", "Roll", true],
    ["round", "Round", false],
    ["verify", "", false]
  ];

  var STATUS_WORDS = {
    voided: ["not played", "Your casino refused the wager: nothing was charged."],
    held: ["cancelled", "Your casino cancelled this round: the stake is being refunded."],
    cancelled: ["cancelled", "Your casino cancelled this round and refunded the stake."]
  };

  function refreshHistory(older) {
    var params = { limit: 20, cursor: older ? nextCursor : null };
    return App.api("GET", "/api/play/rounds" + App.query(params)).then(
      function (page) {
        rounds = older ? rounds.concat(page.rounds) : page.rounds;
        nextCursor = page.nextCursor;
        renderHistory();
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
    var cells = round.status === "settled" ? settledCells(round) : unsettledCells(round);
    var row = el("tr", round.status === "settled" ? "settled" : "unsettled");
    row.setAttribute("data-round", round.publicId);
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
    var verify = el("button", "secondary small", "Verify");
    verify.type = "button";
    verify.setAttribute("data-verify", round.publicId);
    verify.addEventListener("click", function () {
      verifyRound(round);
    });
    return {
      time: App.timeElement(round.settledAt),
      result: round.isWin ? "win" : "miss",
      outcome: round.isWin ? "win" : "loss",
      prize: round.target
        ? round.target.name + " " + App.money(round.target.valueMinor, round.target.currency)
        : "\u2014",
      stake: App.money(round.betMinor, round.currency) +
        (round.mode === "items" ? " in items" : ""),
      chance: Money.percent(round.chanceBps),
      roll: Money.rollPercent(round.rolledBps),
      round: round.publicId,
      verify: verify
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
      chance: "\u2014",
      roll: "\u2014",
      round: round.publicId
    };
  }

  function verifyRound(round) {
    var out = $("verify-output");
    out.hidden = false;
    out.className = "verify";
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
    return window.UpgraderFairness.verifyRound(round, revealed.serverSeed).then(
      function (result) {
        out.textContent = "";
        out.className = "verify " + (result.ok ? "ok" : "bad");
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
