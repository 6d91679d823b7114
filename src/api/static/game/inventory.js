/*
 * The Inventory tab: the player's won items, their state in words, cash back. A game
 * screen adds its own controls to each item still in the inventory with
 * GameApp.addItemControl(function (item, actions) {...}) (the Upgrader adds "Stake").
 * After each load it emits "inventory" with the items; "inventory-unavailable" when the
 * platform has no inventory routes.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var state = App.state;
  var controls = [];
  var items = [];

  function addItemControl(control) {
    controls.push(control);
  }

  function refreshInventory() {
    if (!state.inventoryAvailable) {
      return Promise.resolve();
    }
    var openOnly = $("inventory-open-only").checked;
    return App.api("GET", "/api/play/inventory" +
      App.query({ state: openOnly ? "unresolved" : null })).then(
      function (answer) {
        items = answer.items || [];
        App.emit("inventory", items);
        renderInventory();
      },
      function (error) {
        if (error.code === "NOT_FOUND" || error.status === 404 || error.status === 405) {
          state.inventoryAvailable = false;
          App.emit("inventory-unavailable");
          showInventoryMessage("The inventory is not available on this platform yet.");
          return;
        }
        showInventoryMessage(error.message);
      }
    );
  }

  function showInventoryMessage(text) {
    $("inventory").textContent = "";
    $("inventory-message").textContent = text;
    $("inventory-message").hidden = false;
  }

  function renderInventory() {
    var list = $("inventory");
    list.textContent = "";
    if (!items.length) {
      showInventoryMessage($("inventory-open-only").checked
        ? "Nothing in your inventory yet. Win a prize and it shows up here."
        : "You have not won any items yet.");
      return;
    }
    $("inventory-message").hidden = true;
    items.forEach(function (item) {
      list.appendChild(itemRow(item));
    });
  }

  function itemRow(item) {
    var row = el("li", "inv-item");
    row.setAttribute("data-inventory-id", String(item.inventoryItemId));
    row.setAttribute("data-state", item.state);
    var img = el("img");
    img.width = 44;
    img.height = 44;
    App.setImage(img, item.itemId, null, "");
    row.appendChild(img);
    var text = el("div", "inv-text");
    text.appendChild(el("span", "inv-name", item.name));
    var detail = App.money(item.valueMinor, item.currency);
    if (item.cashbackMinor !== null && item.cashbackMinor !== undefined) {
      detail += " \u00b7 cash back " + App.money(item.cashbackMinor, item.currency);
    } else if (item.state === "unresolved" && !item.held) {
      detail += " \u00b7 no cash back";
    }
    text.appendChild(el("span", "inv-detail", detail));
    row.appendChild(text);
    var badge = el("span", "badge " + item.state + (item.held ? " held" : ""),
      App.itemStateWords(item));
    row.appendChild(badge);
    var actions = el("div", "inv-actions");
    if (item.state === "unresolved" && !item.held) {
      controls.forEach(function (control) {
        control(item, actions);
      });
      if (item.cashbackMinor !== null && item.cashbackMinor !== undefined) {
        var cash = el("button", "secondary small", "Cash back");
        cash.type = "button";
        cash.addEventListener("click", function () {
          cashout(item, cash);
        });
        actions.appendChild(cash);
      }
    }
    row.appendChild(actions);
    return row;
  }

  // the items' ids -> the body of a cash-back whose outcome is not known yet: the next
  // press asks again with the same action (a new one would find the items held)
  var unsettledCashouts = {};

  /**
   * Cash back items ({inventoryItemId, name}, at most 20): resolves to the answer, or
   * rejects with the error, which is shown. Used by this tab and by a game's won items.
   */
  function cashOut(list) {
    var ids = list.map(function (item) {
      return item.inventoryItemId;
    });
    var key = ids.slice().sort().join(",");
    var body = unsettledCashouts[key] ||
      { clientActionId: App.newActionId(), inventoryItemIds: ids };
    unsettledCashouts[key] = body;
    return App.api("POST", "/api/play/cashout", body).then(
      function (answer) {
        delete unsettledCashouts[key];
        if (typeof answer.balanceAfterMinor === "number") {
          App.setBalance(answer.balanceAfterMinor, answer.currency);
        }
        var what = list.length === 1 ? list[0].name : list.length + " items";
        App.showNotice("Cashed back " + what + ": " +
          App.money(answer.creditedMinor, answer.currency) +
          " credited to your casino balance.", "success");
        App.notifyParent({ type: "upgrader:cashout" });
        ids.forEach(function (id) {
          App.emit("item-gone", id);
        });
        refreshInventory();
        return answer;
      },
      function (error) {
        var unknown = error.code === "OUTCOME_UNKNOWN" || error.code === "NETWORK_ERROR" ||
          error.code === "ACTION_IN_PROGRESS";
        if (!unknown) {
          delete unsettledCashouts[key];
        }
        App.showNotice(error.message, "error");
        throw error;
      }
    );
  }

  function cashout(item, button) {
    button.disabled = true;
    cashOut([item]).catch(function () {
      button.disabled = false;
    });
  }

  function wireInventory() {
    $("inventory-open-only").addEventListener("change", refreshInventory);
    $("inventory-refresh").addEventListener("click", refreshInventory);
    App.on("round-settled", refreshInventory);
    // Items carry no image: the rounds that won them do. Draw again once they are known.
    App.on("images-learned", function () {
      if (items.length) {
        renderInventory();
      }
    });
  }

  App.addItemControl = addItemControl;
  App.cashOut = cashOut;
  App.refreshInventory = refreshInventory;
  App.renderInventory = renderInventory;
  App.wireInventory = wireInventory;
})(window.GameApp);
