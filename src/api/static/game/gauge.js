/*
 * The Upgrader's gauge: the win arc for the chance, a pointer that spins while a round is
 * in flight and lands on the roll (0..9999 clockwise from the top), the roll in its
 * centre as a percentage. With prefers-reduced-motion the pointer jumps instead.
 */
(function (App) {
  "use strict";

  var $ = App.$;
  var Money = App.Money;
  var CIRCUMFERENCE = 2 * Math.PI * 80;
  var angle = 0;
  var spinFrame = null;

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  function setPointer(degrees) {
    angle = degrees;
    $("gauge-pointer").setAttribute("transform", "rotate(" + (degrees % 360) + " 100 100)");
  }

  /** The win arc for ``chanceBps``; the centre shows the chance unless a round rolls. */
  function render(chanceBps) {
    var chance = chanceBps || 0;
    var length = (CIRCUMFERENCE * chance) / 10000;
    $("gauge-win").setAttribute("stroke-dasharray", length + " " + CIRCUMFERENCE);
    if (!App.state.busy) {
      $("gauge-label").textContent = Money.percent(chance);
      $("gauge-sub").textContent = "win chance";
    }
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
      setPointer(angle + ((now - last) * 0.6));
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

  function reset() {
    spinStop();
    setPointer(0);
  }

  /** Land the pointer on the roll; resolves when it has landed. */
  function land(rolledBps) {
    spinStop();
    var finalAngle = (rolledBps / 10000) * 360;
    if (reducedMotion()) {
      setPointer(finalAngle);
      return Promise.resolve();
    }
    var start = angle % 360;
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

  function showOutcome(round) {
    $("gauge-label").textContent = Money.rollPercent(round.rolledBps);
    $("gauge-sub").textContent = round.isWin ? "win" : "miss";
    $("gauge").setAttribute("data-outcome", round.isWin ? "win" : "loss");
  }

  App.gauge = {
    render: render,
    reset: reset,
    spinStart: spinStart,
    land: land,
    showOutcome: showOutcome
  };
})(window.GameApp);
