/*
 * The box screen's won items, once the reels have landed: each item with its value and
 * what it would cash back, and two choices per item and for all of them: cash back (the
 * player cash-back route, POST /api/play/cashout, through the Inventory tab's cashOut) or
 * keep (nothing is sent: a won item is in the inventory from the moment it is won, and
 * stays there). An item cashed back from the Inventory tab meanwhile shows as cashed
 * back here too.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var CASHOUT_MAX = 20; // inventoryItemIds per cash-back request
  var won = []; // [{item (wonItem), choice: null | "kept" | "cashed_back", row}]

  function cashable(entry) {
    return entry.choice === null && entry.item.cashbackMinor !== null &&
      entry.item.cashbackMinor !== undefined;
  }

  function render() {
    var open = won.filter(cashable);
    var undecided = won.filter(function (entry) {
      return entry.choice === null;
    });
    var total = open.reduce(function (sum, entry) {
      return sum + entry.item.cashbackMinor;
    }, 0);
    var currency = won.length ? won[0].item.currency : null;
    $("won-cashback-all").hidden = open.length === 0;
    $("won-cashback-all").textContent = open.length === 1 && undecided.length === 1
      ? "Cash back " + App.money(total, currency)
      : "Cash back all " + App.money(total, currency);
    $("won-keep-all").hidden = undecided.length === 0;
    $("won-keep-all").textContent = undecided.length === 1 ? "Keep it" : "Keep all";
    won.forEach(renderEntry);
  }

  function renderEntry(entry) {
    var row = entry.row;
    row.setAttribute("data-choice", entry.choice || "open");
    var actions = row.querySelector(".won-actions");
    actions.textContent = "";
    if (entry.choice === "cashed_back") {
      actions.appendChild(el("span", "badge cashed_back", "cashed back"));
      return;
    }
    if (entry.choice === "kept") {
      actions.appendChild(el("span", "badge unresolved", "in your inventory"));
      return;
    }
    if (won.length === 1) {
      return; // one item: the choices under the list are its own
    }
    if (cashable(entry)) {
      var cash = el("button", "secondary small", "Cash back " +
        App.money(entry.item.cashbackMinor, entry.item.currency));
      cash.type = "button";
      cash.setAttribute("data-action", "cashback");
      cash.addEventListener("click", function () {
        cashBack([entry], cash);
      });
      actions.appendChild(cash);
    }
    var keep = el("button", "secondary small", "Keep");
    keep.type = "button";
    keep.setAttribute("data-action", "keep");
    keep.addEventListener("click", function () {
      entry.choice = "kept";
      render();
    });
    actions.appendChild(keep);
  }

  function itemRow(item) {
    var row = el("li", "won-item " + App.reels.rarity(item.odds));
    row.setAttribute("data-inventory-id", String(item.inventoryItemId));
    row.setAttribute("data-item-id", String(item.itemId));
    var img = el("img");
    img.width = 48;
    img.height = 48;
    App.setImage(img, item.itemId, item.imageUrl, "");
    row.appendChild(img);
    var text = el("div", "won-text");
    text.appendChild(el("span", "won-name", item.name));
    var detail = App.money(item.valueMinor, item.currency);
    detail += item.cashbackMinor === null || item.cashbackMinor === undefined
      ? " \u00b7 no cash back"
      : " \u00b7 cash back " + App.money(item.cashbackMinor, item.currency);
    text.appendChild(el("span", "won-detail", detail));
    row.appendChild(text);
    row.appendChild(el("div", "won-actions"));
    return row;
  }

  /** Cash back entries, at most CASHOUT_MAX per request, one request after the other. */
  function cashBack(entries, button) {
    var buttons = [button, $("won-cashback-all"), $("won-keep-all")];
    buttons.forEach(function (b) {
      b.disabled = true;
    });
    var chunks = [];
    for (var i = 0; i < entries.length; i += CASHOUT_MAX) {
      chunks.push(entries.slice(i, i + CASHOUT_MAX));
    }
    var chain = Promise.resolve();
    chunks.forEach(function (chunk) {
      chain = chain.then(function () {
        return App.cashOut(chunk.map(function (entry) {
          return entry.item;
        })).then(function () {
          chunk.forEach(function (entry) {
            entry.choice = "cashed_back";
          });
        });
      });
    });
    return chain.then(null, function () {
      /* shown by cashOut; the items not cashed back keep their buttons */
    }).then(function () {
      buttons.forEach(function (b) {
        b.disabled = false;
      });
      render();
    });
  }

  /** Show the won items of an open answer (``box``: the version, for the odds). */
  function show(wonItems, box) {
    var list = $("won-items");
    list.textContent = "";
    won = wonItems.map(function (item) {
      var odds = null;
      box.items.forEach(function (line) {
        if (line.itemId === item.itemId) {
          odds = line;
        }
      });
      var entry = { item: Object.assign({ odds: odds }, item), choice: null, row: null };
      entry.row = itemRow(entry.item);
      list.appendChild(entry.row);
      return entry;
    });
    var value = wonItems.reduce(function (sum, item) {
      return sum + item.valueMinor;
    }, 0);
    var currency = wonItems.length ? wonItems[0].currency : null;
    $("won-title").textContent = (wonItems.length === 1 ? "You won " + wonItems[0].name
      : "You won " + wonItems.length + " items") + " worth " + App.money(value, currency);
    $("won").hidden = false;
    render();
  }

  function clear() {
    won = [];
    $("won").hidden = true;
    $("won-items").textContent = "";
  }

  function wire() {
    $("won-cashback-all").addEventListener("click", function () {
      cashBack(won.filter(cashable), $("won-cashback-all"));
    });
    $("won-keep-all").addEventListener("click", function () {
      won.forEach(function (entry) {
        if (entry.choice === null) {
          entry.choice = "kept";
        }
      });
      render();
      App.showNotice("Kept: your items are in your inventory.", "success");
    });
    App.on("item-gone", function (inventoryItemId) {
      var changed = false;
      won.forEach(function (entry) {
        if (entry.item.inventoryItemId === inventoryItemId && entry.choice !== "cashed_back") {
          entry.choice = "cashed_back";
          changed = true;
        }
      });
      if (changed) {
        render();
      }
    });
  }

  App.boxWon = { show: show, clear: clear, wire: wire };
})(window.GameApp);
