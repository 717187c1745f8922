// DOM building blocks. Data only ever reaches the page as text nodes or attribute values:
// there is no innerHTML here, so evidence or answers holding markup show as text and never run.

import { t } from "./i18n.js";

/**
 * Create an element: `attrs` are attributes (class, data-*, aria-*, …; `testid` is short for
 * data-testid; false/null/undefined skip); `children` are nodes or strings (as text nodes).
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "testid") node.setAttribute("data-testid", value);
    else if (name === "text") node.textContent = String(value);
    else if (name === "hidden") node.hidden = Boolean(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** A button with a click handler (keyboard activation comes free with <button>). */
export function button(label, attrs, onClick) {
  const node = el("button", { type: "button", ...attrs }, label);
  if (onClick) node.addEventListener("click", onClick);
  return node;
}

/** An http(s) URL as a safe external link; anything else (javascript:, data:, relative) as text. */
export function externalLink(url, label) {
  let parsed = null;
  try {
    parsed = new URL(String(url));
  } catch (_) {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    return el("span", { class: "url" }, String(url));
  }
  return el("a", { href: parsed.href, target: "_blank", rel: "noopener noreferrer", class: "url" }, label || parsed.href);
}

/** A table of rows of cells; the first row becomes the header when `header` is true. */
export function cellTable(rows, { header = true, testid, caption } = {}) {
  const table = el("table", { class: "data-table", testid });
  if (caption) table.appendChild(el("caption", {}, caption));
  const body = el("tbody");
  rows.forEach((row, i) => {
    const cells = Array.isArray(row) ? row : [row];
    if (i === 0 && header && rows.length > 1) {
      table.appendChild(el("thead", {}, el("tr", {}, cells.map((cell) => el("th", { scope: "col" }, cellText(cell))))));
    } else {
      body.appendChild(el("tr", {}, cells.map((cell) => el("td", {}, cellText(cell)))));
    }
  });
  table.appendChild(body);
  return table;
}

/** Any JSON value as one line of text for a table cell. */
export function cellText(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "boolean") return value ? t("yes") : t("no");  // never a raw true/false
  if (Array.isArray(value)) return value.map(cellText).join(value.some((v) => v && typeof v === "object") ? "; " : ", ");
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(3);
  if (typeof value === "object") return String(value.description ?? value.text ?? JSON.stringify(value));
  return String(value);
}

/**
 * A list of JSON records as a table (columns: `columns` where present, else the union of their
 * keys; headers from `labels`; cells via cellText); a list of
 * strings as a bulleted list. The API's shapes for rules, groupings and counterfactuals may grow,
 * so nothing here depends on particular keys.
 */
export function recordsView(items, { testid, columns, labels = {}, empty = "" } = {}) {
  if (!Array.isArray(items) || items.length === 0) return el("p", { class: "muted", testid }, empty);
  if (items.every((item) => item === null || typeof item !== "object" || Array.isArray(item))) {
    return el("ul", { class: "records", testid }, items.map((item) => el("li", {}, cellText(item))));
  }
  const present = [...new Set(items.flatMap((item) => (item && typeof item === "object" ? Object.keys(item) : [])))];
  const wanted = columns ? columns.filter((key) => present.includes(key)) : [];
  const keys = wanted.length ? wanted : present;
  const rows = [keys.map((key) => labels[key] || key), ...items.map((item) => keys.map((key) => (item ? item[key] : null)))];
  return cellTable(rows, { header: true, testid });
}
