// RAGonite demo page: wiring of the chat, sidebar, settings and explanations (no build step).
//
// Stable data-testid attributes (for the browser tests; also in /work/tools/testids18.md):
//   page:      message-input, send-button, busy, log, domain-select, settings-toggle, settings-panel,
//              setting-fusion, setting-topk, setting-completion, setting-llm, settings-status,
//              new-conversation, show-deleted, conversation-list
//   sidebar:   conversation-item (data-id, data-deleted="true|false", aria-current on the open one),
//              open-conversation, delete-conversation, restore-conversation
//   turn:      turn (data-index), question, completed-question, answer, citation (data-source),
//              out-of-scope, warning, sources, source (data-source, data-kind, class "highlighted" after a
//              citation/bar click, class "cited"), source-title, source-score, source-text, source-context,
//              source-table, source-id, follow-up, trace (a <details>), trace-toggle (its <summary>),
//              trace-lexical, trace-dense, trace-rephraser-prompt, trace-answer-prompt
//   feedback:  feedback-up, feedback-down (aria-pressed), feedback-comment, feedback-send
//   explain:   explain-button (counterfactual), explain-combination, explain-permutation, explanation,
//              explanation-counterfactual, attribution-chart, attribution-bar (data-evidence,
//              data-share), attribution-incomplete, attribution-table, explanation-combination,
//              explanation-permutation, rage-explanation, rage-pie, rage-slice, rage-rules,
//              rage-groupings, rage-counterfactuals
//   errors:    error (data-kind: llm|store|network|input|not_found|auth|other), error-dismiss
//   sign-in:   sign-in (the form's section), sign-in-token, sign-in-submit, sign-in-error, sign-out, user-name

import { api } from "./api.js";
import { button, clear, el } from "./dom.js";
import { explainPanel, showExplanation } from "./explain.js";
import { showPage } from "./page.js";
import { chooseLanguage, chosenLanguage, language, setLanguage, t, translatePage } from "./i18n.js";
import { errorView, highlightSource, pendingTurnView, turnView } from "./render.js";
import { bindSignIn, showSignIn, showUser, signInFromUrl, signInMode } from "./signin.js";

const $ = (id) => document.getElementById(id);

const state = {
  domains: [],
  llms: [],
  conversations: [],
  current: null, // the open conversation (with turns), or null before the first message
  draftSettings: {}, // settings chosen before the conversation exists
  explainSchema: null, // GET /api/explain/options, fetched when a panel first opens
  showDeleted: false,
  busy: false,
};

// ---- busy state and errors ------------------------------------------------------------------

function setBusy(busy) {
  state.busy = busy;
  $("send-button").disabled = busy;
  $("busy").hidden = !busy;
  $("log").setAttribute("aria-busy", String(busy));
  for (const chip of document.querySelectorAll('[data-testid="follow-up"]')) chip.disabled = busy;
}

function showError(error, question) {
  $("log").appendChild(errorView(error, question));
  scrollToEnd();
}

function scrollToEnd() {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
}

// ---- language ---------------------------------------------------------------------------------

/** The UI language chosen in the selector (remembered), else the browser's; turns never switch it. */
function applyLanguage(tag) {
  if (chooseLanguage(tag)) {
    translatePage();
    renderConversationList();
    renderCurrent();
  }
}

// ---- sidebar: past conversations ----------------------------------------------------------------

function conversationLabel(conversation) {
  return conversation.title || t("untitled");
}

function formatDate(value) {
  const date = new Date(typeof value === "number" && value < 1e12 ? value * 1000 : value);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString(language());
}

