// The page view: the page an evidence came from, as the parser read it (GET .../sources/{n}/page),
// with the evidence marked and scrolled into view, beside the link to the original.

import { button, cellTable, el, externalLink } from "./dom.js";
import { t } from "./i18n.js";

function listItems(text) {
  const lines = String(text || "").split("\n").map((line) => line.replace(/^\s*(?:[-*•]|\d{1,2}[.)])\s+/, "")).filter((line) => line.trim());
  return el("ul", {}, lines.map((line) => el("li", {}, line)));
}

function blockView(block) {
  if (block.kind === "heading") return el(`h${Math.min(6, 3 + block.level)}`, { class: "page-heading" }, block.text);
  let body;
  if (Array.isArray(block.table) && block.table.length) {
    body = el("div", { class: "table-wrap" }, cellTable(block.table, { header: true }));
    if (block.marked_row !== null && block.marked_row !== undefined) {
      const row = body.querySelectorAll("tbody tr")[block.marked_row - 1];
      if (row) row.classList.add("marked-row");
    }
  } else if (block.kind === "list") {
    body = listItems(block.text);
  } else {
    body = el("p", {}, block.text);
  }
  return el("div", { class: `page-block ${block.kind}${block.marked ? " marked" : ""}`, testid: block.marked ? "page-marked" : "page-block" }, body);
}

function originalLink(view, originalUrl) {
  if (view.original && originalUrl) {
    const at = String(view.url || "").indexOf("#page=");
    return externalLink(originalUrl + (at >= 0 ? String(view.url).slice(at) : ""), t("original"));
  }
  return view.url ? externalLink(view.url, t("original")) : null;
}

/** The page view of source `view.source`; replaces an earlier one in `container`. An attachment on the server
 * links to its original through the turn (`originalUrl`, a PDF at its page), never to a file: path. */
export function showPage(container, view, originalUrl) {
  const existing = container.querySelector(".page-view");
  const close = button(t("close"), { class: "secondary small", testid: "page-close" }, () => section.remove());
  const header = el("div", { class: "page-view-header" },
    el("strong", {}, `${t("source")} ${view.source}: ${view.title || ""}`),
    originalLink(view, originalUrl),
    close);
  const notice = view.current ? null : el("p", { class: "notice warning" }, t("pageChanged"));
  const section = el("section", { class: "page-view", testid: "page-view", "aria-label": view.title || "" }, header, notice, el("div", { class: "page-body" }, (view.blocks || []).map(blockView)));
  if (existing) existing.replaceWith(section);
  else container.appendChild(section);
  const marked = section.querySelector(".marked-row") || section.querySelector(".marked");
  if (marked) marked.scrollIntoView({ block: "center" });
  return section;
}
