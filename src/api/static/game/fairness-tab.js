/*
 * The Fairness tab: the active seed pair (the server seed's hash, the client seed, the
 * next nonce), rotation with an optional client seed, and the revealed seeds that the
 * History tab verifies rounds with (fairness.js, in the browser).
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var el = App.el;
  var state = App.state;

  function refreshFairness() {
    return App.api("GET", "/api/play/fairness").then(
      function (answer) {
        state.fairness = answer;
        renderFairness();
      },
      function (error) {
        App.showNotice(error.message, "error");
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
      var line = el("div", "hint");
      line.appendChild(document.createTextNode("Revealed "));
      line.appendChild(App.timeElement(seed.revealedAt));
      line.appendChild(document.createTextNode(" \u00b7 " + range + " \u00b7 client seed " +
        seed.clientSeed));
      item.appendChild(line);
      item.appendChild(el("div", "mono small", "hash " + seed.serverSeedHash));
      item.appendChild(el("div", "mono small", "seed " + seed.serverSeed));
      list.appendChild(item);
    });
  }

  function rotate(event) {
    event.preventDefault();
    var seed = $("new-client-seed").value.trim();
    if (seed && !/^[\x20-\x7e]{1,64}$/.test(seed)) {
      App.showNotice("A client seed is 1 to 64 printable ASCII characters.", "error");
      return;
    }
    $("rotate").disabled = true;
    App.api("POST", "/api/play/fairness/rotate", seed ? { clientSeed: seed } : {}).then(
      function (answer) {
        $("new-client-seed").value = "";
        App.showNotice("Seeds rotated. The previous server seed is revealed: " +
          answer.previous.serverSeed.slice(0, 16) + "\u2026 You can now verify its rounds.",
          "success");
        return refreshFairness();
      },
      function (error) {
        App.showNotice(error.message, "error");
      }
    ).then(function () {
      $("rotate").disabled = false;
    });
  }

  function wireFairness() {
    $("rotate-form").addEventListener("submit", rotate);
    App.on("round-settled", refreshFairness);
  }

  App.refreshFairness = refreshFairness;
  App.wireFairness = wireFairness;
})(window.GameApp);
