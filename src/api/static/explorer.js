// Starts Swagger UI on the page's [data-explorer="swagger"] element, with the API
// documents it lists in data-specs. A file of its own because the explorer pages allow
// no inline script (Content-Security-Policy: script-src 'self'). Served by the platform
// at /api/schema/assets/explorer.js; see src/api/explorers.py.
(function () {
  "use strict";
  var node = document.querySelector('[data-explorer="swagger"]');
  if (!node) {
    return;
  }
  var specs = JSON.parse(node.getAttribute("data-specs"));
  window.ui = SwaggerUIBundle({
    urls: specs,
    "urls.primaryName": specs[0].name,
    dom_id: "#swagger-ui",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null, // the default would load a badge from validator.swagger.io
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout",
  });
})();
