/*
 * The Upgrader game app. Plain script, no build step, no inline code (CSP script-src 'self').
 *
 * Boot: the launch URL carries ?launchToken=...; the app removes it from the address bar
 * at once (history.replaceState), exchanges it at POST /api/play/session/init and keeps
 * the session token in memory and sessionStorage only (never in a URL). Then every call
 * goes to /api/play/* with Authorization: Bearer.
 *
 * Plays carry a fresh clientActionId each (crypto.randomUUID); a play whose answer was
 * lost is re-sent with the SAME id, so the platform answers the original round and never
 * debits twice. A seed rotation carries one too. Every refusal is shown in words with its
 * code.
 */
(function () {
  "use strict";

  var Money = window.UpgraderMoney;
  var STORAGE_KEY = "upgrader.session.v1";
  var DEFAULT_IMAGE = "/game/assets/items/unknown.svg";
  var GAUGE_CIRCUMFERENCE = 2 * Math.PI * 80;
  var PLAY_RETRIES = 2;

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
    GAME_DISABLED: "The Upgrader is not enabled for this casino.",
    UPGRADER_MODE_DISABLED: "This stake mode is switched off by the casino.",
    UPGRADER_WAGER_OUT_OF_RANGE: "The wager is outside the allowed range.",
    UPGRADER_CHANCE_INVALID: "That win chance is not offered.",
    UPGRADER_PRIZE_OUT_OF_RANGE: "That prize is no longer in the target band. Pick another.",
    UPGRADER_ITEM_NOT_OWNED: "One of the staked items is no longer available to stake.",
    UNSUPPORTED_CURRENCY: "This currency is not supported by the casino.",
    IDEMPOTENCY_CONFLICT: "This action was already sent with different details.",
    ACTION_IN_PROGRESS: "Your previous upgrade is still being processed.",
    ITEM_NOT_AVAILABLE: "That item can no longer be cashed back.",
    ITEM_NOT_CASHABLE: "That item cannot be cashed back.",
    VALIDATION_ERROR: "The request was not accepted.",
    NOT_FOUND: "Not found."
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

  function money(minor, currency) {
    return Money.format(minor, currency || state.currency, state.locale);
  }

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

  /* ------------------------------------------------------------------ state */

  var state = {
    token: null,
    config: null,
    player: null,
    currency: null,
    locale: null,
    mode: "balance",
    wagerMinor: null,
    chanceBps: null,
    quote: null, // the last prizes answer for the current selection
    selectedItemId: null,
    stakeIds: [],
    inventory: [],
    inventoryAvailable: true,
    rounds: [],
    nextCursor: null,
    fairness: null,
    balanceMinor: null,
    balanceCurrency: null,
    initialBalance: null, // session/init's {balanceMinor, currency}, or null
    busy: false,
    pending: null, // a play sent whose answer never came: {path, body}
    cashouts: {}, // inventoryItemId -> the body of a cash-back whose outcome is not known yet
    quoteSeq: 0,
    quoteTimer: null,
    quoteStale: false,
    images: {},
    gaugeAngle: 0
  };

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
            sessionEnded();
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

  function sessionEnded() {
    state.token = null;
    try {
      sessionStorage.removeItem(STORAGE_KEY);
    } catch (ignored) {
      /* storage may be unavailable in a third-party frame */
    }
    showFatal(MESSAGES.SESSION_INVALID);
  }

  /* ------------------------------------------------------------------ session */

  function readLaunchParams() {
    var url = new URL(window.location.href);
    var launchToken = url.searchParams.get("launchToken");
    state.currency = url.searchParams.get("currency") || null;
    state.locale = url.searchParams.get("locale") || navigator.language || "en";
    if (launchToken !== null) {
      url.searchParams.delete("launchToken");
      history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    }
    return launchToken;
  }

  function saveSession(session) {
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
    } catch (ignored) {
      /* memory only */
    }
  }

  function loadSession() {
    try {
      var raw = sessionStorage.getItem(STORAGE_KEY);
      return raw ? JSON.parse(raw) : null;
    } catch (ignored) {
      return null;
    }
  }

  function startSession() {
    var launchToken = readLaunchParams();
    if (launchToken) {
      return api("POST", "/api/play/session/init", { launchToken: launchToken }).then(
        function (answer) {
          var session = {
            token: answer.sessionToken,
            player: answer.player,
            config: answer.game.config
          };
          saveSession(session);
          state.initialBalance = answer.balance || null; // not saved: it ages
          return session;
        }
      );
    }
    var saved = loadSession();
    if (saved && saved.token) {
      state.token = saved.token;
      return api("GET", "/api/play/fairness").then(function (fairness) {
        state.fairness = fairness;
        return saved;
      });
    }
    return Promise.reject(new ApiError(
      "NO_LAUNCH_TOKEN", 0,
      "open the game from the casino site: this address has no launch token"
    ));
  }

  /* ------------------------------------------------------------------ rendering: stage */

  function config() {
    return (state.quote && state.quote.config) || state.config;
  }

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
        if (state.busy || bps === state.chanceBps) {
          return;
        }
        state.chanceBps = bps;
        state.pending = null;
        setResult("", "");
        renderChances();
        renderGauge();
        requestQuote(0);
      });
      box.appendChild(button);
    });
  }

  function renderWagerLimits() {
    var c = config();
    $("wager-limits").textContent =
      "Min " + money(c.minWagerMinor, c.currency) + " \u00b7 Max " + money(c.maxWagerMinor, c.currency);
  }

  function renderGauge() {
    var chance = state.chanceBps || 0;
    var win = $("gauge-win");
    var length = (GAUGE_CIRCUMFERENCE * chance) / 10000;
    win.setAttribute("stroke-dasharray", length + " " + GAUGE_CIRCUMFERENCE);
    if (!state.busy) {
      $("gauge-label").textContent = Money.percent(chance);
      $("gauge-sub").textContent = "win chance";
    }
  }

  function setPointer(angle) {
    state.gaugeAngle = angle;
    $("gauge-pointer").setAttribute("transform", "rotate(" + (angle % 360) + " 100 100)");
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
      setImage($("target-image"), prize.itemId, prize.imageUrl, prize.name);
      $("target-name").textContent = prize.name;
      $("target-value").textContent = money(prize.valueMinor, prize.currency);
    } else {
      $("target-image").src = DEFAULT_IMAGE;
      $("target-name").textContent = "No prize selected";
      $("target-value").textContent = "";
    }
    renderPlayButton();
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
    $("band").textContent = "Target band " + money(quote.targetBand.lowerMinor, quote.currency) +
      " \u2013 " + money(quote.targetBand.upperMinor, quote.currency);
    if (!quote.prizes.length) {
      message.textContent = "No prize falls in this band. Change the wager or the chance.";
      message.hidden = false;
    } else {
      message.hidden = true;
    }
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
      setImage(img, prize.itemId, prize.imageUrl, "");
      card.appendChild(img);
      card.appendChild(el("span", "prize-name", prize.name));
      card.appendChild(el("span", "prize-value", money(prize.valueMinor, prize.currency)));
      card.addEventListener("click", function () {
        if (state.busy) {
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

  function renderPlayButton() {
    var button = $("play");
    var ready = !!selectedPrize() && !state.busy && !!state.token && config().available;
    if ((state.mode === "items" && !state.stakeIds.length) || state.quoteStale) {
      ready = false;
    }
    button.disabled = !ready;
    button.textContent = state.busy ? "Rolling\u2026" : state.pending ? "Retry" : "Upgrade";
  }

  function renderBalance() {
    $("balance").textContent = state.balanceMinor === null
      ? "\u2014"
      : money(state.balanceMinor, state.balanceCurrency);
  }

  function renderMode() {
    var modes = config().modes;
    Array.prototype.forEach.call(document.querySelectorAll("#modes [data-mode]"), function (b) {
      var mode = b.getAttribute("data-mode");
      b.setAttribute("aria-selected", String(mode === state.mode));
      b.hidden = mode === "items" ? !(modes.items && state.inventoryAvailable) : !modes.balance;
    });
    $("modes").hidden = !(modes.items && modes.balance && state.inventoryAvailable);
    $("wager-block").hidden = state.mode !== "balance";
    $("stake-block").hidden = state.mode !== "items";
    renderStakeTotal();
  }

  function renderStakeTotal() {
    var quote = state.quote;
    if (!state.stakeIds.length) {
      $("stake-total").textContent = "No items";
      $("stake-hint").textContent = "Tick unresolved items in your inventory below to stake them.";
    } else {
      $("stake-total").textContent = quote && quote.stake
        ? money(quote.stake.totalMinor, quote.stake.currency)
        : "\u2026";
      $("stake-hint").textContent = state.stakeIds.length + " item" +
        (state.stakeIds.length === 1 ? "" : "s") + " staked; they are spent on a win and on a miss.";
    }
  }

  /* ------------------------------------------------------------------ quotes (prizes) */

  function requestQuote(delay) {
    state.quoteStale = true;
    renderPlayButton();
    clearTimeout(state.quoteTimer);
    state.quoteTimer = setTimeout(loadQuote, delay === undefined ? 250 : delay);
  }

  function loadQuote() {
    var seq = ++state.quoteSeq;
    var path;
    if (state.mode === "items") {
      renderStakeTotal();
      if (!state.stakeIds.length) {
        state.quoteStale = false;
        state.quote = null;
        state.selectedItemId = null;
        renderPrizes();
        $("prizes-message").textContent = "Stake one or more items to see the prizes.";
        $("prizes-message").hidden = false;
        renderTarget();
        return Promise.resolve();
      }
      path = "/api/play/upgrader/prizes-by-items" + query({
        stakeItemIds: state.stakeIds,
        chanceBps: state.chanceBps,
        currency: state.currency,
        locale: state.locale
      });
    } else {
      var parsed = Money.parse($("wager").value, state.currency);
      if (parsed.error) {
        state.quoteStale = false;
        state.quote = null;
        renderPrizes();
        showPrizesError(parsed.error);
        return Promise.resolve();
      }
      state.wagerMinor = parsed.minor;
      path = "/api/play/upgrader/prizes" + query({
        wagerMinor: state.wagerMinor,
        chanceBps: state.chanceBps,
        currency: state.currency,
        locale: state.locale
      });
    }
    $("prizes").setAttribute("aria-busy", "true");
    return api("GET", path).then(
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
        renderWagerLimits();
        renderStakeTotal();
        renderTarget();
      },
      function (error) {
        if (seq !== state.quoteSeq) {
          return;
        }
        state.quoteStale = false;
        $("prizes").removeAttribute("aria-busy");
        state.quote = null;
        state.selectedItemId = null;
        renderPrizes();
        renderTarget();
        showPrizesError(error.message);
      }
    );
  }

  function showPrizesError(text) {
    $("band").textContent = "";
    $("prizes-message").textContent = text;
    $("prizes-message").hidden = false;
    renderTarget();
  }

  /* ------------------------------------------------------------------ play */

  function buildPlay() {
    var prize = selectedPrize();
    if (state.mode === "items") {
      return {
        path: "/api/play/upgrader/play-with-items",
        body: {
          clientActionId: newActionId(),
          stakeItemIds: state.stakeIds.slice(),
          chanceBps: state.chanceBps,
          targetItemId: prize.itemId,
          currency: state.currency || undefined
        }
      };
    }
    return {
      path: "/api/play/upgrader/play",
      body: {
        clientActionId: newActionId(),
        wagerMinor: state.quote.wagerMinor,
        chanceBps: state.chanceBps,
        targetItemId: prize.itemId,
        currency: state.currency || undefined,
        locale: state.locale || undefined
      }
    };
  }

  /** Send one play; on a lost answer re-send the same action (same clientActionId). */
  function sendPlay(action) {
    var attempt = 0;
    function once() {
      return api("POST", action.path, action.body).catch(function (error) {
        var retriable = error.code === "NETWORK_ERROR" || error.code === "ACTION_IN_PROGRESS" ||
          error.code === "OUTCOME_UNKNOWN";
        if (retriable && attempt < PLAY_RETRIES) {
          attempt += 1;
          return sleep(400 * attempt).then(once);
        }
        throw error;
      });
    }
    return once();
  }

  function play() {
    if (state.busy) {
      return;
    }
    var action = state.pending || buildPlay();
    state.pending = action;
    state.busy = true;
    hideNotice();
    setResult("", "");
    setControlsDisabled(true);
    renderPlayButton();
    spinStart();
    sendPlay(action).then(
      function (answer) {
        state.pending = null;
        return animateRoll(answer.round).then(function () {
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
        spinStop();
        setPointer(0);
        if (error.body && typeof error.body.balanceAfterMinor === "number") {
          setBalance(error.body.balanceAfterMinor, state.quote && state.quote.currency);
        }
        setResult("error", error.message + (state.pending ? " Press Retry to send it again." : ""));
        if (error.body && error.body.round) {
          refreshHistory();
        }
      }
    ).then(function () {
      state.busy = false;
      setControlsDisabled(false);
      renderGauge();
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

  /* The balance from the start: session/init's when it is in the game's currency, else
   * (a reload, another currency, a wallet that was slow at init) GET /api/play/balance.
   * A play's answer that arrives first wins: it is newer. */
  function loadBalance() {
    var known = state.initialBalance;
    if (known && known.currency === state.currency) {
      setBalance(known.balanceMinor, known.currency);
      return Promise.resolve();
    }
    return api("GET", "/api/play/balance" + query({ currency: state.currency })).then(
      function (answer) {
        if (state.balanceMinor === null) {
          setBalance(answer.balanceMinor, answer.currency);
        }
      },
      function () {
        /* the wallet did not answer: the balance shows after the first play */
      }
    );
  }

  function setBalance(minor, currency) {
    state.balanceMinor = minor;
    state.balanceCurrency = currency || state.currency;
    renderBalance();
  }

  function setResult(kind, text) {
    var box = $("result");
    box.className = "result" + (kind ? " " + kind : "");
    box.textContent = text;
  }

  function showOutcome(answer) {
    var round = answer.round;
    var target = round.target;
    imageFor(target.itemId, target.imageUrl);
    if (typeof answer.balanceAfterMinor === "number") {
      setBalance(answer.balanceAfterMinor, round.currency);
    }
    var rolled = Money.percent(round.rolledBps);
    var needed = Money.percent(round.chanceBps);
    if (round.isWin) {
      setResult("win", "You won " + target.name + " (" + money(target.valueMinor, target.currency) +
        ")! Rolled " + rolled + ", under " + needed + ". It is in your inventory.");
    } else {
      setResult("loss", "Missed: rolled " + rolled + ", needed under " + needed + ". Stake " +
        money(round.betMinor, round.currency) + " spent.");
    }
    $("gauge-label").textContent = rolled;
    $("gauge-sub").textContent = round.isWin ? "win" : "miss";
    $("gauge").setAttribute("data-outcome", round.isWin ? "win" : "loss");
    notifyParent({ type: "upgrader:round-settled", publicId: round.publicId });
    if (state.mode === "items") {
      state.stakeIds = [];
    }
    refreshHistory();
    refreshInventory().then(function () {
      requestQuote(0);
    });
    refreshFairness();
  }

  function notifyParent(message) {
    if (window.parent && window.parent !== window) {
      window.parent.postMessage(message, "*");
    }
  }

  /* ------------------------------------------------------------------ roll animation */

  var spinFrame = null;

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  function spinStart() {
    $("gauge").removeAttribute("data-outcome");
    $("gauge-label").textContent = "\u2026";
    $("gauge-sub").textContent = "rolling";
    if (reducedMotion()) {
      return;
    }
    var last = performance.now();
    function step(now) {
      setPointer(state.gaugeAngle + ((now - last) * 0.6));
      last = now;
      spinFrame = requestAnimationFrame(step);
    }
    spinFrame = requestAnimationFrame(step);
  }

  function spinStop() {
    if (spinFrame !== null) {
      cancelAnimationFrame(spinFrame);
      spinFrame = null;
    }
  }

  /** Land the pointer on the rolled position: 0..9999 maps clockwise from the top. */
  function animateRoll(round) {
    spinStop();
    var finalAngle = (round.rolledBps / 10000) * 360;
    if (reducedMotion()) {
      setPointer(finalAngle);
      return Promise.resolve();
    }
    var start = state.gaugeAngle % 360;
    var end = 720 + finalAngle;
    var duration = 1400;
    return new Promise(function (resolve) {
      var t0 = performance.now();
      function step(now) {
        var t = Math.min(1, (now - t0) / duration);
        var eased = 1 - Math.pow(1 - t, 3);
        setPointer(start + (end - start) * eased);
        if (t < 1) {
          requestAnimationFrame(step);
        } else {
          setPointer(finalAngle);
          resolve();
        }
      }
      requestAnimationFrame(step);
    });
  }

  /* ------------------------------------------------------------------ inventory */

  function refreshInventory() {
    if (!state.inventoryAvailable) {
      return Promise.resolve();
    }
    var openOnly = $("inventory-open-only").checked;
    return api("GET", "/api/play/inventory" + query({ state: openOnly ? "unresolved" : null }))
      .then(
        function (answer) {
          state.inventory = answer.items || [];
          var open = {};
          state.inventory.forEach(function (item) {
            if (item.state === "unresolved") {
              open[item.inventoryItemId] = true;
            }
          });
          state.stakeIds = state.stakeIds.filter(function (id) {
            return open[id];
          });
          renderInventory();
        },
        function (error) {
          if (error.code === "NOT_FOUND" || error.status === 404 || error.status === 405) {
            state.inventoryAvailable = false;
            state.mode = "balance";
            renderMode();
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
    if (!state.inventory.length) {
      showInventoryMessage($("inventory-open-only").checked
        ? "No unresolved items. Win a prize and it shows up here."
        : "Your inventory is empty.");
      return;
    }
    $("inventory-message").hidden = true;
    var itemsMode = state.mode === "items";
    state.inventory.forEach(function (item) {
      var row = el("li", "inv-item");
      row.setAttribute("data-inventory-id", String(item.inventoryItemId));
      row.setAttribute("data-state", item.state);
      var img = el("img");
      img.width = 44;
      img.height = 44;
      setImage(img, item.itemId, null, "");
      row.appendChild(img);
      var text = el("div", "inv-text");
      text.appendChild(el("span", "inv-name", item.name));
      var detail = money(item.valueMinor, item.currency);
      if (item.cashbackMinor !== null && item.cashbackMinor !== undefined) {
        detail += " \u00b7 cash back " + money(item.cashbackMinor, item.currency);
      } else {
        detail += " \u00b7 no cash back";
      }
      text.appendChild(el("span", "inv-detail", detail));
      row.appendChild(text);
      row.appendChild(el("span", "badge " + item.state, item.state.replace(/_/g, " ")));
      var actions = el("div", "inv-actions");
      if (item.state === "unresolved") {
        if (itemsMode) {
          var label = el("label", "stake-label");
          var box = el("input", "stake-toggle");
          box.type = "checkbox";
          box.checked = state.stakeIds.indexOf(item.inventoryItemId) >= 0;
          box.disabled = state.busy;
          box.addEventListener("change", function () {
            toggleStake(item.inventoryItemId, box.checked);
          });
          label.appendChild(box);
          label.appendChild(document.createTextNode(" Stake"));
          actions.appendChild(label);
        }
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
      list.appendChild(row);
    });
  }

  function toggleStake(id, on) {
    var index = state.stakeIds.indexOf(id);
    if (on && index < 0) {
      state.stakeIds.push(id);
    } else if (!on && index >= 0) {
      state.stakeIds.splice(index, 1);
    }
    state.pending = null;
    renderStakeTotal();
    requestQuote(0);
  }

  function cashout(item, button) {
    button.disabled = true;
    var id = item.inventoryItemId;
    // a cash-back whose outcome is not known yet is asked again with the same action
    var body = state.cashouts[id] || { clientActionId: newActionId(), inventoryItemIds: [id] };
    state.cashouts[id] = body;
    api("POST", "/api/play/cashout", body).then(
      function (answer) {
        delete state.cashouts[id];
        if (typeof answer.balanceAfterMinor === "number") {
          setBalance(answer.balanceAfterMinor, answer.currency);
        }
        showNotice("Cashed back " + item.name + ": " + money(answer.creditedMinor, answer.currency) +
          " credited to your casino balance.", "success");
        notifyParent({ type: "upgrader:cashout" });
        toggleStake(item.inventoryItemId, false);
        refreshInventory();
      },
      function (error) {
        var unknown = error.code === "OUTCOME_UNKNOWN" || error.code === "NETWORK_ERROR" ||
          error.code === "ACTION_IN_PROGRESS";
        if (!unknown) {
          delete state.cashouts[id];
        }
        button.disabled = false;
        showNotice(error.message, "error");
      }
    );
  }

  /* ------------------------------------------------------------------ history */

  function refreshHistory(older) {
    var params = { limit: 20, cursor: older ? state.nextCursor : null };
    return api("GET", "/api/play/rounds" + query(params)).then(
      function (page) {
        state.rounds = older ? state.rounds.concat(page.rounds) : page.rounds;
        state.nextCursor = page.nextCursor;
        renderHistory();
      },
      function (error) {
        $("history-message").textContent = error.message;
        $("history-message").hidden = false;
      }
    );
  }

  function renderHistory() {
    var body = $("history");
    body.textContent = "";
    $("history-message").hidden = state.rounds.length > 0;
    $("history-message").textContent = "No rounds yet.";
    $("history-more").hidden = !state.nextCursor;
    state.rounds.forEach(function (round) {
      var row = el("tr");
      row.setAttribute("data-round", round.publicId);
      row.appendChild(el("td", "mono", round.publicId));
      if (round.status !== "settled") {
        row.appendChild(el("td", null, "\u2014"));
        row.appendChild(el("td", null, "\u2014"));
        row.appendChild(el("td", null, "\u2014"));
        row.appendChild(el("td", "outcome void", round.status));
        row.appendChild(el("td", null, "no money moved"));
        row.appendChild(el("td"));
        body.appendChild(row);
        return;
      }
      if (round.target) {
        imageFor(round.target.itemId, round.target.imageUrl);
      }
      row.appendChild(el("td", null, money(round.betMinor, round.currency) +
        (round.mode === "items" ? " (items)" : "")));
      row.appendChild(el("td", null, Money.percent(round.chanceBps)));
      row.appendChild(el("td", "mono", String(round.rolledBps)));
      row.appendChild(el("td", "outcome " + (round.isWin ? "win" : "loss"),
        round.isWin ? "win" : "miss"));
      row.appendChild(el("td", null, round.target ? round.target.name + " " +
        money(round.target.valueMinor, round.target.currency) : ""));
      var cell = el("td");
      var verify = el("button", "secondary small", "Verify");
      verify.type = "button";
      verify.setAttribute("data-verify", round.publicId);
      verify.addEventListener("click", function () {
        verifyRound(round);
      });
      cell.appendChild(verify);
      row.appendChild(cell);
      body.appendChild(row);
    });
  }

  /* ------------------------------------------------------------------ fairness */

  function refreshFairness() {
    return api("GET", "/api/play/fairness").then(
      function (answer) {
        state.fairness = answer;
        renderFairness();
      },
      function (error) {
        showNotice(error.message, "error");
      }
    );
  }

  function renderFairness() {
    var f = state.fairness;
    if (!f) {
      return;
    }
    $("seed-hash").textContent = f.active.serverSeedHash;
    $("client-seed").textContent = f.active.clientSeed;
    $("nonce").textContent = String(f.active.nonce);
    var list = $("revealed");
    list.textContent = "";
    $("revealed-message").hidden = f.revealed.length > 0;
    f.revealed.forEach(function (seed) {
      var item = el("li", "revealed-seed");
      var range = seed.lastNonce === null || seed.lastNonce === undefined
        ? "no rounds"
        : "nonces " + seed.firstNonce + "\u2013" + seed.lastNonce;
      item.appendChild(el("div", "hint", "Revealed " + seed.revealedAt + " \u00b7 " + range +
        " \u00b7 client seed " + seed.clientSeed));
      item.appendChild(el("div", "mono small", "hash " + seed.serverSeedHash));
      item.appendChild(el("div", "mono small", "seed " + seed.serverSeed));
      list.appendChild(item);
    });
  }

  function rotate(event) {
    event.preventDefault();
    var seed = $("new-client-seed").value.trim();
    if (seed && !/^[\x20-\x7e]{1,64}$/.test(seed)) {
      showNotice("A client seed is 1 to 64 printable ASCII characters.", "error");
      return;
    }
    $("rotate").disabled = true;
    var body = { clientActionId: newActionId() }; // a re-sent rotation rotates once
    if (seed) {
      body.clientSeed = seed;
    }
    api("POST", "/api/play/fairness/rotate", body).then(
      function (answer) {
        $("new-client-seed").value = "";
        showNotice("Seeds rotated. The previous server seed is revealed: " +
          answer.previous.serverSeed.slice(0, 16) + "\u2026 You can now verify its rounds.",
          "success");
        return refreshFairness();
      },
      function (error) {
        showNotice(error.message, "error");
      }
    ).then(function () {
      $("rotate").disabled = false;
    });
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
              ":" + result.cursor + "\") gives roll " + check.recomputed,
            isWin: "roll " + result.rolledBps + (result.isWin ? " < " : " \u2265 ") +
              round.chanceBps + " makes it a " + (result.isWin ? "win" : "miss")
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

  /* ------------------------------------------------------------------ tabs and wiring */

  function selectTab(name) {
    Array.prototype.forEach.call(document.querySelectorAll(".tabs [data-tab]"), function (b) {
      var on = b.getAttribute("data-tab") === name;
      b.setAttribute("aria-selected", String(on));
      $("tab-" + b.getAttribute("data-tab")).hidden = !on;
    });
  }

  function selectMode(mode) {
    if (state.busy || mode === state.mode) {
      return;
    }
    state.mode = mode;
    state.pending = null;
    setResult("", "");
    hideNotice();
    state.quote = null;
    state.selectedItemId = null;
    renderMode();
    renderInventory();
    if (mode === "items") {
      selectTab("inventory");
    }
    requestQuote(0);
  }

  function stepWager(factor) {
    var c = config();
    var parsed = Money.parse($("wager").value, state.currency);
    var minor = parsed.error ? c.minWagerMinor : parsed.minor;
    if (factor === "min") {
      minor = c.minWagerMinor;
    } else {
      minor = Math.floor(minor * factor);
    }
    minor = Math.max(c.minWagerMinor, Math.min(c.maxWagerMinor, minor));
    setWager(minor);
    state.pending = null;
    requestQuote(0);
  }

  function setWager(minor) {
    $("wager").value = Money.majorText(minor, Money.exponentOf(state.currency));
  }

  function wire() {
    $("play").addEventListener("click", play);
    $("notice-close").addEventListener("click", hideNotice);
    $("wager").addEventListener("input", function () {
      state.pending = null;
      requestQuote();
    });
    $("wager").addEventListener("change", function () {
      var parsed = Money.parse($("wager").value, state.currency);
      if (!parsed.error) {
        setWager(parsed.minor);
      }
    });
    $("wager-min").addEventListener("click", function () {
      stepWager("min");
    });
    $("wager-half").addEventListener("click", function () {
      stepWager(0.5);
    });
    $("wager-double").addEventListener("click", function () {
      stepWager(2);
    });
    Array.prototype.forEach.call(document.querySelectorAll("#modes [data-mode]"), function (b) {
      b.addEventListener("click", function () {
        selectMode(b.getAttribute("data-mode"));
      });
    });
    Array.prototype.forEach.call(document.querySelectorAll(".tabs [data-tab]"), function (b) {
      b.addEventListener("click", function () {
        selectTab(b.getAttribute("data-tab"));
      });
    });
    $("inventory-open-only").addEventListener("change", refreshInventory);
    $("inventory-refresh").addEventListener("click", refreshInventory);
    $("history-refresh").addEventListener("click", function () {
      refreshHistory();
    });
    $("history-more").addEventListener("click", function () {
      refreshHistory(true);
    });
    $("rotate-form").addEventListener("submit", rotate);
  }

  function boot() {
    wire();
    startSession().then(
      function (session) {
        state.token = session.token;
        state.player = session.player;
        state.config = session.config;
        state.currency = state.currency || session.config.currency;
        state.balanceCurrency = state.currency;
        if (!session.config.available) {
          showFatal("The Upgrader is not available right now: no win chance can be offered.");
          return;
        }
        state.mode = session.config.modes.balance ? "balance" : "items";
        state.chanceBps = session.config.defaultChanceBps;
        $("currency-code").textContent = state.currency;
        var firstWager = Math.max(session.config.minWagerMinor,
          10 * Math.pow(10, Money.exponentOf(state.currency)));
        setWager(Math.min(firstWager, session.config.maxWagerMinor));
        $("boot").hidden = true;
        $("game").hidden = false;
        $("app").setAttribute("data-state", "ready");
        renderChances();
        renderWagerLimits();
        renderGauge();
        setPointer(0);
        renderMode();
        renderBalance();
        return Promise.all([
          loadBalance(),
          loadQuote(),
          refreshInventory(),
          refreshHistory(),
          refreshFairness()
        ]);
      },
      function (error) {
        showFatal(error.message);
      }
    );
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", boot);
  } else {
    boot();
  }
})();
