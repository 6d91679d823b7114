/*
 * The game app's shared core. Plain script, no build step, no inline code (CSP script-src
 * 'self'). The app is a few files loaded in order (index.html), each adding to one object,
 * window.GameApp:
 *
 *   core.js            helpers, the API client, notices, words, events, screens and tabs
 *   session.js         the session (launch token, reload) and the casino balance
 *   inventory.js       the Inventory tab (cash back; screens add their own item controls)
 *   history.js         the History tab (a row per round, verification in the browser)
 *   fairness-tab.js    the Fairness tab (seeds, rotation)
 *   gauge.js           the Upgrader's gauge
 *   upgrader-prizes.js the Upgrader's quote, prize grid and target
 *   upgrader.js        the Upgrader screen (registers itself as a game screen)
 *   box-verify.js      box versions by id (cached) and a box round's check in the browser
 *   box-reels.js       the box screen's reels: a strip per box that lands on its item
 *   box-won.js         the box screen's won items: cash back or keep
 *   boxes.js           the box screen (registers itself as the "boxes" game screen)
 *   app.js             boot: the session, then the launched game's screen and the tabs
 *
 * A game screen registers itself with GameApp.registerScreen(name, screen) and talks to
 * the panels through events (GameApp.on / GameApp.emit): "round-settled" refreshes the
 * history, the inventory and the fairness tab, "round-refused" the history; "inventory"
 * tells screens which items are open, "item-gone" that one was cashed back. A game is one
 * more screen script and one more <div class="screen" data-screen="KEY"> in index.html,
 * KEY being the game key a launch names (the session plays that game only).
 */
