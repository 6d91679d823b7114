/*
 * Boot: wire the panels, open the session, then start the screen of the launched game
 * (session/init's game.key: "upgrader" or "boxes") and the tabs. The shared parts are in
 * core.js (see its header for how the files fit together); the game screens register
 * themselves (upgrader.js, boxes.js). A session plays the game it was launched for: a
 * screen is wired and started only when it is that game's.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var state = App.state;

  /** The screen switcher shows only when a session has more than one game screen (today
   * a session plays the one game it was launched for: the switcher stays hidden). */
  function renderScreenNav(active) {
    var names = [active];
    var nav = $("screens");
    nav.textContent = "";
    nav.hidden = names.length < 2;
    names.forEach(function (name) {
      var button = App.el("button", null, App.screens[name].title);
      button.type = "button";
      button.setAttribute("role", "tab");
      button.setAttribute("aria-selected", String(name === active));
      button.addEventListener("click", function () {
        if (!state.busy) {
          showScreen(name);
        }
      });
      nav.appendChild(button);
    });
  }

  function showScreen(name) {
    Array.prototype.forEach.call(document.querySelectorAll("[data-screen]"), function (section) {
      section.hidden = section.getAttribute("data-screen") !== name;
    });
    renderScreenNav(name);
    var screen = App.screens[name];
    if (screen.onShow) {
      screen.onShow();
    }
  }

  function wire() {
    $("notice-close").addEventListener("click", App.hideNotice);
    Array.prototype.forEach.call(document.querySelectorAll(".tabs [data-tab]"), function (b) {
      b.addEventListener("click", function () {
        App.selectTab(b.getAttribute("data-tab"));
      });
    });
    App.wireInventory();
    App.wireHistory();
    App.wireFairness();
  }

  /** The launched game's screen, or null (a game this app does not know). */
  function launchedScreen(session) {
    var key = session.game && session.game.key;
    return key && Object.prototype.hasOwnProperty.call(App.screens, key) ? key : null;
  }

  function boot() {
    wire();
    App.startSession().then(
      function (session) {
        state.token = session.token;
        state.player = session.player;
        state.game = session.game;
        state.config = session.config;
        var name = launchedScreen(session);
        if (name === null) {
          App.showFatal("This game (" + String(session.game && session.game.key) +
            ") cannot be played in this app.");
          return;
        }
        var screen = App.screens[name];
        var refusal = screen.refusal ? screen.refusal(session) : null;
        if (refusal) {
          App.showFatal(refusal);
          return;
        }
        state.currency = state.currency || screen.currency(session);
        state.balanceCurrency = state.currency;
        screen.wire();
        $("boot").hidden = true;
        $("game").hidden = false;
        $("app").setAttribute("data-state", "ready");
        $("app").setAttribute("data-game", name);
        $("brand-name").textContent = screen.title;
        document.title = screen.title;
        App.renderBalance();
        showScreen(name);
        return Promise.all([
          screen.start(),
          App.loadBalance(),
          App.refreshInventory(),
          App.refreshHistory(),
          App.refreshFairness()
        ]);
      },
      function (error) {
        App.showFatal(error.message);
      }
    );
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", boot);
  } else {
    boot();
  }
})(window.GameApp);
