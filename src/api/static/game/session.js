/*
 * The session and the casino balance.
 *
 * Boot: the launch URL carries ?launchToken=...; the app removes it from the address bar
 * at once (history.replaceState), exchanges it at POST /api/play/session/init and keeps
 * the session token in memory and sessionStorage only (never in a URL), so a reload of
 * the frame resumes the session. Then every call goes to /api/play/* with Authorization:
 * Bearer (core.js).
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var state = App.state;
  var STORAGE_KEY = "upgrader.session.v2"; // v2: the whole game block

  function sessionEnded() {
    state.token = null;
    try {
      sessionStorage.removeItem(STORAGE_KEY);
    } catch (ignored) {
      /* storage may be unavailable in a third-party frame */
    }
    App.showFatal(App.MESSAGES.SESSION_INVALID);
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

  /** The launch token exchanged for a session, or the session saved before a reload. */
  function startSession() {
    var launchToken = readLaunchParams();
    if (launchToken) {
      return App.api("POST", "/api/play/session/init", { launchToken: launchToken }).then(
        function (answer) {
          var session = {
            token: answer.sessionToken,
            player: answer.player,
            game: answer.game, // {key, config} for the Upgrader, {key, box, ...} for boxes
            config: answer.game.config || null
          };
          saveSession(session);
          state.initialBalance = answer.balance || null; // not saved: it ages
          return session;
        }
      );
    }
    var saved = loadSession();
    if (saved && saved.token && saved.game) {
      state.token = saved.token;
      return App.api("GET", "/api/play/fairness").then(function (fairness) {
        state.fairness = fairness;
        return saved;
      });
    }
    return Promise.reject(new App.ApiError(
      "NO_LAUNCH_TOKEN", 0,
      "open the game from the casino site: this address has no launch token"
    ));
  }

  /* ------------------------------------------------------------------ balance */

  function renderBalance() {
    $("balance").textContent = state.balanceMinor === null
      ? "\u2014"
      : App.money(state.balanceMinor, state.balanceCurrency);
  }

  function setBalance(minor, currency) {
    state.balanceMinor = minor;
    state.balanceCurrency = currency || state.currency;
    renderBalance();
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
    return App.api("GET", "/api/play/balance" + App.query({ currency: state.currency })).then(
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

  App.sessionEnded = sessionEnded;
  App.startSession = startSession;
  App.loadBalance = loadBalance;
  App.setBalance = setBalance;
  App.renderBalance = renderBalance;
})(window.GameApp);
