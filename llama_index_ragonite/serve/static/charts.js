// Plain SVG charts built with DOM nodes (no library, nothing parsed from strings): the
// counterfactual attribution as horizontal bars, RAGE's answer distribution as a pie.
// Colours come from CSS classes (style.css), so the CSP needs no inline styles.

import { t } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
export const PALETTE_SIZE = 12;

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(name, String(value));
  }
  if (text !== undefined) node.textContent = text;
  return node;
}

function shorten(text, max) {
  const value = String(text ?? "");
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

export function percent(share, digits = 1) {
  return share === null || share === undefined ? "–" : `${(100 * share).toFixed(digits)}%`;
}

/**
 * Horizontal bars, one per evidence: `rows` = [{evidence (1-based), share|null, cited, title}].
 * `onSelect(evidence)` runs when a bar is clicked or activated with Enter/Space.
 */
export function attributionChart(rows, onSelect = () => {}) {
  const rowHeight = 26;
  const labelWidth = 250;
  const barWidth = 300;
  const valueWidth = 120;
  const width = labelWidth + barWidth + valueWidth;
  const height = rows.length * rowHeight + 8;
  const chart = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width: "100%",
    role: "img",
    class: "attribution-chart",
    "data-testid": "attribution-chart",
  });
  chart.appendChild(svg("title", {}, t("attributionTitle")));
  rows.forEach((row, i) => {
    const y = 4 + i * rowHeight;
    const failed = row.share === null || row.share === undefined;
    // near-duplicates (the same information on two pages) split one counterfactual's share: the chart says so
    const others = (row.sharedWith || []).map((n) => `${t("source")} ${n}`).join(", ");
    const shared = others ? ` (${t(row.inherited ? "sameShareAs" : "sharedWith")} ${others})` : "";
    const group = svg("g", {
      class: `attribution-row${row.cited ? " cited" : ""}${failed ? " failed" : ""}`,
      "data-testid": "attribution-bar",
      "data-evidence": row.evidence,
      "data-share": failed ? "" : row.share,
      "data-shared-with": (row.sharedWith || []).join(" "),
      tabindex: 0,
      role: "button",
      "aria-label": `${t("source")} ${row.evidence}: ${failed ? t("attributionFailed") : percent(row.share)}${
        row.cited ? ` (${t("cited")})` : ""
      }${shared}`,
    });
    group.appendChild(svg("title", {}, `${t("source")} ${row.evidence}: ${row.title || ""}${shared}`));
    const label = `${row.cited ? "★ " : ""}${t("source")} ${row.evidence}${row.title ? ` · ${shorten(row.title, 16)}` : ""}`;
    group.appendChild(svg("text", { x: labelWidth - 8, y: y + 17, "text-anchor": "end", class: "bar-label" }, label));
    group.appendChild(svg("rect", { x: labelWidth, y: y + 3, width: barWidth, height: rowHeight - 8, class: "bar-track" }));
    const length = failed ? 0 : Math.max(0, Math.min(1, row.share)) * barWidth;
    group.appendChild(
      svg("rect", { x: labelWidth, y: y + 3, width: length.toFixed(2), height: rowHeight - 8, class: "bar" })
    );
    const value = failed ? t("attributionFailed") : `${percent(row.share)}${shared && !row.inherited ? " ≈" : ""}`;
    group.appendChild(svg("text", { x: labelWidth + barWidth + 6, y: y + 17, class: "bar-value" }, value));
    const select = () => onSelect(row.evidence);
    group.addEventListener("click", select);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select();
      }
    });
    chart.appendChild(group);
  });
  return chart;
}

/** The path of one pie slice from angle a0 to a1 (radians, 0 = 12 o'clock, clockwise). */
function slicePath(cx, cy, r, a0, a1) {
  const point = (a) => [cx + r * Math.sin(a), cy - r * Math.cos(a)];
  const [x0, y0] = point(a0);
  const [x1, y1] = point(a1);
  const large = a1 - a0 > Math.PI ? 1 : 0;
  return `M ${cx} ${cy} L ${x0.toFixed(3)} ${y0.toFixed(3)} A ${r} ${r} 0 ${large} 1 ${x1.toFixed(3)} ${y1.toFixed(3)} Z`;
}

/**
 * The answer distribution as a pie with a legend: `slices` = [{answer, share, original?, count?}].
 * Returns a <figure> holding the SVG (data-testid rage-pie) and the legend list.
 */
export function answerPie(slices, caption) {
  const figure = document.createElement("figure");
  figure.className = "rage-pie-figure";
  const size = 160;
  const r = 70;
  const c = size / 2;
  const pie = svg("svg", {
    viewBox: `0 0 ${size} ${size}`,
    width: size,
    height: size,
    role: "img",
    class: "rage-pie",
    "data-testid": "rage-pie",
  });
  pie.appendChild(svg("title", {}, caption || t("answerDistribution")));
  const total = slices.reduce((sum, s) => sum + Math.max(0, Number(s.share) || 0), 0) || 1;
  let angle = 0;
  slices.forEach((slice, i) => {
    const share = Math.max(0, Number(slice.share) || 0) / total;
    const cls = `slice slice-${i % PALETTE_SIZE}`;
    let shape;
    if (share >= 0.9999) shape = svg("circle", { cx: c, cy: c, r, class: cls });
    else if (share > 0) shape = svg("path", { d: slicePath(c, c, r, angle, angle + share * 2 * Math.PI), class: cls });
    if (shape) {
      shape.setAttribute("data-testid", "rage-slice");
      shape.appendChild(svg("title", {}, `${slice.text || slice.answer}: ${percent(share)}`));
      pie.appendChild(shape);
    }
    angle += share * 2 * Math.PI;
  });
  figure.appendChild(pie);
  const legend = document.createElement("ul");
  legend.className = "pie-legend";
  slices.forEach((slice, i) => {
    const item = document.createElement("li");
    item.title = String(slice.text || slice.answer || "");
    const swatch = document.createElement("span");
    swatch.className = `swatch slice-${i % PALETTE_SIZE}`;
    swatch.setAttribute("aria-hidden", "true");
    item.appendChild(swatch);
    const count = slice.count !== undefined ? ` (${slice.count})` : "";
    const original = slice.original ? ` — ${t("original")}` : "";
    item.appendChild(document.createTextNode(`${percent(slice.share)} ${shorten(slice.text || slice.answer, 140)}${count}${original}`));
    legend.appendChild(item);
  });
  figure.appendChild(legend);
  if (caption) {
    const figcaption = document.createElement("figcaption");
    figcaption.textContent = caption;
    figure.appendChild(figcaption);
  }
  return figure;
}