(function () {
  "use strict";

  var Money = window.UpgraderMoney;
  var DEFAULT_IMAGE = "/game/assets/items/unknown.svg";

  var MESSAGES = {
    NETWORK_ERROR: "The game server could not be reached. Check your connection and try again.",
    SESSION_INVALID: "Your game session has ended. Reopen the game from the casino site.",
    LAUNCH_TOKEN_INVALID:
      "This game link was already used or has expired. Reopen the game from the casino site.",
    INSUFFICIENT_FUNDS: "Your casino balance is too low for this wager.",
    PLAYER_BLOCKED: "Your casino account cannot play right now. Contact the casino.",
    WALLET_REFUSED: "Your casino did not accept this action.",
    WALLET_UNAVAILABLE: "The casino wallet did not answer, so nothing was charged.",
    SERVICE_UNAVAILABLE: "The game is briefly unavailable. Please try again in a moment.",
    OUTCOME_UNKNOWN: "This is still being confirmed. Try again in a moment to see the result.",
    GAME_DISABLED: "This game is not enabled for this casino.",
    UPGRADER_MODE_DISABLED: "This stake mode is switched off by the casino.",
    UPGRADER_WAGER_OUT_OF_RANGE: "The wager is outside the allowed range.",
    UPGRADER_CHANCE_INVALID: "That win chance is not offered.",
    UPGRADER_PRIZE_OUT_OF_RANGE: "That prize is no longer in the target band. Pick another.",
    UPGRADER_ITEM_NOT_OWNED: "One of the staked items is no longer available to stake.",
    UNSUPPORTED_CURRENCY: "This currency is not supported by the casino.",
    IDEMPOTENCY_CONFLICT: "This action was already sent with different details.",
    ACTION_IN_PROGRESS: "Your previous action is still being processed.",
    BOX_NOT_FOUND: "This box is not offered any more.",
    BOX_VERSION_CHANGED: "The box's contents have just changed. Check the new odds, then open again.",
    BOX_UNAVAILABLE: "This box cannot be opened right now: one of its items is no longer available.",
    ITEM_NOT_AVAILABLE: "That item can no longer be cashed back.",
    ITEM_NOT_CASHABLE: "That item cannot be cashed back.",
    VALIDATION_ERROR: "The request was not accepted.",
    NOT_FOUND: "Not found."
  };

  /* What a player reads for an owned item's state (the API's states are codes). */
  var ITEM_STATES = {
    unresolved: "in your inventory",
    cancelled: "cancelled by the casino",
    consumed: "staked",
    cashed_back: "cashed back",
    shipping_requested: "shipping requested",
    shipped: "shipped"
  };

  /* ------------------------------------------------------------------ helpers */

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = text;
    }
    return node;
  }

  function sleep(ms) {
    return new Promise(function (resolve) {
      setTimeout(resolve, ms);
    });
  }

  function newActionId() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      return window.crypto.randomUUID();
    }
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    var hex = Array.prototype.map.call(bytes, function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("");
    return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20),
      hex.slice(20)].join("-");
  }

  function ApiError(code, status, message, body) {
    this.name = "ApiError";
    this.code = code;
    this.status = status;
    this.serverMessage = message || "";
    this.body = body || null;
    this.message = describeError(code, message);
  }
  ApiError.prototype = Object.create(Error.prototype);

  function describeError(code, serverMessage) {
    var words = MESSAGES[code];
    if (code === "VALIDATION_ERROR" && serverMessage) {
      words = "The request was not accepted: " + serverMessage + ".";
    } else if (!words) {
      words = serverMessage ? serverMessage.charAt(0).toUpperCase() + serverMessage.slice(1) +
        "." : "Something went wrong.";
    }
    return words + " (" + code + ")";
  }

  /* ------------------------------------------------------------------ state */

  var state = {
    token: null,
    config: null, // session/init's game config
    player: null,
    currency: null,
    locale: null,
    balanceMinor: null,
    balanceCurrency: null,
    initialBalance: null, // session/init's {balanceMinor, currency}, or null
    busy: false, // a round is being played: panels keep their buttons still
    inventoryAvailable: true,
    fairness: null,
    images: {}
  };

  /* ------------------------------------------------------------------ words */

  function money(minor, currency) {
    return Money.format(minor, currency || state.currency, state.locale);
  }

  function itemStateWords(item) {
    if (item.state === "unresolved" && item.held) {
      return "cashing back\u2026";
    }
    return ITEM_STATES[item.state] || String(item.state).replace(/_/g, " ");
  }

  function sameDay(a, b) {
    return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() &&
      a.getDate() === b.getDate();
  }

  function dateFormat(options) {
    try {
      return new Intl.DateTimeFormat(state.locale || undefined, options);
    } catch (ignored) {
      return new Intl.DateTimeFormat(undefined, options);
    }
  }

  /**
   * A <time> for an ISO instant in the player's time zone: the time of day for today,
   * the date and time for another day; the full date and time in its title.
   */
  function timeElement(iso) {
    var when = new Date(iso);
    if (!iso || isNaN(when.getTime())) {
      return el("span", null, "\u2014");
    }
    var clock = { hour: "2-digit", minute: "2-digit", second: "2-digit" };
    var options = sameDay(when, new Date())
      ? clock
      : { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" };
    var node = el("time", null, dateFormat(options).format(when));
    node.setAttribute("datetime", iso);
    node.title = dateFormat({ dateStyle: "full", timeStyle: "long" }).format(when);
    return node;
  }

  /* ------------------------------------------------------------------ images */

  /** The image of an item: ``url`` (remembered), else the one last seen, else a box. */
  function imageFor(itemId, url) {
    if (url) {
      state.images[itemId] = url;
      return url;
    }
    return state.images[itemId] || DEFAULT_IMAGE;
  }

  function setImage(img, itemId, url, alt) {
    img.src = imageFor(itemId, url);
    img.alt = alt || "";
    img.addEventListener("error", function onError() {
      img.removeEventListener("error", onError);
      img.src = DEFAULT_IMAGE;
    });
  }

  /* ------------------------------------------------------------------ events */

  var handlers = {};

  function on(name, handler) {
    (handlers[name] = handlers[name] || []).push(handler);
  }

  function emit(name, data) {
    (handlers[name] || []).forEach(function (handler) {
      handler(data);
    });
  }

  /* ------------------------------------------------------------------ API */

  function api(method, path, body) {
    var headers = { Accept: "application/json" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
    }
    if (state.token) {
      headers.Authorization = "Bearer " + state.token;
    }
    return fetch(path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer"
    }).then(
      function (response) {
        return response.text().then(function (text) {
          var data = null;
          try {
            data = text ? JSON.parse(text) : null;
          } catch (ignored) {
            data = null;
          }
          if (response.ok) {
            return data;
          }
          var error = data && data.error ? data.error : {};
          var failure = new ApiError(
            error.code || "HTTP_" + response.status,
            response.status,
            error.message || response.statusText,
            data
          );
          if (failure.code === "SESSION_INVALID") {
            App.sessionEnded();
          }
          throw failure;
        });
      },
      function () {
        throw new ApiError("NETWORK_ERROR", 0, "");
      }
    );
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (name) {
      var value = params[name];
      if (value === null || value === undefined || value === "") {
        return;
      }
      (Array.isArray(value) ? value : [value]).forEach(function (v) {
        parts.push(encodeURIComponent(name) + "=" + encodeURIComponent(String(v)));
      });
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  /* ------------------------------------------------------------------ notices */

  function showNotice(text, kind) {
    $("notice-text").textContent = text;
    $("notice").className = "notice " + (kind || "error");
    $("notice").hidden = false;
  }

  function hideNotice() {
    $("notice").hidden = true;
  }

  function showFatal(text) {
    $("app").setAttribute("data-state", "ended");
    $("boot").hidden = false;
    $("boot-text").textContent = text;
    $("game").hidden = true;
  }

  function notifyParent(message) {
    if (window.parent && window.parent !== window) {
      window.parent.postMessage(message, "*");
    }
  }

  /* ------------------------------------------------------------------ screens and tabs */

  var screens = {};

  /**
   * A game screen, named by its game key (session/init's game.key): {title,
   * currency(session) (the game's currency when the launch URL names none),
   * refusal(session) (optional: words when the game cannot be played), wire() (once,
   * after the session), start() (then; may return a promise), onShow() (optional, each
   * time it is shown)}; its markup is <div class="screen" data-screen="name">. Only the
   * launched game's screen is wired, started and shown.
   */
  function registerScreen(name, screen) {
    screens[name] = screen;
  }

  function selectTab(name) {
    Array.prototype.forEach.call(document.querySelectorAll(".tabs [data-tab]"), function (b) {
      var selected = b.getAttribute("data-tab") === name;
      b.setAttribute("aria-selected", String(selected));
      $("tab-" + b.getAttribute("data-tab")).hidden = !selected;
    });
  }

  var App = (window.GameApp = {
    Money: Money,
    state: state,
    screens: screens,
    DEFAULT_IMAGE: DEFAULT_IMAGE,
    $: $,
    el: el,
    sleep: sleep,
    newActionId: newActionId,
    money: money,
    itemStateWords: itemStateWords,
    timeElement: timeElement,
    imageFor: imageFor,
    setImage: setImage,
    on: on,
    emit: emit,
    api: api,
    query: query,
    showNotice: showNotice,
    hideNotice: hideNotice,
    showFatal: showFatal,
    notifyParent: notifyParent,
    registerScreen: registerScreen,
    selectTab: selectTab,
    ApiError: ApiError,
    MESSAGES: MESSAGES
  });
})();
