// Explanation views: the counterfactual attribution as a bar chart over the evidences, and
// RAGE's combination / permutation explanations (answer distribution pie, rules, groupings and
// counterfactuals as tables). Results come from POST .../turns/{n}/explain.

import { answerPie, attributionChart, percent } from "./charts.js";
import { el, recordsView } from "./dom.js";
import { t } from "./i18n.js";

const ATTRIBUTIONS = new Set(["counterfactual", "naive", "surrogate"]);

function heading(method) {
  return { counterfactual: t("explainCounterfactual"), naive: t("explainNaive"), surrogate: t("explainSurrogate"), combination: t("explainCombination"), permutation: t("explainPermutation") }[method] || method;
}

/** One input for an option of the schema (GET /api/explain/options); empty means the default. */
function optionInput(name, spec) {
  const id = `option-${name}-${Math.random().toString(36).slice(2, 8)}`;
  let input;
  if (spec.kind === "choice" || spec.kind === "boolean") {
    const values = spec.kind === "boolean" ? [true, false] : spec.choices;
    input = el("select", { id, "data-option": name, "data-kind": spec.kind },
      el("option", { value: "" }, `${t("defaultValue")} (${String(spec.default)})`),
      values.map((v) => el("option", { value: String(v) }, String(v))));
  } else if (spec.kind === "integer" || spec.kind === "number") {
    input = el("input", { id, type: "number", "data-option": name, "data-kind": spec.kind, min: spec.min ?? "", max: spec.max ?? "", step: spec.kind === "integer" ? 1 : "any", placeholder: spec.default ?? "" });
  } else {
    input = el("input", { id, type: "text", "data-option": name, "data-kind": "text", maxlength: 500, placeholder: spec.default ?? "" });
  }
  return el("label", { class: "option", for: id, title: spec.description || "" }, el("span", {}, name), input);
}

function optionValue(input) {
  const raw = input.value.trim();
  if (raw === "") return undefined;
  if (input.dataset.kind === "boolean") return raw === "true";
  if (input.dataset.kind === "integer") return Number.parseInt(raw, 10);
  if (input.dataset.kind === "number") return Number.parseFloat(raw);
  return raw;
}

/** Every method with its options: `onRun(method, options, button)` explains with them. */
export function explainPanel(schema, onRun) {
  const methods = Object.keys(schema || {});
  const select = el("select", { testid: "explain-method", "aria-label": t("method") }, methods.map((m) => el("option", { value: m }, heading(m))));
  const fields = el("div", { class: "explain-options", testid: "explain-options" });
  const showFields = () => {
    while (fields.firstChild) fields.firstChild.remove();
    for (const [name, spec] of Object.entries(schema[select.value] || {})) fields.appendChild(optionInput(name, spec));
  };
  select.addEventListener("change", showFields);
  showFields();
  const run = el("button", { type: "submit", class: "primary small", testid: "explain-run" }, t("run"));
  const form = el("form", { class: "explain-form" }, el("label", {}, el("span", {}, t("method")), select), fields, run);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const options = {};
    for (const input of fields.querySelectorAll("[data-option]")) {
      const value = optionValue(input);
      if (value !== undefined && !Number.isNaN(value)) options[input.dataset.option] = value;
    }
    onRun(select.value, options, run);
  });
  return form;
}

function incompleteNotice(text) {
  const detail = String(text || "").replace(/^\s*incomplete\s*:\s*/i, "");
  return el("p", { class: "notice incomplete", testid: "attribution-incomplete", role: "status" }, el("strong", {}, `${t("incomplete")}: `), detail);
}

/** The answer's claims: hover, focus or click one to highlight the evidence it rests on, with shares. */
function claimsView(claims, onSelect) {
  if (!claims || !claims.length) return null;
  const items = claims.map((claim) => {
    const ranked = (claim.shares || [])
      .map((share, i) => [share, i + 1])
      .filter(([share]) => share !== null && share !== undefined)
      .sort((a, b) => b[0] - a[0])
      .slice(0, 2);
    const shares = ranked.map(([share, n]) => `${t("source")} ${n}: ${percent(share, 1)}`).join(", ");
    const text = String(claim.text || "").replace(/\s*\[Sources?[^\]]*\]/gi, "");
    const item = el("li", { class: "claim", testid: "claim", tabindex: 0, "data-top": claim.top ?? "" }, el("span", { class: "claim-text" }, text), el("span", { class: "claim-shares muted", testid: "claim-shares" }, ` → ${shares || t("noneFound")}`));
    // hover or focus: mark the claim and, quietly, its evidence card (focus stays where it is); click: select it
    const mark = () => {
      for (const other of item.parentElement.querySelectorAll(".claim.active")) other.classList.remove("active");
      item.classList.add("active");
      if (claim.top) onSelect(claim.top, { quiet: true });
    };
    for (const name of ["mouseenter", "focus"]) item.addEventListener(name, mark);
    item.addEventListener("click", () => {
      mark();
      if (claim.top) onSelect(claim.top);
    });
    return item;
  });
  return el("div", { class: "claims-wrap" }, el("h4", {}, t("perClaim")), el("ol", { class: "claims", testid: "claims" }, items));
}