function renderConversationList() {
  const list = clear($("conversation-list"));
  const items = state.conversations.filter((c) => state.showDeleted || !c.deleted);
  if (!items.length) {
    list.appendChild(el("li", { class: "muted" }, t("noConversations")));
    return;
  }
  for (const conversation of items) {
    const isCurrent = state.current && state.current.id === conversation.id;
    const open = button(
      el("span", { class: "conversation-title" }, conversationLabel(conversation)),
      { class: "conversation-open", testid: "open-conversation", disabled: conversation.deleted ? true : null },
      () => openConversation(conversation.id)
    );
    open.appendChild(el("span", { class: "conversation-meta muted" }, [conversation.domain, formatDate(conversation.updated)].filter(Boolean).join(" · ")));
    const action = conversation.deleted
      ? button(t("restore"), { class: "secondary small", testid: "restore-conversation", "aria-label": `${t("restore")}: ${conversationLabel(conversation)}` }, () => restoreConversation(conversation.id))
      : button("×", { class: "icon", testid: "delete-conversation", "aria-label": `${t("delete")}: ${conversationLabel(conversation)}`, title: t("delete") }, () => deleteConversation(conversation.id));
    list.appendChild(
      el(
        "li",
        { class: `conversation-item${conversation.deleted ? " deleted" : ""}${isCurrent ? " current" : ""}`, testid: "conversation-item", "data-id": conversation.id, "data-deleted": String(Boolean(conversation.deleted)), "aria-current": isCurrent ? "true" : null },
        open,
        conversation.deleted ? el("span", { class: "badge" }, t("deleted")) : null,
        action
      )
    );
  }
}

async function refreshConversations() {
  try {
    state.conversations = await api.listConversations(state.showDeleted);
  } catch (error) {
    showError(error);
  }
  renderConversationList();
}

async function openConversation(id) {
  if (state.busy) return;
  try {
    const conversation = await api.openConversation(id);
    state.current = conversation;
    renderCurrent();
  } catch (error) {
    showError(error);
  }
  renderConversationList();
}

async function deleteConversation(id) {
  try {
    await api.deleteConversation(id);
    if (state.current && state.current.id === id) newConversation();
  } catch (error) {
    showError(error);
  }
  await refreshConversations();
}

async function restoreConversation(id) {
  try {
    await api.restoreConversation(id);
  } catch (error) {
    showError(error);
  }
  await refreshConversations();
}

function newConversation() {
  state.current = null;
  state.draftSettings = { domain: $("domain-select").value };
  renderCurrent();
  renderConversationList();
  $("message-input").focus();
}

// ---- the conversation log ---------------------------------------------------------------------

const turnHandlers = {
  onCite: (turnElement, n, turn) => {
    highlightSource(turnElement, n);
    if (turn) turnHandlers.onPage(turnElement, turn, n);  // a citation opens its page, the evidence marked
  },
  onPage: async (turnElement, turn, n) => {
    const container = turnElement.querySelector(".message.assistant");
    try {
      showPage(container, await api.sourcePage(state.current.id, turn.index, n), api.originalUrl(state.current.id, turn.index, n));
    } catch (error) {
      container.appendChild(errorView(error));
    }
  },
  // as a fresh explanation: a bar or a claim highlights its evidence (a citation also opens its page)
  onStoredExplanation: (container, method, result, turn) =>
    showExplanation(container, method, result, turn, (n, how) => highlightSource(container.closest(".turn"), n, how)),
  onFollowUp: (question) => send(question),
  onFeedback: (turn, rating, comment) => api.feedback(state.current.id, turn.index, rating, comment),
  onPanel: async (panel, turn, container) => {
    if (!panel.open || panel.dataset.loaded) return;
    panel.dataset.loaded = "1";
    try {
      state.explainSchema = state.explainSchema || (await api.explainOptions());
      panel.appendChild(explainPanel(state.explainSchema, (method, options, button) => turnHandlers.onExplain(turn, method, container, button, options)));
    } catch (error) {
      delete panel.dataset.loaded;  // opening it again tries again
      panel.appendChild(errorView(error));
    }
  },
  onExplain: async (turn, method, container, trigger, options) => {
    const conversationId = state.current.id;
    const label = trigger.textContent;
    trigger.disabled = true;
    trigger.setAttribute("aria-busy", "true");
    trigger.textContent = t("explaining");
    try {
      const result = await api.explain(conversationId, turn.index, method, options);
      turn.explanations = { ...(turn.explanations || {}), [method]: result };  // as the server keeps it
      const turnElement = container.closest(".turn");
      showExplanation(container, method, result, turn, (n, how) => highlightSource(turnElement, n, how));
    } catch (error) {
      container.appendChild(errorView(error));
    } finally {
      trigger.disabled = false;
      trigger.removeAttribute("aria-busy");
      trigger.textContent = label;
    }
  },
};

