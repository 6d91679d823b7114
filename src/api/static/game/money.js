/*
 * Money on the wire is integer minor units (interface 1); this file turns them into text
 * and back without floats for the amount itself. The number of minor digits is the
 * currency's ISO 4217 exponent (EUR 2, JPY 0), as the browser's Intl knows it.
 */
(function (root) {
  "use strict";

  function exponentOf(currency) {
    try {
      var options = new Intl.NumberFormat("en", { style: "currency", currency: currency })
        .resolvedOptions();
      return options.maximumFractionDigits;
    } catch (ignored) {
      return 2;
    }
  }

  /** The decimal text of ``minor`` in major units, e.g. 1234 (exp 2) -> "12.34". */
  function majorText(minor, exponent) {
    var negative = minor < 0;
    var digits = String(Math.abs(minor));
    if (exponent > 0) {
      while (digits.length <= exponent) {
        digits = "0" + digits;
      }
      digits = digits.slice(0, -exponent) + "." + digits.slice(-exponent);
    }
    return (negative ? "-" : "") + digits;
  }

  /** 1234, "EUR" -> "€12.34" (the locale's way of writing it). */
  function format(minor, currency, locale) {
    if (minor === null || minor === undefined) {
      return "\u2014";
    }
    var exponent = exponentOf(currency);
    try {
      return new Intl.NumberFormat(locale || undefined, {
        style: "currency",
        currency: currency,
        minimumFractionDigits: exponent,
        maximumFractionDigits: exponent
      }).format(Number(majorText(minor, exponent)));
    } catch (ignored) {
      return majorText(minor, exponent) + " " + currency;
    }
  }

  /**
   * Text typed by a player -> integer minor units, exactly (string arithmetic).
   * Accepts "5", "5.5", "5,50", "1,234.50", "1.234,50". Returns {minor} or {error}.
   */
  function parse(text, currency) {
    var exponent = exponentOf(currency);
    var cleaned = String(text).replace(/[\s\u00a0'_]/g, "");
    if (!cleaned) {
      return { error: "Enter a wager." };
    }
    var lastDot = cleaned.lastIndexOf(".");
    var lastComma = cleaned.lastIndexOf(",");
    var whole = cleaned;
    var fraction = "";
    var decimalAt = -1;
    if (lastDot >= 0 && lastComma >= 0) {
      decimalAt = Math.max(lastDot, lastComma); // "1,234.50" or "1.234,50"
    } else if (lastDot >= 0 || lastComma >= 0) {
      var at = Math.max(lastDot, lastComma);
      var separator = cleaned.charAt(at);
      var once = cleaned.indexOf(separator) === at;
      var looksGrouped = exponent === 0 && cleaned.length - at - 1 === 3;
      decimalAt = once && !looksGrouped ? at : -1; // "5,50" yes; "1.000.000" no
    }
    if (decimalAt >= 0) {
      fraction = cleaned.slice(decimalAt + 1);
      whole = cleaned.slice(0, decimalAt);
    }
    whole = whole.replace(/[.,]/g, "");
    if (!/^[0-9]+$/.test(whole || "0") || !/^[0-9]*$/.test(fraction)) {
      return { error: "Enter the wager as a number, like 5.00." };
    }
    if (fraction.length > exponent) {
      return {
        error: exponent === 0
          ? currency + " has no minor units: enter a whole number."
          : "Use at most " + exponent + " decimals."
      };
    }
    while (fraction.length < exponent) {
      fraction += "0";
    }
    var digits = ((whole || "0") + fraction).replace(/^0+(?=[0-9])/, "");
    if (digits.length > 15) {
      return { error: "That wager is too large." };
    }
    return { minor: Number(digits) };
  }

  /** 5000 -> "50%", 1250 -> "12.5%", 9999 -> "99.99%". */
  function percent(bps) {
    var text = majorText(bps, 2).replace(/\.?0+$/, "");
    return text + "%";
  }

  /** A roll, always with its two decimals: 4217 -> "42.17%", 500 -> "5.00%", 7 -> "0.07%". */
  function rollPercent(bps) {
    return majorText(bps, 2) + "%";
  }

  root.UpgraderMoney = {
    exponentOf: exponentOf,
    majorText: majorText,
    format: format,
    parse: parse,
    percent: percent,
    rollPercent: rollPercent
  };
})(window);
