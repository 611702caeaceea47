// Sortable leaderboard columns: click a header to sort by it, click again to reverse. Cells carry
// their value in data-sort (a number, else text); missing values always sort last, and rows that
// tie keep their order (Array.prototype.sort is stable).
document.querySelectorAll("table.lb").forEach((table) => {
  const heads = table.querySelectorAll("th.sortable");
  heads.forEach((th) => {
    th.title = "click to sort";
    th.addEventListener("click", () => {
      const dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", dir);
      const rows = Array.from(table.tBodies[0].rows).sort((a, b) => {
        const [x, y] = [a, b].map((row) => row.cells[th.dataset.col].dataset.sort || "");
        if (!x || !y) return !x - !y;
        const c = isNaN(x) || isNaN(y) ? x.localeCompare(y) : x - y;
        return dir === "ascending" ? c : -c;
      });
      table.tBodies[0].append(...rows);
    });
  });
});
