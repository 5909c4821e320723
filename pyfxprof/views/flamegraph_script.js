// pyfxprof flame graph: click a frame to zoom into it, "Reset zoom" to go back, "Search" (or
// Ctrl+F) to highlight frames whose module path or op matches a regular expression.
(function () {
  // this SVG: the document itself, or one <svg> inlined in an HTML report
  var own = document.currentScript, svg = (own && own.ownerSVGElement) || document.documentElement;
  var cfg = JSON.parse(svg.getAttribute("data-geometry"));
  var frames = [].slice.call(svg.querySelectorAll("g.frame"));
  function part(name) { return svg.querySelector("[data-part=" + name + "]"); }
  var details = part("details"), matched = part("matched"), reset = part("reset");
  function num(g, key) { return +g.getAttribute("data-" + key); }
  function fit(name, width) {
    var n = Math.floor((width - 6) / cfg.charWidth);
    if (n < 3) return "";
    return name.length <= n ? name : name.slice(0, n - 2) + "..";
  }
  function place(g, x, width) {
    var rect = g.querySelector("rect"), text = g.querySelector("text");
    rect.setAttribute("x", x.toFixed(2));
    rect.setAttribute("width", Math.max(width, 0).toFixed(2));
    text.setAttribute("x", (x + 3).toFixed(2));
    text.textContent = fit(g.getAttribute("data-label"), width);
  }
  function zoom(target) {
    var x0 = num(target, "x"), w0 = num(target, "w"), d0 = num(target, "d");
    var scale = w0 > 0 ? (cfg.width - 2 * cfg.pad) / w0 : 0;
    frames.forEach(function (g) {
      var x = num(g, "x"), w = num(g, "w"), d = num(g, "d");
      var inside = d >= d0 && x >= x0 && x + w <= x0 + w0;
      var ancestor = d < d0 && x <= x0 && x + w >= x0 + w0;
      g.style.display = inside || ancestor ? "" : "none";
      g.style.opacity = ancestor ? 0.5 : 1;
      if (inside) place(g, cfg.pad + (x - x0) * scale, w * scale);
      if (ancestor) place(g, cfg.pad, cfg.width - 2 * cfg.pad);
    });
    reset.style.display = d0 > 0 ? "" : "none";
  }
  function search() {
    var term = window.prompt("Search module paths and ops (regular expression)", "");
    if (term === null) return;
    var re, covered = -1, total = 0;
    try {
      re = new RegExp(term, "i");
    } catch (error) {
      matched.textContent = "Invalid regular expression: " + term;
      return;
    }
    function hit(g) { return term !== "" && re.test(g.getAttribute("data-search")); }
    frames.forEach(function (g) {
      g.querySelector("rect").setAttribute("fill", hit(g) ? "rgb(200,50,230)" : g.getAttribute("data-fill"));
    });
    frames.slice().sort(function (a, b) { return num(a, "x") - num(b, "x") || num(a, "d") - num(b, "d"); })
      .forEach(function (g) {
        if (!hit(g) || num(g, "x") < covered) return;
        total += num(g, "w"); covered = num(g, "x") + num(g, "w");
      });
    matched.textContent = term === "" ? "" : "Matched: " + (100 * total / cfg.total).toFixed(1) + "%";
  }
  frames.forEach(function (g) {
    g.addEventListener("click", function () { zoom(g); });
    g.addEventListener("mouseover", function () { details.textContent = g.querySelector("title").textContent; });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
  });
  reset.addEventListener("click", function () { zoom(frames[0]); });
  part("search").addEventListener("click", search);
  if (svg === document.documentElement) {  // standalone: Ctrl+F searches frames
    window.addEventListener("keydown", function (e) {
      if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); search(); }
    });
  }
})();