function renderCurrent() {
  const log = clear($("log"));
  $("settings-status").textContent = "";
  const turns = (state.current && state.current.turns) || [];
  if (!turns.length) log.appendChild(el("p", { id: "empty-hint", class: "empty-hint muted" }, t("empty")));
  for (const turn of turns) log.appendChild(turnView(turn, turnHandlers));
  const settings = (state.current && state.current.settings) || {};
  applySettingsToForm({ ...settings, ...(state.current ? {} : state.draftSettings) });
  scrollToEnd();
}

// ---- sending ----------------------------------------------------------------------------------

async function ensureConversation() {
  if (state.current) return state.current;
  const domain = $("domain-select").value || undefined;
  const conversation = await api.createConversation(domain);
  conversation.turns = conversation.turns || [];
  state.current = conversation;
  const wanted = { ...conversation.settings, ...state.draftSettings, ...readSettingsForm() };
  if (settingsDiffer(wanted, conversation.settings)) {
    conversation.settings = await api.saveSettings(conversation.id, wanted);
  }
  state.draftSettings = {};
  return conversation;
}

async function send(text) {
  const message = String(text ?? "").trim();
  if (!message || state.busy) return;
  const input = $("message-input");
  if (input.value.trim() === message) input.value = "";
  setBusy(true);
  const hint = $("empty-hint");
  if (hint) hint.remove();
  const pending = pendingTurnView(message);
  $("log").appendChild(pending.article);
  scrollToEnd();
  let finished = null;
  try {
    const conversation = await ensureConversation();
    const turn = await api.streamMessage(conversation.id, message, (delta) => {
      pending.answer.appendChild(document.createTextNode(delta));
      scrollToEnd();
    });
    conversation.turns.push(turn);
    finished = turnView(turn, turnHandlers);
    pending.article.replaceWith(finished);
    await refreshConversations();
  } catch (error) {
    pending.article.remove();
    showError(error, message);
    if (!input.value.trim()) input.value = message;
  } finally {
    setBusy(false);
    // the new turn from its question down: its answer stays in view above the evidence cards
    if (finished) finished.scrollIntoView({ block: "start" });
    else scrollToEnd();
    input.focus({ preventScroll: true });
  }
}

// ---- settings ---------------------------------------------------------------------------------

function readSettingsForm() {
  const topK = Number.parseInt($("setting-topk").value, 10);
  const settings = {
    fusion: $("setting-fusion").value,
    complete_questions: $("setting-completion").checked,
  };
  // empty until /api/domains answers: a question sent before then keeps the server's default domain
  if ($("domain-select").value) settings.domain = $("domain-select").value;
  if (Number.isFinite(topK)) settings.top_k = Math.min(20, Math.max(1, topK));
  if ($("setting-llm").value) settings.llm = $("setting-llm").value;
  return settings;
}

function settingsDiffer(a, b) {
  return ["domain", "fusion", "top_k", "complete_questions", "llm"].some((key) => a[key] !== undefined && (b || {})[key] !== a[key]);
}

function applySettingsToForm(settings) {
  if (settings.domain && [...$("domain-select").options].some((o) => o.value === settings.domain)) {
    $("domain-select").value = settings.domain;
  }
  if (settings.fusion) $("setting-fusion").value = settings.fusion;
  if (settings.top_k) $("setting-topk").value = settings.top_k;
  if (typeof settings.complete_questions === "boolean") $("setting-completion").checked = settings.complete_questions;
  if (settings.llm) $("setting-llm").value = settings.llm;
}

