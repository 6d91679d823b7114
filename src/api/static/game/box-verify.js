/*
 * Box versions and box rounds in the browser: the versions by id (their names, items and
 * committed odds tables, cached), the reels a round claimed, and a box round's check with
 * the shared verifier (fairness.js) once its server seed is revealed.
 *
 * The reels (one {nonce, ticket, itemId} per box) come with the round when the history
 * carries them (round.reels or round.facts.reels); else from the open answers this
 * browser saw (kept in localStorage, the last 200 rounds). Without them the check still
 * recomputes every box's ticket and item from the seeds and the committed table, and
 * says there is no claim to compare with.
 *
 * The table checked is the one the round names: the version's answer in the base
 * currency, whose oddsHash is recomputed here (SHA-256 of
 * {"boxId":B,"boxVersionId":V,"priceMinor":P,"items":[[itemId,weight],...]}, decisions
 * section 10) and compared with the round's.
 */
(function (App) {
  "use strict";

  var el = App.el;
  var state = App.state;
  var REELS_KEY = "upgrader.boxReels.v1";
  var KEEP_ROUNDS = 200;
  var versions = {}; // "boxId:versionId" -> promise of the version (base currency)
  var known = {}; // "boxId:versionId" -> the version, once answered

  /* ------------------------------------------------------------------ versions */

  function versionKey(boxId, boxVersionId) {
    return boxId + ":" + boxVersionId;
  }

  /** A box version by id (inactive ones too), in the base currency; cached. */
  function boxVersion(boxId, boxVersionId) {
    var key = versionKey(boxId, boxVersionId);
    if (!versions[key]) {
      var path = "/api/play/boxes/" + encodeURIComponent(boxId) + "/versions/" +
        encodeURIComponent(boxVersionId) + App.query({ locale: state.locale });
      versions[key] = App.api("GET", path).then(
        function (version) {
          learnVersion(version);
          return version;
        },
        function (error) {
          delete versions[key];
          throw error;
        }
      );
    }
    return versions[key];
  }

  /** Remember a version's names and item pictures (any currency: ids and names only). */
  function learnVersion(version) {
    known[versionKey(version.boxId, version.boxVersionId)] = version;
    (version.items || []).forEach(function (item) {
      App.imageFor(item.itemId, item.imageUrl);
    });
  }

  /** The version already known, or null. */
  function knownVersion(boxId, boxVersionId) {
    return known[versionKey(boxId, boxVersionId)] || null;
  }

  function itemName(version, itemId) {
    var items = (version && version.items) || [];
    for (var i = 0; i < items.length; i++) {
      if (items[i].itemId === itemId) {
        return items[i].name;
      }
    }
    return "item " + itemId;
  }

  /* ------------------------------------------------------------------ reels */

  var reelsCache = null; // the stored map, read once; read again before each write

  function storedReels() {
    if (reelsCache === null) {
      try {
        reelsCache = JSON.parse(localStorage.getItem(REELS_KEY) || "{}") || {};
      } catch (ignored) {
        reelsCache = {};
      }
    }
    return reelsCache;
  }

  /** Keep the reels of a round this browser opened (its claim, for a later check). */
  function rememberReels(publicId, reels) {
    reelsCache = null; // another tab of the game may have written since
    var all = storedReels();
    all[publicId] = { at: Date.now(), reels: reels };
    var ids = Object.keys(all);
    if (ids.length > KEEP_ROUNDS) {
      ids.sort(function (a, b) {
        return all[a].at - all[b].at;
      });
      ids.slice(0, ids.length - KEEP_ROUNDS).forEach(function (id) {
        delete all[id];
      });
    }
    try {
      localStorage.setItem(REELS_KEY, JSON.stringify(all));
    } catch (ignored) {
      /* storage may be unavailable in a third-party frame: the check recomputes anyway */
    }
  }

  /** The reels a round claims: from the round itself, else from this browser, or null. */
  function reelsOf(round) {
    var reels = round.reels || (round.facts && round.facts.reels);
    if (reels && reels.length) {
      return reels;
    }
    var kept = storedReels()[round.publicId];
    return kept && kept.reels && kept.reels.length ? kept.reels : null;
  }

  /* ------------------------------------------------------------------ odds hash */

  function hex(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("");
  }

  /** SHA-256 (hex) of the version's odds JSON, as decisions section 10 defines it. */
  function oddsHash(version) {
    var doc = JSON.stringify({
      boxId: version.boxId,
      boxVersionId: version.boxVersionId,
      priceMinor: version.priceMinor,
      items: version.items.map(function (item) {
        return [item.itemId, item.weight];
      })
    });
    return window.crypto.subtle.digest("SHA-256", new TextEncoder().encode(doc)).then(hex);
  }

  /* ------------------------------------------------------------------ the check */

  function line(list, ok, text) {
    list.appendChild(el("li", ok === null ? null : ok ? "ok" : "bad",
      (ok === null ? "" : ok ? "\u2714 " : "\u2718 ") + text));
  }

  /**
   * Verify a settled box round with its revealed server seed, writing into ``out``:
   * the seed's hash, the odds table's hash, and each box's ticket and item.
   */
  function verifyBoxRound(round, serverSeed, out) {
    var box = round.box;
    var fairness = round.fairness;
    var claimed = reelsOf(round);
    var version;
    var tableHash;
    return boxVersion(box.boxId, box.boxVersionId)
      .then(function (answer) {
        version = answer;
        return oddsHash(version);
      })
      .then(function (hash) {
        tableHash = hash;
        var column = function (key) {
          return claimed ? claimed.map(function (reel) {
            return String(reel[key]);
          }).join(",") : "";
        };
        return window.UpgraderFairness.verifyBoxDraw({
          serverSeed: serverSeed,
          clientSeed: fairness.clientSeed,
          nonce: fairness.nonce,
          count: box.count,
          ranges: JSON.stringify({ items: version.items, totalTickets: version.totalTickets }),
          serverSeedHash: fairness.serverSeedHash,
          tickets: column("ticket"),
          items: column("itemId")
        });
      })
      .then(function (result) {
        var tableOk = tableHash === box.oddsHash && version.totalTickets === box.totalTickets;
        var ok = result.ok && tableOk;
        out.textContent = "";
        out.className = "verify " + (ok ? "ok" : "bad");
        out.setAttribute("data-verified", ok ? "ok" : "bad");
        out.appendChild(el("strong", null, (ok ? "Verified in your browser: "
          : "NOT verified: ") + round.publicId));
        var lines = el("ul");
        line(lines, null, "Server seed " + serverSeed);
        result.checks.filter(function (check) {
          return check.claim === "serverSeedHash";
        }).forEach(function (check) {
          line(lines, check.ok, "SHA-256 of the server seed equals the hash shown before " +
            "the round");
        });
        line(lines, tableOk, "The odds table of " + version.name + " (version " +
          version.boxVersionId + ", " + version.totalTickets + " tickets) hashes to " +
          tableHash + (tableHash === box.oddsHash ? ", the round's oddsHash"
            : ", NOT the round's " + box.oddsHash));
        result.reels.forEach(function (reel, k) {
          var prefix = "box " + reel.box + " (nonce " + reel.nonce + ")";
          var ticketCheck = check(result, prefix + " ticket");
          var itemCheck = check(result, prefix + " item");
          var reelOk = claimed ? !!(ticketCheck && ticketCheck.ok && itemCheck && itemCheck.ok)
            : null;
          var text = "Box " + reel.box + ": HMAC-SHA256(server seed, \"" + fairness.clientSeed +
            ":" + reel.nonce + ":" + reel.cursor + "\") gives ticket " + reel.ticket + " of " +
            reel.totalTickets + ", in " + itemName(version, reel.itemId) + "'s tickets " +
            reel.ticketFrom + "\u2013" + reel.ticketTo;
          if (claimed && !reelOk) {
            text += " (the round said ticket " + claimed[k].ticket + ", " +
              itemName(version, claimed[k].itemId) + ")";
          }
          line(lines, reelOk, text);
        });
        if (!claimed) {
          line(lines, null, "This browser does not hold the tickets the round named: the " +
            "items above are what the seeds give; compare them with the items you won.");
        }
        out.appendChild(lines);
      });
  }

  function check(result, claim) {
    for (var i = 0; i < result.checks.length; i++) {
      if (result.checks[i].claim === claim) {
        return result.checks[i];
      }
    }
    return null;
  }

  App.boxVersion = boxVersion;
  App.learnBoxVersion = learnVersion;
  App.knownBoxVersion = knownVersion;
  App.boxItemName = itemName;
  App.rememberBoxReels = rememberReels;
  App.boxReelsOf = reelsOf;
  App.verifyBoxRound = verifyBoxRound;
})(window.GameApp);
