/*
 * The box screen (game "boxes"): the launched box (its name, picture, price and return to
 * player), its items with their odds (the ticket ranges and the odds hash in a details
 * view), a count of 1..maxBoxesPerRound, Open. Its markup is
 * <div class="screen" data-screen="boxes"> in index.html.
 *
 * An open is POST /api/play/rounds/open {clientActionId, boxId, boxVersionId, count,
 * currency}; each open has a fresh clientActionId, and an open whose answer was lost is
 * re-sent with the SAME one (the platform answers the original round, never charges
 * twice). The round is settled when its answer arrives; only then do the reels
 * (box-reels.js) spin, to the items the answer names, and Skip puts them at their end.
 * Then the won items (box-won.js) offer cash back or keep, and the balance shows the
 * answer's balanceAfterMinor. BOX_VERSION_CHANGED (the box's table changed since it was
 * shown) loads the box's current version and asks the player to look again.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var Money = App.Money;
  var shared = App.state;
  var RETRIES = 2;
  var BOX_IMAGE = "/game/assets/icon.svg";

  var S = {
    box: null, // the version shown, in the player's currency
    max: 1,
    count: 1,
    retired: false, // the box is offered no more (or the game is off): nothing to open
    pending: null // an open sent whose answer never came: {path, body}
  };

  /* ------------------------------------------------------------------ the box */

  function setBox(box) {
    S.box = box;
    App.learnBoxVersion(box);
    var img = $("box-image");
    img.src = box.imageUrl || BOX_IMAGE;
    img.alt = box.name;
    $("box-name").textContent = box.name;
    $("box-price").textContent = App.money(box.priceMinor, box.currency) + " per box";
    $("box-rtp").textContent = "Return to player " + Money.percent(box.rtpBps);
    $("box-summary").textContent = box.items.length + " items";
    $("box-version").textContent = "box " + box.boxId + ", version " + box.boxVersionId;
    $("box-total").textContent = String(box.totalTickets);
    $("box-hash").textContent = box.oddsHash;
    $("box-stage").setAttribute("data-box-id", String(box.boxId));
    $("box-stage").setAttribute("data-box-version-id", String(box.boxVersionId));
    renderItems();
    renderOdds();
    renderOpen();
  }

  /** 3400 -> "34%"; a share under a basis point still shows as more than nothing. */
  function chance(item) {
    return item.probabilityBps > 0 ? Money.percent(item.probabilityBps) : "< 0.01%";
  }

  /** The items, most valuable first, with their chance of being drawn. */
  function renderItems() {
    var list = $("box-items");
    list.textContent = "";
    S.box.items.slice().sort(function (a, b) {
      return b.valueMinor - a.valueMinor || a.ticketFrom - b.ticketFrom;
    }).forEach(function (item) {
      var row = el("li", "box-item " + App.reels.rarity(item));
      row.setAttribute("data-item-id", String(item.itemId));
      var img = el("img");
      img.width = 48;
      img.height = 48;
      img.loading = "lazy";
      App.setImage(img, item.itemId, item.imageUrl, "");
      row.appendChild(img);
      var text = el("div", "box-item-text");
      text.appendChild(el("span", "box-item-name", item.name));
      text.appendChild(el("span", "box-item-value", App.money(item.valueMinor, S.box.currency)));
      row.appendChild(text);
      var odds = el("span", "box-item-chance", chance(item));
      odds.title = item.weight + " of " + S.box.totalTickets + " tickets";
      row.appendChild(odds);
      var bar = el("span", "box-item-bar");
      bar.style.width = Math.max(1, item.probabilityBps / 100) + "%";
      row.appendChild(bar);
      list.appendChild(row);
    });
  }

  /** The committed table, in table order: each item's inclusive ticket range. */
  function renderOdds() {
    var body = $("box-odds");
    body.textContent = "";
    S.box.items.forEach(function (item) {
      var row = el("tr");
      row.setAttribute("data-item-id", String(item.itemId));
      row.appendChild(el("td", null, item.name));
      row.appendChild(el("td", "mono", item.ticketFrom + "\u2013" + item.ticketTo));
      row.appendChild(el("td", null, chance(item)));
      body.appendChild(row);
    });
  }

  function renderOpen() {
    var button = $("box-open");
    var count = S.count;
    var price = S.box ? App.money(count * S.box.priceMinor, S.box.currency) : "";
    button.disabled = shared.busy || !S.box || !S.box.available || !shared.token || S.retired;
    if (shared.busy) {
      button.textContent = "Opening\u2026";
    } else if (S.pending) {
      button.textContent = "Retry";
    } else {
      button.textContent = "Open " + (count === 1 ? "1 box" : count + " boxes") + " \u00b7 " +
        price;
    }
    $("count-block").hidden = S.max <= 1;
    $("box-count").max = String(S.max);
    $("count-down").disabled = shared.busy || count <= 1;
    $("count-up").disabled = shared.busy || count >= S.max;
    $("box-count").disabled = shared.busy;
    if (S.box && !S.box.available && !shared.busy) {
      setResult("error", "This box cannot be opened right now: one of its items is no " +
        "longer available.");
    }
  }

  function setCount(count) {
    var n = Math.max(1, Math.min(S.max, Math.floor(Number(count)) || 1));
    if (n !== S.count) {
      S.pending = null; // another count is another action
    }
    S.count = n;
    $("box-count").value = String(n);
    renderOpen();
  }

  function setResult(kind, text) {
    var box = $("box-result");
    box.className = "result" + (kind ? " " + kind : "");
    box.textContent = text;
  }

  /** The box's version by id in the player's currency, shown. */
  function loadVersion(boxVersionId) {
    var path = "/api/play/boxes/" + S.box.boxId + "/versions/" + boxVersionId +
      App.query({ currency: shared.currency, locale: shared.locale });
    return App.api("GET", path).then(setBox);
  }

  /* ------------------------------------------------------------------ open */

  function sendOpen(action) {
    var attempt = 0;
    function once() {
      return App.api("POST", action.path, action.body).catch(function (error) {
        var retriable = error.code === "NETWORK_ERROR" || error.code === "ACTION_IN_PROGRESS" ||
          error.code === "OUTCOME_UNKNOWN";
        if (retriable && attempt < RETRIES) {
          attempt += 1;
          return App.sleep(400 * attempt).then(once);
        }
        throw error;
      });
    }
    return once();
  }

  function open() {
    if (shared.busy || !S.box) {
      return;
    }
    var action = S.pending || {
      path: "/api/play/rounds/open",
      body: {
        clientActionId: App.newActionId(),
        boxId: S.box.boxId,
        boxVersionId: S.box.boxVersionId,
        count: S.count,
        currency: shared.currency || undefined
      }
    };
    S.pending = action;
    shared.busy = true;
    App.hideNotice();
    App.boxWon.clear();
    setResult("", "");
    $("box-stage").setAttribute("data-state", "opening");
    $("box-image").classList.add("opening");
    renderOpen();
    sendOpen(action).then(
      function (answer) {
        S.pending = null;
        reveal(answer);
        $("box-skip").hidden = false;
        return App.reels.spin($("reels"), S.box, answer.facts.reels).then(function () {
          showOutcome(answer);
        });
      },
      refused
    ).then(function () {
      shared.busy = false;
      $("box-skip").hidden = true;
      $("box-image").classList.remove("opening");
      $("box-stage").setAttribute("data-state", "ready");
      renderOpen();
    });
  }

  /** The answer is in: remember its reels (for the fairness check), learn its pictures. */
  function reveal(answer) {
    var round = answer.round;
    App.rememberBoxReels(round.publicId, answer.facts.reels);
    answer.wonItems.forEach(function (item) {
      App.imageFor(item.itemId, item.imageUrl);
    });
    $("box-image").classList.remove("opening");
    $("reels").setAttribute("data-round", round.publicId);
    $("box-stage").setAttribute("data-state", "revealing");
  }

  function showOutcome(answer) {
    var round = answer.round;
    if (typeof answer.balanceAfterMinor === "number") {
      App.setBalance(answer.balanceAfterMinor, round.currency);
    }
    var count = round.box.count;
    setResult(round.payoutMinor >= round.betMinor ? "win" : "opened",
      "Opened " + (count === 1 ? "1 box" : count + " boxes") + " for " +
      App.money(round.betMinor, round.currency) + ": won " +
      App.money(round.payoutMinor, round.currency) + " in items.");
    App.boxWon.show(answer.wonItems, S.box);
    App.notifyParent({ type: "upgrader:round-settled", publicId: round.publicId });
    App.emit("round-settled", round);
  }

  function refused(error) {
    // A lost answer or a wallet that did not answer: the same open may be retried (after
    // OUTCOME_UNKNOWN it must be: the retry tells what happened).
    var keep = error.code === "NETWORK_ERROR" || error.code === "WALLET_UNAVAILABLE" ||
      error.code === "ACTION_IN_PROGRESS" || error.code === "SERVICE_UNAVAILABLE" ||
      error.code === "OUTCOME_UNKNOWN";
    if (!keep) {
      S.pending = null;
    }
    if (error.body && typeof error.body.balanceAfterMinor === "number") {
      App.setBalance(error.body.balanceAfterMinor, S.box.currency);
    }
    setResult("error", error.message + (S.pending ? " Press Retry to send it again." : ""));
    if (error.body && error.body.round) {
      App.emit("round-refused", error.body.round);
    }
    if (error.code === "BOX_VERSION_CHANGED" || error.code === "BOX_UNAVAILABLE") {
      // the body names the version offered now (null: the box is offered no more)
      var current = error.body ? error.body.currentBoxVersionId : undefined;
      if (error.code === "BOX_VERSION_CHANGED" && !current) {
        S.retired = true;
        setResult("error", App.MESSAGES.BOX_NOT_FOUND + " (BOX_VERSION_CHANGED)");
        return null;
      }
      return loadVersion(current || S.box.boxVersionId).then(null, function (failure) {
        App.showNotice(failure.message, "error");
      });
    }
    if (error.code === "BOX_NOT_FOUND" || error.code === "GAME_DISABLED") {
      S.retired = true;
    }
    return null;
  }

  /* ------------------------------------------------------------------ the screen */

  function wire() {
    $("box-open").addEventListener("click", open);
    $("box-skip").addEventListener("click", App.reels.skip);
    $("count-down").addEventListener("click", function () {
      setCount(S.count - 1);
    });
    $("count-up").addEventListener("click", function () {
      setCount(S.count + 1);
    });
    $("box-count").addEventListener("change", function () {
      setCount($("box-count").value);
    });
    App.boxWon.wire();
  }

  /**
   * After the session: the launched box (session/init answers it in the base currency and
   * the default locale), then the same version in the player's currency and language.
   */
  function start() {
    var game = shared.game;
    S.max = Math.max(1, game.maxBoxesPerRound || 1);
    setBox(game.box);
    setCount(1);
    return loadVersion(game.box.boxVersionId).then(null, function (error) {
      setResult("error", error.message);
    });
  }

  App.registerScreen("boxes", {
    title: "Boxes",
    wire: wire,
    start: start,
    currency: function (session) {
      return session.game.box.currency;
    },
    refusal: function (session) {
      return session.game && session.game.box ? null : "This box cannot be opened here.";
    }
  });
})(window.GameApp);
