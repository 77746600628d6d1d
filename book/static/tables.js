// A short cell ("STS-12", "bert-base") stays on one line; tables that are still wider than the text column get a
// visible cue (book.css: a shadow and a "scroll" line), and every figure opens at full size when tapped, so a
// multi-panel figure can be read on a phone.
function keepShortCellsWhole() {
  "use strict";
  document.querySelectorAll("table.table td, table.table th").forEach((cell) => {
    if (cell.textContent.trim().length <= 10) cell.style.whiteSpace = "nowrap";
  });
}
function markWideTables() {
  "use strict";
  document.querySelectorAll(".pst-scrollable-table-container").forEach((box) => {
    box.classList.toggle("book-scrolls", box.scrollWidth - box.clientWidth > 2);
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
  markWideTables();
  zoomableFigures();
});
window.addEventListener("resize", markWideTables);
