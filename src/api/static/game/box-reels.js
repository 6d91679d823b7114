/*
 * The box screen's reels: one strip of item tiles per box opened, which slides under a
 * fixed marker and stops on the item the server drew. The round is answered BEFORE a
 * reel moves: the strips are built from the answer (the drawn item is the tile at
 * WIN_AT; the tiles around it are decoration, picked with the box's weights), so the
 * animation only shows a result that is already settled. Skip (or
 * prefers-reduced-motion) puts every strip at its end at once.
 *
 * The strip starts at the window's centre (left: 50%) and is moved by a transform in
 * pixels of tile pitch, so a landed reel stays on its item when the window is resized.
 * A landed reel has data-landed="true" and its drawn tile the class "landed"; each tile
 * carries data-item-id, so what sits under the marker can be read from the page.
 */
(function (App) {
  "use strict";

  var el = App.el;
  var STRIP = 36; // tiles per strip
  var WIN_AT = 30; // the drawn item's tile
  var START_AT = 2; // the tile under the marker before the spin
  var DURATION_MS = 2600;
  var STAGGER_MS = 220;

  var current = null; // {reels: [reel...], done: resolve}

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  /** How rare an item is, for the tile's colour: by its share of the tickets. */
  function rarity(item) {
    var bps = item ? item.probabilityBps : 10000;
    return bps < 100 ? "legendary" : bps < 500 ? "epic" : bps < 1500 ? "rare" : "common";
  }

  /** A decoration item, drawn with the box's weights (looks only: Math.random). */
  function pickItem(items, total) {
    var ticket = Math.floor(Math.random() * total);
    for (var i = 0; i < items.length; i++) {
      if (ticket < items[i].weight) {
        return items[i];
      }
      ticket -= items[i].weight;
    }
    return items[items.length - 1];
  }

  function tile(item, itemId) {
    var node = el("div", "tile " + rarity(item));
    node.setAttribute("data-item-id", String(itemId));
    var img = el("img");
    img.width = 56;
    img.height = 56;
    img.draggable = false;
    App.setImage(img, itemId, item ? item.imageUrl : null, item ? item.name : "");
    node.appendChild(img);
    node.appendChild(el("span", "tile-name", item ? item.name : "item " + itemId));
    return node;
  }

  function itemOf(box, itemId) {
    for (var i = 0; i < box.items.length; i++) {
      if (box.items[i].itemId === itemId) {
        return box.items[i];
      }
    }
    return null;
  }

  /** One reel for a drawn box ({nonce, ticket, itemId}) of ``box`` (the version). */
  function buildReel(box, drawn, index) {
    var reel = el("div", "reel");
    reel.setAttribute("data-box", String(index + 1));
    reel.setAttribute("data-nonce", String(drawn.nonce));
    reel.setAttribute("data-ticket", String(drawn.ticket));
    var windowNode = el("div", "reel-window");
    var strip = el("div", "reel-strip");
    var total = box.items.reduce(function (sum, item) {
      return sum + item.weight;
    }, 0);
    for (var i = 0; i < STRIP; i++) {
      var item = i === WIN_AT ? itemOf(box, drawn.itemId) : pickItem(box.items, total);
      var node = tile(item, i === WIN_AT ? drawn.itemId : item.itemId);
      if (i === WIN_AT) {
        node.className += " drawn";
      }
      strip.appendChild(node);
    }
    windowNode.appendChild(strip);
    windowNode.appendChild(el("div", "reel-marker"));
    reel.appendChild(windowNode);
    return { node: reel, strip: strip, landed: false, timer: null, offset: 0 };
  }

  /** The centre of tile ``index`` from the strip's start, in pixels. */
  function centreOf(strip, index) {
    var tiles = strip.children;
    var pitch = tiles[1].offsetLeft - tiles[0].offsetLeft;
    return tiles[0].offsetLeft + index * pitch + tiles[0].offsetWidth / 2;
  }

  function place(reel, x, animateMs) {
    reel.strip.style.transition = animateMs
      ? "transform " + animateMs + "ms cubic-bezier(0.12, 0.72, 0.16, 1)"
      : "none";
    reel.strip.style.transform = "translateX(" + (-x).toFixed(1) + "px)";
  }

  function land(reel) {
    if (reel.landed) {
      return;
    }
    reel.landed = true;
    clearTimeout(reel.timer);
    place(reel, reel.offset, 0);
    reel.node.setAttribute("data-landed", "true");
    reel.strip.children[WIN_AT].className += " landed";
    if (current && current.reels.every(function (r) { return r.landed; })) {
      var done = current.done;
      current.container.removeAttribute("data-spinning");
      current = null;
      done();
    }
  }

  /**
   * Show the reels of an answered round in ``container``: ``box`` is the version opened
   * (its items and weights), ``reels`` the answer's facts.reels. Resolves when every reel
   * has landed (or skip() was called).
   */
  function spin(container, box, reels) {
    skip();
    container.textContent = "";
    container.hidden = false;
    container.className = "reels" + (reels.length > 3 ? " compact" : "");
    var built = reels.map(function (drawn, index) {
      var reel = buildReel(box, drawn, index);
      container.appendChild(reel.node);
      return reel;
    });
    var still = reducedMotion();
    return new Promise(function (resolve) {
      current = { reels: built, done: resolve, container: container };
      container.setAttribute("data-spinning", "true");
      built.forEach(function (reel, index) {
        var tileWidth = reel.strip.children[0].offsetWidth;
        var jitter = (Math.random() - 0.5) * 0.6 * tileWidth; // stays inside the tile
        reel.offset = centreOf(reel.strip, WIN_AT) + jitter;
        place(reel, centreOf(reel.strip, START_AT), 0);
        if (still) {
          return;
        }
        void reel.strip.offsetWidth; // the start position is laid out before moving
        var ms = DURATION_MS + index * STAGGER_MS;
        place(reel, reel.offset, ms);
        reel.strip.addEventListener("transitionend", function () {
          land(reel);
        });
        reel.timer = setTimeout(function () {
          land(reel);
        }, ms + 400);
      });
      if (still) {
        built.forEach(land);
      }
    });
  }

  /** Put every reel still moving at its end (the Skip button). */
  function skip() {
    if (current) {
      current.reels.slice().forEach(land);
    }
  }

  function spinning() {
    return current !== null;
  }

  App.reels = { spin: spin, skip: skip, spinning: spinning, rarity: rarity };
})(window.GameApp);
