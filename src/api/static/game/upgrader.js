/*
 * The Upgrader screen: stake a balance amount (or owned items), pick a win chance, aim at
 * a prize from the band, roll. Its markup is <div class="screen" data-screen="upgrader">
 * in index.html; it registers itself as a game screen (core.js).
 *
 * Plays carry a fresh clientActionId each (crypto.randomUUID); a play whose answer was
 * lost is re-sent with the SAME id, so the platform answers the original round and never
 * debits twice; after OUTCOME_UNKNOWN it is re-sent too, to learn what happened. Every
 * refusal is shown in words with its code.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var Money = App.Money;
  var shared = App.state;
  var PLAY_RETRIES = 2;
  var U = App.upgrader; // upgrader-prizes.js: the state, the quote and the prize grid
  var state = U.state;
  var config = U.config;
  var selectedPrize = U.selectedPrize;
  var requestQuote = U.requestQuote;
  var loadQuote = U.loadQuote;

  /* ------------------------------------------------------------------ rendering */

  function renderChances() {
    var box = $("chances");
    box.textContent = "";
    config().chancePresetsBps.forEach(function (bps) {
      var button = el("button", "chip", Money.percent(bps));
      button.type = "button";
      button.setAttribute("role", "radio");
      button.setAttribute("aria-checked", String(bps === state.chanceBps));
      button.setAttribute("data-chance", String(bps));
      button.addEventListener("click", function () {
        if (shared.busy || bps === state.chanceBps) {
          return;
        }
        state.chanceBps = bps;
        state.pending = null;
        setResult("", "");
        renderChances();
        App.gauge.render(state.chanceBps);
        requestQuote(0);
      });
      box.appendChild(button);
    });
  }

  function renderWagerLimits() {
    var c = config();
    $("wager-limits").textContent = "Min " + App.money(c.minWagerMinor, c.currency) +
      " \u00b7 Max " + App.money(c.maxWagerMinor, c.currency);
  }

  function renderPlayButton() {
    var button = $("play");
    var ready = !!selectedPrize() && !shared.busy && !!shared.token && config().available;
    if ((state.mode === "items" && !state.stakeIds.length) || state.quoteStale) {
      ready = false;
    }
    button.disabled = !ready;
    button.textContent = shared.busy ? "Rolling\u2026" : state.pending ? "Retry" : "Upgrade";
  }

  function renderMode() {
    var modes = config().modes;
    Array.prototype.forEach.call(document.querySelectorAll("#modes [data-mode]"), function (b) {
      var mode = b.getAttribute("data-mode");
      b.setAttribute("aria-selected", String(mode === state.mode));
      b.hidden = mode === "items" ? !(modes.items && shared.inventoryAvailable) : !modes.balance;
    });
    $("modes").hidden = !(modes.items && modes.balance && shared.inventoryAvailable);
    $("wager-block").hidden = state.mode !== "balance";
    $("stake-block").hidden = state.mode !== "items";
    renderStakeTotal();
  }

  function renderStakeTotal() {
    var quote = state.quote;
    if (!state.stakeIds.length) {
      $("stake-total").textContent = "No items";
      $("stake-hint").textContent = "Tick items in your inventory below to stake them.";
    } else {
      $("stake-total").textContent = quote && quote.stake
        ? App.money(quote.stake.totalMinor, quote.stake.currency)
        : "\u2026";
      $("stake-hint").textContent = state.stakeIds.length + " item" +
        (state.stakeIds.length === 1 ? "" : "s") + " staked; they are spent on a win and on a miss.";
    }
  }

  function setResult(kind, text) {
    var box = $("result");
    box.className = "result" + (kind ? " " + kind : "");
    box.textContent = text;
  }

  /* ------------------------------------------------------------------ play */

  function buildPlay() {
    var prize = selectedPrize();
    if (state.mode === "items") {
      return {
        path: "/api/play/upgrader/play-with-items",
        body: {
          clientActionId: App.newActionId(),
          stakeItemIds: state.stakeIds.slice(),
          chanceBps: state.chanceBps,
          targetItemId: prize.itemId,
          currency: shared.currency || undefined
        }
      };
    }
    return {
      path: "/api/play/upgrader/play",
      body: {
        clientActionId: App.newActionId(),
        wagerMinor: state.quote.wagerMinor,
        chanceBps: state.chanceBps,
        targetItemId: prize.itemId,
        currency: shared.currency || undefined,
        locale: shared.locale || undefined
      }
    };
  }

  /** Send one play; on a lost answer re-send the same action (same clientActionId). */
  function sendPlay(action) {
    var attempt = 0;
    function once() {
      return App.api("POST", action.path, action.body).catch(function (error) {
        var retriable = error.code === "NETWORK_ERROR" || error.code === "ACTION_IN_PROGRESS" ||
          error.code === "OUTCOME_UNKNOWN";
        if (retriable && attempt < PLAY_RETRIES) {
          attempt += 1;
          return App.sleep(400 * attempt).then(once);
        }
        throw error;
      });
    }
    return once();
  }

  function play() {
    if (shared.busy) {
      return;
    }
    var action = state.pending || buildPlay();
    state.pending = action;
    shared.busy = true;
    App.hideNotice();
    setResult("", "");
    setControlsDisabled(true);
    renderPlayButton();
    App.gauge.spinStart();
    var settled = false;
    sendPlay(action).then(
      function (answer) {
        state.pending = null;
        settled = true;
        return App.gauge.land(answer.round.rolledBps).then(function () {
          showOutcome(answer);
        });
      },
      function (error) {
        // A lost answer or a wallet that did not answer: the same action may be retried
        // (after OUTCOME_UNKNOWN it must be: the retry tells what happened).
        var keep = error.code === "NETWORK_ERROR" || error.code === "WALLET_UNAVAILABLE" ||
          error.code === "ACTION_IN_PROGRESS" || error.code === "SERVICE_UNAVAILABLE" ||
          error.code === "OUTCOME_UNKNOWN";
        if (!keep) {
          state.pending = null;
        }
        App.gauge.reset();
        if (error.body && typeof error.body.balanceAfterMinor === "number") {
          App.setBalance(error.body.balanceAfterMinor, state.quote && state.quote.currency);
        }
        setResult("error", error.message + (state.pending ? " Press Retry to send it again." : ""));
        if (error.body && error.body.round) {
          App.emit("round-refused", error.body.round);
        }
      }
    ).then(function () {
      shared.busy = false;
      setControlsDisabled(false);
      if (!settled) {
        App.gauge.render(state.chanceBps); // a settled round's roll stays in the gauge
      }
      renderPlayButton();
    });
  }

  function setControlsDisabled(disabled) {
    ["wager", "wager-min", "wager-half", "wager-double"].forEach(function (id) {
      $(id).disabled = disabled;
    });
    Array.prototype.forEach.call(
      document.querySelectorAll("#chances button, #modes button, #prizes button, .stake-toggle"),
      function (b) {
        b.disabled = disabled;
      }
    );
  }

  function showOutcome(answer) {
    var round = answer.round;
    var target = round.target;
    App.imageFor(target.itemId, target.imageUrl);
    if (typeof answer.balanceAfterMinor === "number") {
      App.setBalance(answer.balanceAfterMinor, round.currency);
    }
    var rolled = Money.rollPercent(round.rolledBps);
    var needed = Money.percent(round.chanceBps);
    if (round.isWin) {
      setResult("win", "You won " + target.name + " (" +
        App.money(target.valueMinor, target.currency) + ")! Rolled " + rolled + ", under " +
        needed + ". It is in your inventory.");
    } else {
      setResult("loss", "Missed: rolled " + rolled + ", needed under " + needed + ". Stake " +
        App.money(round.betMinor, round.currency) + " spent.");
    }
    App.gauge.showOutcome(round);
    App.notifyParent({ type: "upgrader:round-settled", publicId: round.publicId });
    if (state.mode === "items") {
      state.stakeIds = [];
      requestQuote(0);
    }
    App.emit("round-settled", round);
  }

  /* ------------------------------------------------------------------ stake and mode */

  /** The inventory's "Stake" box on each item still in it, in items mode. */
  function stakeControl(item, actions) {
    if (state.mode !== "items") {
      return;
    }
    var label = el("label", "stake-label");
    var box = el("input", "stake-toggle");
    box.type = "checkbox";
    box.checked = state.stakeIds.indexOf(item.inventoryItemId) >= 0;
    box.disabled = shared.busy;
    box.addEventListener("change", function () {
      toggleStake(item.inventoryItemId, box.checked);
    });
    label.appendChild(box);
    label.appendChild(document.createTextNode(" Stake"));
    actions.appendChild(label);
  }

  function toggleStake(id, on) {
    var index = state.stakeIds.indexOf(id);
    if (on && index < 0) {
      state.stakeIds.push(id);
    } else if (!on && index >= 0) {
      state.stakeIds.splice(index, 1);
    } else {
      return;
    }
    state.pending = null;
    renderStakeTotal();
    requestQuote(0);
  }

  /** Keep only staked items that are still open; re-quote when one went away. */
  function inventoryLoaded(items) {
    var open = {};
    items.forEach(function (item) {
      if (item.state === "unresolved" && !item.held) {
        open[item.inventoryItemId] = true;
      }
    });
    var kept = state.stakeIds.filter(function (id) {
      return open[id];
    });
    if (kept.length !== state.stakeIds.length) {
      state.stakeIds = kept;
      renderStakeTotal();
      requestQuote(0);
    }
  }

  function selectMode(mode) {
    if (shared.busy || mode === state.mode) {
      return;
    }
    state.mode = mode;
    state.pending = null;
    setResult("", "");
    App.hideNotice();
    state.quote = null;
    state.selectedItemId = null;
    renderMode();
    App.renderInventory();
    if (mode === "items") {
      App.selectTab("inventory");
    }
    requestQuote(0);
  }

  function stepWager(factor) {
    var c = config();
    var parsed = Money.parse($("wager").value, shared.currency);
    var minor = parsed.error ? c.minWagerMinor : parsed.minor;
    minor = factor === "min" ? c.minWagerMinor : Math.floor(minor * factor);
    setWager(Math.max(c.minWagerMinor, Math.min(c.maxWagerMinor, minor)));
    state.pending = null;
    requestQuote(0);
  }

  function setWager(minor) {
    $("wager").value = Money.majorText(minor, Money.exponentOf(shared.currency));
  }

  /* ------------------------------------------------------------------ the screen */

  function wire() {
    $("play").addEventListener("click", play);
    $("wager").addEventListener("input", function () {
      state.pending = null;
      requestQuote();
    });
    $("wager").addEventListener("change", function () {
      var parsed = Money.parse($("wager").value, shared.currency);
      if (!parsed.error) {
        setWager(parsed.minor);
      }
    });
    [["wager-min", "min"], ["wager-half", 0.5], ["wager-double", 2]].forEach(function (pair) {
      $(pair[0]).addEventListener("click", function () {
        stepWager(pair[1]);
      });
    });
    Array.prototype.forEach.call(document.querySelectorAll("#modes [data-mode]"), function (b) {
      b.addEventListener("click", function () {
        selectMode(b.getAttribute("data-mode"));
      });
    });
    App.addItemControl(stakeControl);
    App.on("inventory", inventoryLoaded);
    App.on("item-gone", function (id) {
      toggleStake(id, false);
    });
    App.on("inventory-unavailable", function () {
      state.mode = "balance";
      renderMode();
    });
  }

  /** After the session: the first wager is 10 major units (within the limits). */
  function start() {
    var c = shared.config;
    state.mode = c.modes.balance ? "balance" : "items";
    state.chanceBps = c.defaultChanceBps;
    $("currency-code").textContent = shared.currency;
    var firstWager = Math.max(c.minWagerMinor, 10 * Math.pow(10, Money.exponentOf(shared.currency)));
    setWager(Math.min(firstWager, c.maxWagerMinor));
    renderChances();
    renderWagerLimits();
    App.gauge.render(state.chanceBps);
    App.gauge.reset();
    renderMode();
    return loadQuote();
  }

  U.renderPlayButton = renderPlayButton;
  U.renderWagerLimits = renderWagerLimits;
  U.renderStakeTotal = renderStakeTotal;

  App.registerScreen("upgrader", {
    title: "Upgrader",
    wire: wire,
    start: start,
    currency: function (session) {
      return session.config.currency;
    },
    refusal: function (session) {
      return session.config && session.config.available ? null
        : "The Upgrader is not available right now: no win chance can be offered.";
    }
  });
})(window.GameApp);
