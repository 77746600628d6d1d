// A short cell ("STS-12", "bert-base") stays on one line; a table still wider than the text column is stacked on a
// phone (each row a block, each cell under its column's name: book.css) and scrolls with a visible cue on a wider
// screen (a shadow and a "scroll" line), measured again when the window is resized or a tab is opened; every figure
// opens at full size when tapped, so a multi-panel figure can be read on a phone.
function keepShortCellsWhole() {
  "use strict";
  document.querySelectorAll("table.table td, table.table th").forEach((cell) => {
    if (cell.textContent.trim().length <= 10) cell.style.whiteSpace = "nowrap";
  });
}
const PHONE = 700; // px: below this window width a table too wide for the column is stacked, not scrolled
function labelCells() {
  "use strict";
  document.querySelectorAll("table.table").forEach((table) => {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    table.querySelectorAll("tbody tr").forEach((row) => {
      [...row.children].forEach((cell, i) => { if (heads[i]) cell.dataset.label = heads[i]; });
    });
  });
}
function markWideTables() {
  "use strict";
  document.querySelectorAll(".pst-scrollable-table-container").forEach((box) => {
    box.classList.remove("book-stacked", "book-scrolls");
    if (box.scrollWidth - box.clientWidth <= 2) return;
    box.classList.add(window.innerWidth < PHONE ? "book-stacked" : "book-scrolls");
  });
}
function zoomableFigures() {
  "use strict";
  document.querySelectorAll("figure img, .cell_output img").forEach((img) => {
    if (img.closest("a")) return;
    const link = document.createElement("a");
    link.href = img.currentSrc || img.src;
    link.className = "book-zoom";
    link.title = "Open the figure at full size";
    img.replaceWith(link);
    link.append(img);
  });
}
document.addEventListener("DOMContentLoaded", () => {
  keepShortCellsWhole();
  labelCells();
  markWideTables();
  zoomableFigures();
});
window.addEventListener("resize", markWideTables);
// A table in a tab that is not open measures 0 px wide: it is marked again when a reader opens its tab (sphinx-design's
// tabs are radio inputs, each checked by its label).
document.addEventListener("change", (event) => { if (event.target.matches(".sd-tab-set > input")) markWideTables(); });
