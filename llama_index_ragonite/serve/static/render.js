// One conversation turn as DOM: the question and its completed form, the cited answer, the
// evidences, follow-up chips, feedback and the behind-the-scenes trace. Everything from the API
// is set as text (see dom.js); the caller passes the handlers for the interactive parts.

import { button, cellTable, clear, el, externalLink } from "./dom.js";
import { t } from "./i18n.js";

// The engine's citation form (prompts._CITATION): [Source 2], [Sources 2, 3], [Source 2, Source 5].
const CITATION = /\[\s*Sources?\s+(\d+(?:\s*(?:,|and|&)\s*(?:Source\s+)?\d+)*)\s*\]/gi;

export function sourceElementId(turnIndex, n) {
  return `turn-${turnIndex}-source-${n}`;
}

/** The answer's text with every [Source n] turned into a button that highlights evidence n. */
export function answerNodes(answer, nSources, onCite) {
  const nodes = [];
  let last = 0;
  const text = String(answer ?? "");
  for (const match of text.matchAll(CITATION)) {
    const numbers = (match[1].match(/\d+/g) || []).map(Number).filter((n) => n >= 1 && n <= nSources);
    if (!numbers.length) continue;
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    numbers.forEach((n, i) => {
      if (i) nodes.push(document.createTextNode(" "));
      nodes.push(
        button(`[Source ${n}]`, { class: "citation", testid: "citation", "data-source": n }, () => onCite(n))
      );
    });
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

function score(value) {
  return typeof value === "number" ? value.toFixed(3) : "–";
}

/** The evidence's page/section context, clamped to two lines; a click shows all of it. */
function contextView(context) {
  const node = el("p", { class: "source-context", testid: "source-context", title: context }, context);
  node.addEventListener("click", () => node.classList.toggle("expanded"));
  return node;
}

/** One evidence: number, title, hybrid score, context, content (text or table), URL and ranks. */
export function sourceView(turnIndex, source, cited, onPage) {
  const header = el(
    "div",
    { class: "source-header" },
    el("span", { class: "source-number" }, `${t("source")} ${source.n}`),
    el("span", { class: "source-title", testid: "source-title" }, source.title || source.id || ""),
    cited ? el("span", { class: "badge cited-badge" }, t("cited")) : null,
    el("span", { class: "source-score", testid: "source-score", title: t("score") }, `${t("score")}: ${score(source.score)}`)
  );
  const hasTable = Array.isArray(source.table) && source.table.length > 0;
  const content = hasTable
    ? el("div", { class: "table-wrap" }, cellTable(source.table, { header: true, testid: "source-table" }))
    : el("p", { class: "source-text", testid: "source-text" }, source.text || "");
  const ranks = el(
    "details",
    { class: "source-ranks" },
    el("summary", {}, t("ranks")),
    el(
      "dl",
      {},
      el("dt", {}, t("id")),
      el("dd", { class: "source-id", testid: "source-id" }, source.id ?? "–"),
      el("dt", {}, t("lexicalRank")),
      el("dd", {}, source.lexical_rank ?? "–"),
      el("dt", {}, t("denseRank")),
      el("dd", {}, source.dense_rank ?? "–"),
      el("dt", {}, t("latentRank")),
      el("dd", {}, source.latent_rank ?? "–")
    )
  );
  return el(
    "li",
    {
      class: `source${cited ? " cited" : ""}`,
      id: sourceElementId(turnIndex, source.n),
      tabindex: -1,
      testid: "source",
      "data-source": source.n,
      "data-kind": source.kind || "",
    },
    header,
    source.context ? contextView(source.context) : null,
    content,
    el("p", { class: "source-url" }, onPage ? button(t("showInPage"), { class: "secondary small", testid: "source-page" }, () => onPage(source.n)) : null, " ", source.url ? externalLink(source.url) : null),
    ranks
  );
}

/** Highlight evidence n of a turn (the others lose it), open the list and bring it into view. */
export function highlightSource(turnElement, n, { quiet = false } = {}) {
  const list = turnElement.querySelector(".sources");
  if (list && !quiet) list.open = true;
  for (const node of turnElement.querySelectorAll(".source.highlighted")) node.classList.remove("highlighted");
  const target = turnElement.querySelector(`.source[data-source="${Number(n)}"]`);
  if (!target) return;
  target.classList.add("highlighted");
  if (quiet) return; // a hover marks it only: no scrolling, focus stays where it is
  target.scrollIntoView({ behavior: "smooth", block: "nearest" });
  target.focus({ preventScroll: true });
}

function resultsTable(results) {
  const rows = [[t("rank"), t("id"), t("titleCol"), "score"]];
  for (const r of results || []) rows.push([r.rank, r.id, r.title, r.score]);
  return cellTable(rows, { header: true });
}

/** The behind-the-scenes view: lexical and dense results, rephraser and answer prompts (offline: the sources read). */
export function traceView(trace) {
  const body = el("div", { class: "trace-body" });
  const details = el("details", { class: "trace", testid: "trace" }, el("summary", { testid: "trace-toggle" }, t("behindTheScenes")), body);
  if (!trace) return details;
  body.appendChild(el("h4", {}, t("lexicalResults")));
  body.appendChild(el("div", { class: "table-wrap", testid: "trace-lexical" }, resultsTable(trace.lexical)));
  body.appendChild(el("h4", {}, t("denseResults")));
  body.appendChild(el("div", { class: "table-wrap", testid: "trace-dense" }, resultsTable(trace.dense)));
  if (trace.rephraser_prompt) {
    body.appendChild(el("h4", {}, t("rephraserPrompt")));
    body.appendChild(el("pre", { class: "prompt", testid: "trace-rephraser-prompt" }, trace.rephraser_prompt));
  }
  if (trace.answer_prompt) {
    body.appendChild(el("h4", {}, t("answerPrompt")));
    body.appendChild(el("pre", { class: "prompt", testid: "trace-answer-prompt" }, trace.answer_prompt));
  }
  if (trace.answer_read && trace.answer_read.length) {
    // offline no prompt is written: what the answerer read instead, as the sources it numbered
    const rows = [[t("source"), t("id"), t("titleCol")]];
    for (const r of trace.answer_read) rows.push([r.n, r.id, r.title]);
    body.appendChild(el("h4", {}, t("answerRead")));
    body.appendChild(el("div", { class: "table-wrap", testid: "trace-answer-read" }, cellTable(rows, { header: true })));
  }
  const decision = trace.answer_decision;
  if (decision && decision.features) {
    // the one scope decision: answered or refused, on which unit, with which scores (Assessment.explained)
    const rows = [["answered", String(decision.answered)], ["probability", String(decision.probability)]];
    if (decision.unit) rows.push(["unit", `[Source ${decision.unit.source}] ${decision.unit.text}`]);
    if (decision.cell) {
      rows.push(["cell", `[Source ${decision.cell.source}] ${decision.cell.row.join(", ")} → ${decision.cell.columns.join(", ")}`]);
      for (const k of ["named", "fit", "margin", "quoted"]) rows.push([`cell ${k}`, String(decision.cell[k])]);
    }
    for (const [k, v] of Object.entries(decision.features)) rows.push([k, String(v)]);
    body.appendChild(el("h4", {}, t("answerDecision")));
    body.appendChild(el("div", { class: "table-wrap", testid: "trace-answer-decision" }, cellTable(rows, { header: false })));
  }
  return details;
}

/** Thumbs up/down; a click records the rating at once, then offers an optional comment. */
function feedbackView(onFeedback) {
  const status = el("span", { class: "feedback-status", role: "status" });
  const comment = el("textarea", { class: "feedback-comment", testid: "feedback-comment", rows: 2, maxlength: 2000, "aria-label": t("feedbackComment"), placeholder: t("feedbackComment") });
  const form = el("form", { class: "feedback-form", hidden: true }, comment);
  let rating = 0;
  const thumbs = [];
  const rate = async (value, extra) => {
    rating = value;
    thumbs.forEach((b) => b.setAttribute("aria-pressed", String(Number(b.dataset.rating) === value)));
    form.hidden = false;
    status.textContent = "";
    try {
      await onFeedback(value, extra);
      status.textContent = t("feedbackThanks");
    } catch (error) {
      status.textContent = error.message;
    }
  };
  const up = button(`▲ ${t("feedbackUp")}`, { class: "thumb", testid: "feedback-up", "data-rating": 1, "aria-pressed": "false", title: t("feedbackUp") }, () => rate(1));
  const down = button(`▼ ${t("feedbackDown")}`, { class: "thumb", testid: "feedback-down", "data-rating": -1, "aria-pressed": "false", title: t("feedbackDown") }, () => rate(-1));
  thumbs.push(up, down);
  form.appendChild(button(t("feedbackSend"), { class: "secondary", testid: "feedback-send", type: "submit" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (rating && comment.value.trim()) rate(rating, comment.value.trim());
  });
  return el("div", { class: "feedback" }, up, down, status, form);
}

/** The user's side of a turn: the question as typed and, under it, the completed question. */
export function userView(question, completed) {
  const box = el("div", { class: "message user" }, el("span", { class: "who" }, t("you")), el("p", { class: "question", testid: "question" }, question));
  if (completed) {
    box.appendChild(el("p", { class: "completed-question", testid: "completed-question" }, el("span", { class: "label" }, `${t("completedQuestion")}: `), completed));
  }
  return box;
}

/** A turn whose answer is still streaming in: the question and a live answer paragraph. */
export function pendingTurnView(question) {
  const answer = el("p", { class: "answer streaming", testid: "answer", "aria-live": "polite" });
  const article = el("article", { class: "turn pending", testid: "turn", "aria-busy": "true" }, userView(question, null), el("div", { class: "message assistant" }, el("span", { class: "who" }, t("assistant")), answer));
  return { article, answer };
}

/**
 * A finished turn. `handlers`: onCite(turnElement, n), onExplain(turn, method, container, button),
 * onFeedback(turn, rating, comment), onFollowUp(question).
 */
export function turnView(turn, handlers) {
  const sources = turn.sources || [];
  const cited = new Set(turn.cited || []);
  const article = el("article", { class: "turn", testid: "turn", "data-index": turn.index, lang: turn.language || null });
  const onCite = (n) => handlers.onCite(article, n, turn);
  article.appendChild(userView(turn.question, turn.completed_question));

  const assistant = el("div", { class: "message assistant" }, el("span", { class: "who" }, t("assistant")));
  if (turn.out_of_scope) assistant.appendChild(el("p", { class: "notice out-of-scope", testid: "out-of-scope" }, t("outOfScope")));
  if (turn.truncated) assistant.appendChild(el("p", { class: "notice warning", testid: "truncated" }, t("truncated")));
  if (turn.warning) assistant.appendChild(el("p", { class: "notice warning", testid: "warning" }, turn.warning));
  const answerClass = turn.truncated ? "answer truncated" : "answer";
  assistant.appendChild(el("p", { class: answerClass, testid: "answer", "aria-live": "polite" }, answerNodes(turn.answer, sources.length, onCite)));
  if (typeof turn.seconds === "number") assistant.appendChild(el("p", { class: "timing muted" }, t("seconds", { s: turn.seconds.toFixed(2) })));

  const explanation = el("div", { class: "explanation", testid: "explanation", "aria-live": "polite" });
  const explainButtons = [
    ["counterfactual", t("explain"), "explain-button"],
    ["combination", t("explainCombination"), "explain-combination"],
    ["permutation", t("explainPermutation"), "explain-permutation"],
  ].map(([method, label, testid]) => {
    const node = button(label, { class: method === "counterfactual" ? "primary small" : "secondary small", testid, "data-method": method }, () => handlers.onExplain(turn, method, explanation, node));
    return node;
  });
  // every method with its options, built when first opened
  const panel = el("details", { class: "explain-panel", testid: "explain-panel" }, el("summary", {}, t("explainOptions")));
  panel.addEventListener("toggle", () => handlers.onPanel(panel, turn, explanation));
  // an out-of-scope answer rests on no evidence: there is nothing to explain
  if (sources.length && !turn.out_of_scope) assistant.appendChild(el("div", { class: "turn-actions" }, explainButtons, panel, feedbackView((rating, comment) => handlers.onFeedback(turn, rating, comment))));
  else assistant.appendChild(el("div", { class: "turn-actions" }, feedbackView((rating, comment) => handlers.onFeedback(turn, rating, comment))));
  assistant.appendChild(explanation);
  for (const [method, result] of Object.entries(turn.explanations || {})) {
    handlers.onStoredExplanation(explanation, method, result, turn, onCite);  // kept with the turn: shown on reopen
  }

  if (sources.length) {
    const list = el("ol", { class: "source-list", testid: "sources" }, sources.map((s) => sourceView(turn.index, s, cited.has(s.n), (n) => handlers.onPage(article, turn, n))));
    assistant.appendChild(el("details", { class: "sources", open: true }, el("summary", {}, `${t("sources")} (${sources.length})`), list));
  }
  if (turn.follow_ups && turn.follow_ups.length) {
    assistant.appendChild(
      el("div", { class: "follow-ups", role: "group", "aria-label": t("followUps") }, el("span", { class: "label" }, t("followUps")),
        turn.follow_ups.map((q) => button(q, { class: "chip", testid: "follow-up" }, () => handlers.onFollowUp(q))))
    );
  }
  assistant.appendChild(traceView(turn.trace));
  article.appendChild(assistant);
  return article;
}

/** An inline error in the conversation that says what failed and that sending again is fine. */
export function errorView(error, question) {
  const key = { llm: "errorLlm", store: "errorStore", network: "errorNetwork", input: "errorInput", not_found: "errorNotFound", auth: "errorAuth", busy: "errorBusy", timeout: "errorTimeout" }[error.kind] || "errorOther";
  const box = el("div", { class: `error kind-${error.kind || "other"}`, testid: "error", role: "alert", "data-kind": error.kind || "other" });
  box.appendChild(el("p", { class: "error-message" }, t(key, { msg: error.message || String(error) })));
  if (question) {
    const quoted = question.length > 200 ? `${question.slice(0, 199)}…` : question;
    box.appendChild(el("p", { class: "error-question muted" }, `“${quoted}”`));
  }
  box.appendChild(el("p", { class: "muted" }, t("retryHint")));
  box.appendChild(button(t("dismiss"), { class: "secondary small", testid: "error-dismiss" }, () => box.remove()));
  return box;
}

export { clear };