async function saveSettings() {
  const status = $("settings-status");
  const wanted = readSettingsForm();
  const conversation = state.current; // may change while the request runs
  if (!conversation) {
    state.draftSettings = { ...state.draftSettings, ...wanted };
    status.textContent = t("settingsSaved");
    return;
  }
  try {
    const saved = await api.saveSettings(conversation.id, { ...conversation.settings, ...wanted });
    conversation.settings = saved || { ...conversation.settings, ...wanted };
    if (state.current === conversation) applySettingsToForm(conversation.settings);
    status.textContent = t("settingsSaved");
  } catch (error) {
    status.textContent = error.message;
    if (state.current === conversation) applySettingsToForm(conversation.settings || {});
    showError(error);
  }
}

async function switchDomain() {
  const domain = $("domain-select").value;
  if (state.current && state.current.turns && state.current.turns.length) {
    newConversation();
    $("domain-select").value = domain;
    state.draftSettings = { domain };
  } else {
    await saveSettings();
  }
}

// ---- start ------------------------------------------------------------------------------------

function fillSelect(select, options) {
  clear(select);
  for (const { value, label, selected } of options) {
    const option = el("option", { value }, label);
    option.selected = Boolean(selected);
    select.appendChild(option);
  }
}

/** Offer only the fusions the server can run (health.fusions; rerank needs the cross-encoder). */
function limitFusions(health) {
  if (!health || !Array.isArray(health.fusions) || !health.fusions.length) return;
  for (const option of $("setting-fusion").options) option.disabled = !health.fusions.includes(option.value);
}

async function loadChoices() {
  const [domains, llms, health] = await Promise.allSettled([api.domains(), api.llms(), api.health()]);
  if (health.status === "fulfilled") limitFusions(health.value);
  if (domains.status === "fulfilled") {
    state.domains = domains.value || [];
    fillSelect($("domain-select"), state.domains.map((d) => ({ value: d.name, label: d.pages ? `${d.name} (${d.pages})` : d.name })));
  } else showError(domains.reason);
  if (llms.status === "fulfilled") {
    state.llms = llms.value || [];
    fillSelect($("setting-llm"), state.llms.map((m) => ({ value: m.name, label: m.spec && m.spec !== m.name ? `${m.name} (${m.spec})` : m.name, selected: m.default })));
  } else showError(llms.reason);
}

function bindEvents() {
  $("ui-language").addEventListener("change", (event) => applyLanguage(event.target.value));
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send($("message-input").value);
  });
  $("message-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send($("message-input").value);
    }
  });
  $("settings-toggle").addEventListener("click", () => {
    const panel = $("settings-panel");
    panel.hidden = !panel.hidden;
    $("settings-toggle").setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) $("setting-fusion").focus();
  });
  for (const id of ["setting-fusion", "setting-topk", "setting-completion", "setting-llm"]) {
    $(id).addEventListener("change", saveSettings);
  }
  $("settings-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveSettings();
  });
  $("domain-select").addEventListener("change", switchDomain);
  $("new-conversation").addEventListener("click", newConversation);
  $("show-deleted").addEventListener("change", (event) => {
    state.showDeleted = event.target.checked;
    refreshConversations();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("settings-panel").hidden) {
      $("settings-panel").hidden = true;
      $("settings-toggle").setAttribute("aria-expanded", "false");
      $("settings-toggle").focus();
    }
  });
}

async function start() {
  setLanguage(chosenLanguage() || navigator.language);
  $("ui-language").value = chosenLanguage();
  translatePage();
  bindEvents();
  bindSignIn();
  if (await signInFromUrl()) return; // reloading as the signed-in user
  if (signInMode() === "sign-in") {
    showSignIn(); // a token is needed first: no API call before it
    return;
  }
  showUser();
  await loadChoices();
  state.draftSettings = { domain: $("domain-select").value };
  await refreshConversations();
  $("message-input").focus();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
