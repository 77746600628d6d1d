// The edition switcher. On the published site the editions sit side by side (lib/edition/site.py), with editions.json
// beside them; every page then shows a line linking the same page in each edition. A single edition opened from disk
// has no editions.json, and the line is not shown.
function showEditions() {
  "use strict";
  const root = document.documentElement.dataset.content_root; // from this page to its edition's folder
  if (root === undefined) return;
  const edition = new URL(root, window.location.href);
  const site = new URL("../", edition);
  const page = window.location.href.slice(edition.href.length).split("#")[0];
  const current = edition.pathname.split("/").filter(Boolean).pop();
  fetch(new URL("editions.json", site))
    .then((response) => (response.ok ? response.json() : null))
    .then((editions) => {
      if (!Array.isArray(editions) || editions.length < 2) return;
      const nav = document.createElement("nav");
      nav.className = "book-editions";
      nav.setAttribute("aria-label", "Editions of this book");
      nav.append("Edition: ");
      editions.forEach((item, i) => {
        if (i > 0) nav.append(" · ");
        const here = item.name === current;
        const link = document.createElement(here ? "strong" : "a");
        link.textContent = item.name;
        link.title = item.title;
        if (!here) link.href = new URL(item.name + "/" + page, site).href;
        nav.append(link);
      });
      const article = document.querySelector("article.bd-article") || document.body;
      article.prepend(nav);
    })
    .catch(() => {});
}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", showEditions);
else showEditions();