/** Bars for every evidence of the turn (in prompt order), shares in %, cited ones starred. */
function counterfactualView(result, turn, onSelect) {
  const titles = new Map((turn.sources || []).map((s) => [s.n, s.title || s.id || ""]));
  const cited = new Set(turn.cited || []);
  const sharing = new Map(); // evidence -> the other near-duplicates it splits one share with
  for (const cluster of result.clusters || []) {
    if (cluster.shared) for (const n of cluster.evidences) sharing.set(n, cluster.evidences.filter((m) => m !== n));
  }
  const rows = (result.shares || []).map((s) => ({
    evidence: s.evidence,
    share: s.share,
    cited: Boolean(s.cited) || cited.has(s.evidence),
    title: titles.get(s.evidence) || "",
    sharedWith: sharing.get(s.evidence) || [],
    inherited: result.spread === "inherit", // each near-duplicate shows the whole share, not its part
  }));
  const parts = [];
  if (result.complete === false || result.incomplete) parts.push(incompleteNotice(result.incomplete || ""));
  parts.push(el("div", { class: "chart-wrap" }, attributionChart(rows, onSelect)));
  const claims = claimsView(result.claims, onSelect);
  if (claims) parts.push(claims);
  const table = recordsView(
    rows.map((r) => ({ [t("source")]: r.evidence, [t("titleCol")]: r.title, [t("cited")]: r.cited ? t("yes") : t("no"), "%": percent(r.share, 2) })),
    { testid: "attribution-table" }
  );
  parts.push(el("details", { class: "attribution-details" }, el("summary", {}, t("explanation")), table, result.text ? el("pre", { class: "explain-text" }, result.text) : null));
  return parts;
}

function describeExplanation(explanation) {
  if (explanation === null || explanation === undefined) return t("noExplanation");
  if (typeof explanation === "string") return explanation;
  if (typeof explanation === "object") {
    const parts = [explanation.description || explanation.text || ""];
    if (explanation.answer) parts.push(`→ ${explanation.answer}`);
    const text = parts.filter(Boolean).join(" ");
    return text || JSON.stringify(explanation);
  }
  return String(explanation);
}

function columnLabels() {
  return { answer: t("colAnswer"), original: t("original"), count: t("colCount"), perturbations: t("colPerturbations"), description: t("colDescription"), removed: t("colRemoved"), kendall_tau: "Kendall τ" };
}

/** RAGE: the explanation sentence, the answer distribution pie, rules, groupings, counterfactuals. */
function rageView(result) {
  const parts = [el("p", { class: "rage-explanation", testid: "rage-explanation" }, describeExplanation(result.explanation))];
  if (result.complete === false || result.incomplete) parts.push(incompleteNotice(result.incomplete || ""));
  const distribution = (result.answer_distribution || []).map((d) => ({ ...d, answer: d.answer ?? d.text ?? "" }));
  parts.push(el("h4", {}, t("answerDistribution")));
  parts.push(distribution.length ? answerPie(distribution) : el("p", { class: "muted" }, t("noneFound")));
  parts.push(el("h4", {}, t("rules")));
  const rules = (result.rules || []).map((r) => (r && typeof r === "object" && r.text ? r.text : r));
  parts.push(recordsView(rules, { testid: "rage-rules", empty: t("noneFound") }));
  parts.push(el("h4", {}, t("groupings")));
  const labels = columnLabels();
  const groupings = recordsView(result.groupings, { testid: "rage-groupings", columns: ["answer", "original", "count", "perturbations"], labels, empty: t("noneFound") });
  parts.push(el("div", { class: "table-wrap" }, groupings));
  parts.push(el("h4", {}, t("counterfactuals")));
  const counterfactuals = recordsView(result.counterfactuals, { testid: "rage-counterfactuals", columns: ["description", "answer", "removed", "kendall_tau"], labels, empty: t("noneFound") });
  parts.push(el("div", { class: "table-wrap" }, counterfactuals));
  if (result.text) parts.push(el("details", {}, el("summary", {}, t("explanation")), el("pre", { class: "explain-text" }, result.text)));
  return parts;
}

/** Put `result` into `container`, replacing an earlier result of the same method. */
export function showExplanation(container, method, result, turn, onSelect) {
  const existing = container.querySelector(`section[data-method="${method}"]`);
  const section = el("section", { class: `explain-result ${method}`, "data-method": method, testid: `explanation-${method}` }, el("h3", {}, heading(method)));
  const body = ATTRIBUTIONS.has(method) ? counterfactualView(result, turn, onSelect) : rageView(result);
  for (const part of body) section.appendChild(part);
  if (existing) existing.replaceWith(section);
  else container.appendChild(section);
  return section;
}
