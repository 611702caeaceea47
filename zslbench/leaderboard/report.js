// Sortable leaderboard columns: click a header to sort by it, click again to reverse.
// Cells carry their numeric value in data-sort; missing values always sort last.
(function () {
  "use strict";
  function sortTable(table, th) {
    var col = Number(th.getAttribute("data-col"));
    var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
    var heads = table.querySelectorAll("th.sortable");
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (row, index) { row.setAttribute("data-index", String(index)); });
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-sort");
      var y = b.cells[col].getAttribute("data-sort");
      var xm = x === null || x === "", ym = y === null || y === "";
      if (xm !== ym) { return xm ? 1 : -1; }
      if (!xm) {
        var nx = Number(x), ny = Number(y);
        var bothNumbers = !isNaN(nx) && !isNaN(ny);
        var c = bothNumbers ? nx - ny : String(x).localeCompare(String(y));
        if (c !== 0) { return dir === "ascending" ? c : -c; }
      }
      return Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index"));
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  var tables = document.querySelectorAll("table.lb");
  for (var t = 0; t < tables.length; t++) {
    (function (table) {
      var heads = table.querySelectorAll("th.sortable");
      for (var h = 0; h < heads.length; h++) {
        (function (th) {
          th.addEventListener("click", function () { sortTable(table, th); });
          th.setAttribute("title", "click to sort");
        })(heads[h]);
      }
    })(tables[t]);
  }
})();
