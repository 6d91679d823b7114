/*
 * The Upgrader's prizes: the quote for the current stake and chance (the target band and
 * the prizes in it), the prize grid and the target card. Part of the Upgrader screen
 * (upgrader.js, loaded after this file), whose state is App.upgrader.state.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var Money = App.Money;
  var shared = App.state;
  var U = (App.upgrader = {});

  var state = (U.state = {
    mode: "balance",
    wagerMinor: null,
    chanceBps: null,
    quote: null, // the last prizes answer for the current selection
    selectedItemId: null,
    stakeIds: [],
    pending: null, // a play sent whose answer never came: {path, body}
    quoteSeq: 0,
    quoteTimer: null,
    quoteStale: false
  });

  function config() {
    return (state.quote && state.quote.config) || shared.config;
  }

  function selectedPrize() {
    var prizes = (state.quote && state.quote.prizes) || [];
    for (var i = 0; i < prizes.length; i++) {
      if (prizes[i].itemId === state.selectedItemId) {
        return prizes[i];
      }
    }
    return null;
  }

  function renderTarget() {
    var prize = selectedPrize();
    if (prize) {
      App.setImage($("target-image"), prize.itemId, prize.imageUrl, prize.name);
      $("target-name").textContent = prize.name;
      $("target-value").textContent = App.money(prize.valueMinor, prize.currency);
    } else {
      $("target-image").src = App.DEFAULT_IMAGE;
      $("target-name").textContent = "No prize selected";
      $("target-value").textContent = "";
    }
    U.renderPlayButton();
  }

  function renderPrizes() {
    var quote = state.quote;
    var grid = $("prizes");
    grid.textContent = "";
    var message = $("prizes-message");
    if (!quote) {
      $("band").textContent = "";
      return;
    }
    $("band").textContent = "Target band " +
      App.money(quote.targetBand.lowerMinor, quote.currency) + " \u2013 " +
      App.money(quote.targetBand.upperMinor, quote.currency);
    message.hidden = quote.prizes.length > 0;
    message.textContent = "No prize falls in this band. Change the wager or the chance.";
    quote.prizes.forEach(function (prize) {
      var card = el("button", "prize");
      card.type = "button";
      card.setAttribute("role", "radio");
      card.setAttribute("data-item-id", String(prize.itemId));
      card.setAttribute("aria-checked", String(prize.itemId === state.selectedItemId));
      var img = el("img");
      img.width = 64;
      img.height = 64;
      img.loading = "lazy";
      App.setImage(img, prize.itemId, prize.imageUrl, "");
      card.appendChild(img);
      card.appendChild(el("span", "prize-name", prize.name));
      card.appendChild(el("span", "prize-value", App.money(prize.valueMinor, prize.currency)));
      card.addEventListener("click", function () {
        if (shared.busy) {
          return;
        }
        state.selectedItemId = prize.itemId;
        state.pending = null;
        Array.prototype.forEach.call(grid.children, function (child) {
          child.setAttribute("aria-checked", String(child === card));
        });
        renderTarget();
      });
      grid.appendChild(card);
    });
  }

  /* ------------------------------------------------------------------ quotes (prizes) */

  function requestQuote(delay) {
    state.quoteStale = true;
    U.renderPlayButton();
    clearTimeout(state.quoteTimer);
    state.quoteTimer = setTimeout(loadQuote, delay === undefined ? 250 : delay);
  }

  function quotePath() {
    if (state.mode === "items") {
      return "/api/play/upgrader/prizes-by-items" + App.query({
        stakeItemIds: state.stakeIds,
        chanceBps: state.chanceBps,
        currency: shared.currency,
        locale: shared.locale
      });
    }
    return "/api/play/upgrader/prizes" + App.query({
      wagerMinor: state.wagerMinor,
      chanceBps: state.chanceBps,
      currency: shared.currency,
      locale: shared.locale
    });
  }

  /** No request to make: show why (no stake, a wager that does not parse). */
  function noQuote(text) {
    state.quoteStale = false;
    state.quote = null;
    state.selectedItemId = null;
    renderPrizes();
    showPrizesError(text);
    return Promise.resolve();
  }

  function loadQuote() {
    var seq = ++state.quoteSeq;
    if (state.mode === "items") {
      U.renderStakeTotal();
      if (!state.stakeIds.length) {
        return noQuote("Stake one or more items to see the prizes.");
      }
    } else {
      var parsed = Money.parse($("wager").value, shared.currency);
      if (parsed.error) {
        return noQuote(parsed.error);
      }
      state.wagerMinor = parsed.minor;
    }
    $("prizes").setAttribute("aria-busy", "true");
    return App.api("GET", quotePath()).then(
      function (quote) {
        if (seq !== state.quoteSeq) {
          return;
        }
        state.quoteStale = false;
        $("prizes").removeAttribute("aria-busy");
        state.quote = quote;
        var still = quote.prizes.some(function (p) {
          return p.itemId === state.selectedItemId;
        });
        if (!still) {
          state.selectedItemId = quote.prizes.length ? quote.prizes[0].itemId : null;
        }
        renderPrizes();
        U.renderWagerLimits();
        U.renderStakeTotal();
        renderTarget();
      },
      function (error) {
        if (seq !== state.quoteSeq) {
          return;
        }
        $("prizes").removeAttribute("aria-busy");
        noQuote(error.message);
      }
    );
  }

  function showPrizesError(text) {
    $("band").textContent = "";
    $("prizes-message").textContent = text;
    $("prizes-message").hidden = false;
    renderTarget();
  }

  U.config = config;
  U.selectedPrize = selectedPrize;
  U.renderTarget = renderTarget;
  U.renderPrizes = renderPrizes;
  U.requestQuote = requestQuote;
  U.loadQuote = loadQuote;
})(window.GameApp);
