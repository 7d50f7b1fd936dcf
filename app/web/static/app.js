// Sortable tables: a column's header button sorts its rows (again: the other way round).
"use strict";
document.addEventListener("click", function (event) {
  const button = event.target.closest("table.sortable th button.sort");
  if (!button) return;
  const header = button.closest("th");
  const table = header.closest("table");
  const index = Array.prototype.indexOf.call(header.parentNode.children, header);
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("thead th").forEach(function (th) { th.setAttribute("aria-sort", "none"); });
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const body = table.tBodies[0];
  const rows = Array.prototype.slice.call(body.rows);
  const key = function (row) { return row.cells[index] ? row.cells[index].textContent.trim() : ""; };
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  rows.sort(function (a, b) { return (ascending ? 1 : -1) * collator.compare(key(a), key(b)); });
  rows.forEach(function (row) { body.appendChild(row); });
});
