/*
 * Boot: wire the panels and the screens, open the session, then start everything. The
 * shared parts are in core.js (see its header for how the files fit together); the
 * game screens register themselves (upgrader.js).
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var state = App.state;

  /** The screen switcher shows only when there is more than one game screen. */
  function renderScreenNav(active) {
    var names = Object.keys(App.screens);
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
    Object.keys(App.screens).forEach(function (name) {
      App.screens[name].wire();
    });
  }

  function boot() {
    wire();
    App.startSession().then(
      function (session) {
        state.token = session.token;
        state.player = session.player;
        state.config = session.config;
        state.currency = state.currency || session.config.currency;
        state.balanceCurrency = state.currency;
        if (!session.config.available) {
          App.showFatal("The Upgrader is not available right now: no win chance can be offered.");
          return;
        }
        $("boot").hidden = true;
        $("game").hidden = false;
        $("app").setAttribute("data-state", "ready");
        App.renderBalance();
        showScreen(Object.keys(App.screens)[0]);
        var starts = Object.keys(App.screens).map(function (name) {
          return App.screens[name].start();
        });
        return Promise.all(starts.concat([
          App.loadBalance(),
          App.refreshInventory(),
          App.refreshHistory(),
          App.refreshFairness()
        ]));
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
