// UI text in English and German. One UI language for the whole page: the user's choice (the
// language selector, kept in localStorage), else the browser's (navigator.language). A turn's
// own language marks its text (lang="de") but does not switch the labels around it.

const MESSAGES = {
  en: {
    title: "RAGonite",
    subtitle: "Conversational QA over your wiki, with explanations",
    conversations: "Conversations",
    newConversation: "New conversation",
    showDeleted: "Show deleted",
    deleted: "deleted",
    delete: "Delete",
    restore: "Restore",
    untitled: "New conversation",
    noConversations: "No conversations yet.",
    domain: "Domain",
    uiLanguage: "Language",
    uiLanguageBrowser: "Browser's",
    settings: "Settings",
    fusion: "Fusion",
    topK: "Top-k evidences",
    completion: "Complete follow-up questions",
    llm: "LLM",
    settingsSaved: "Settings saved.",
    messageLabel: "Your question",
    messagePlaceholder: "Ask a question (Enter sends, Shift+Enter for a new line)",
    send: "Send",
    busy: "Working…",
    you: "You",
    assistant: "RAGonite",
    completedQuestion: "Completed question",
    sources: "Evidences",
    source: "Source",
    score: "hybrid score",
    ranks: "Ranks",
    lexicalRank: "lexical rank",
    denseRank: "dense rank",
    latentRank: "latent rank",
    openPage: "Open page",
    cited: "cited",
    explain: "Explain",
    explainCounterfactual: "Attribution",
    explainCombination: "Combinations",
    explainPermutation: "Permutations",
    explaining: "Explaining…",
    attributionTitle: "Counterfactual attribution over the evidences",
    attributionFailed: "no share (failed)",
    sharedWith: "a near-duplicate: splits its share with",
    sameShareAs: "a near-duplicate: shows the same whole share as",
    incomplete: "Incomplete",
    explanation: "Explanation",
    showInPage: "Show in page",
    original: "Original page",
    close: "Close",
    pageChanged: "The page has changed since this answer: the evidence is no longer in it.",
    explainOptions: "More methods and options",
    explainNaive: "Similarity (naive)",
    explainSurrogate: "Surrogate (ContextCite-style)",
    method: "Method",
    run: "Explain",
    defaultValue: "default",
    perClaim: "Per claim (hover or click one to see its source)",
    noExplanation: "No perturbation changed the answer.",
    answerDistribution: "Answer distribution",
    rules: "Answer rules",
    groupings: "Answer groupings",
    counterfactuals: "Counterfactuals",
    noneFound: "None.",
    original: "original",
    colAnswer: "Answer",
    colCount: "Count",
    colPerturbations: "Perturbations",
    colDescription: "Perturbation",
    colRemoved: "Removed sources",
    feedbackUp: "Helpful",
    feedbackDown: "Not helpful",
    feedbackComment: "Comment (optional)",
    feedbackSend: "Send feedback",
    feedbackThanks: "Thanks for your feedback.",
    behindTheScenes: "Behind the scenes",
    lexicalResults: "Lexical results (BM25)",
    denseResults: "Dense results",
    rephraserPrompt: "Rephraser prompt",
    answerPrompt: "Answer prompt",
    answerRead: "Sources the offline answerer read (it writes no prompt)",
    answerDecision: "Answered or refused: the unit the decision was taken on, and its scores",
    rank: "Rank",
    id: "Id",
    titleCol: "Title",
    followUps: "Follow-up suggestions",
    outOfScope: "This question seems to be outside the wiki's scope.",
    truncated: "This answer broke off before it was finished: it is incomplete.",
    errorBusy: "Too many answers are being written right now: {msg}",
    errorTimeout: "The answer took too long and was stopped: {msg}",
    seconds: "{s} s",
    errorLlm: "The language model failed: {msg}",
    errorStore: "The document store is unavailable: {msg}",
    errorNetwork: "Network error: {msg}",
    errorInput: "The request was not accepted: {msg}",
    errorNotFound: "Not found: {msg}",
    errorAuth: "Not authorized: {msg}",
    errorOther: "Something went wrong: {msg}",
    retryHint: "You can send your question again.",
    dismiss: "Dismiss",
    empty: "Pick a domain and ask a question about it.",
    yes: "yes",
    no: "no",
    signInTitle: "Sign in",
    signInToken: "Access token",
    signIn: "Sign in",
    signInHelp: "Paste the access token you were given for this app.",
    signInWrong: "Wrong access token: check that you pasted all of it.",
    signInFailed: "Could not sign in: {msg}",
    signOut: "Sign out",
    signedInAs: "Signed in as {name}",
  },
  de: {
    title: "RAGonite",
    subtitle: "Fragen und Antworten über Ihr Wiki, mit Erklärungen",
    conversations: "Unterhaltungen",
    newConversation: "Neue Unterhaltung",
    showDeleted: "Gelöschte anzeigen",
    deleted: "gelöscht",
    delete: "Löschen",
    restore: "Wiederherstellen",
    untitled: "Neue Unterhaltung",
    noConversations: "Noch keine Unterhaltungen.",
    domain: "Domäne",
    uiLanguage: "Sprache",
    uiLanguageBrowser: "Wie der Browser",
    settings: "Einstellungen",
    fusion: "Fusion",
    topK: "Top-k Belege",
    completion: "Folgefragen vervollständigen",
    llm: "Sprachmodell",
    settingsSaved: "Einstellungen gespeichert.",
    messageLabel: "Ihre Frage",
    messagePlaceholder: "Stellen Sie eine Frage (Enter sendet, Umschalt+Enter für eine neue Zeile)",
    send: "Senden",
    busy: "Bitte warten…",
    you: "Sie",
    assistant: "RAGonite",
    completedQuestion: "Vervollständigte Frage",
    sources: "Belege",
    source: "Quelle",
    score: "hybrider Score",
    ranks: "Ränge",
    lexicalRank: "lexikalischer Rang",
    denseRank: "dichter Rang",
    latentRank: "latenter Rang",
    openPage: "Seite öffnen",
    cited: "zitiert",
    explain: "Erklären",
    explainCounterfactual: "Attribution",
    explainCombination: "Kombinationen",
    explainPermutation: "Permutationen",
    explaining: "Erkläre…",
    attributionTitle: "Kontrafaktische Attribution über die Belege",
    attributionFailed: "kein Anteil (fehlgeschlagen)",
    sharedWith: "fast gleich: teilt den Anteil mit",
    sameShareAs: "fast gleich: zeigt denselben ganzen Anteil wie",
    incomplete: "Unvollständig",
    explanation: "Erklärung",
    showInPage: "Im Kontext zeigen",
    original: "Originalseite",
    close: "Schließen",
    pageChanged: "Die Seite hat sich seit dieser Antwort geändert: der Beleg steht nicht mehr darin.",
    explainOptions: "Weitere Methoden und Optionen",
    explainNaive: "Ähnlichkeit (naiv)",
    explainSurrogate: "Surrogat (wie ContextCite)",
    method: "Methode",
    run: "Erklären",
    defaultValue: "Standard",
    perClaim: "Je Aussage (zeigen oder klicken, um ihre Quelle zu sehen)",
    noExplanation: "Keine Veränderung hat die Antwort geändert.",
    answerDistribution: "Verteilung der Antworten",
    rules: "Antwortregeln",
    groupings: "Antwortgruppen",
    counterfactuals: "Kontrafaktische Fälle",
    noneFound: "Keine.",
    original: "Original",
    colAnswer: "Antwort",
    colCount: "Anzahl",
    colPerturbations: "Veränderungen",
    colDescription: "Veränderung",
    colRemoved: "Entfernte Quellen",
    feedbackUp: "Hilfreich",
    feedbackDown: "Nicht hilfreich",
    feedbackComment: "Kommentar (optional)",
    feedbackSend: "Feedback senden",
    feedbackThanks: "Danke für Ihr Feedback.",
    behindTheScenes: "Hinter den Kulissen",
    lexicalResults: "Lexikalische Treffer (BM25)",
    denseResults: "Dichte Treffer",
    rephraserPrompt: "Prompt zur Umformulierung",
    answerPrompt: "Antwort-Prompt",
    answerRead: "Quellen, die der Offline-Beantworter gelesen hat (er schreibt keinen Prompt)",
    answerDecision: "Beantwortet oder abgelehnt: die Einheit, an der entschieden wurde, und ihre Werte",
    rank: "Rang",
    id: "Id",
    titleCol: "Titel",
    followUps: "Vorschläge für Folgefragen",
    outOfScope: "Diese Frage scheint außerhalb des Wikis zu liegen.",
    truncated: "Diese Antwort brach ab, bevor sie fertig war: Sie ist unvollständig.",
    errorBusy: "Gerade werden zu viele Antworten geschrieben: {msg}",
    errorTimeout: "Die Antwort dauerte zu lange und wurde abgebrochen: {msg}",
    seconds: "{s} s",
    errorLlm: "Das Sprachmodell ist fehlgeschlagen: {msg}",
    errorStore: "Der Dokumentenspeicher ist nicht verfügbar: {msg}",
    errorNetwork: "Netzwerkfehler: {msg}",
    errorInput: "Die Anfrage wurde nicht angenommen: {msg}",
    errorNotFound: "Nicht gefunden: {msg}",
    errorAuth: "Nicht berechtigt: {msg}",
    errorOther: "Etwas ist schiefgegangen: {msg}",
    retryHint: "Sie können Ihre Frage erneut senden.",
    dismiss: "Schließen",
    empty: "Wählen Sie eine Domäne und stellen Sie eine Frage dazu.",
    yes: "ja",
    no: "nein",
    signInTitle: "Anmelden",
    signInToken: "Zugangstoken",
    signIn: "Anmelden",
    signInHelp: "Fügen Sie das Zugangstoken ein, das Sie für diese Anwendung erhalten haben.",
    signInWrong: "Falsches Zugangstoken: Prüfen Sie, ob Sie es vollständig eingefügt haben.",
    signInFailed: "Anmeldung nicht möglich: {msg}",
    signOut: "Abmelden",
    signedInAs: "Angemeldet als {name}",
  },
};

let current = pickLanguage(typeof navigator !== "undefined" ? navigator.language : "en");
const CHOICE_KEY = "ragonite.ui-language";

/** The user's chosen UI language ("" = the browser's). */
export function chosenLanguage() {
  try {
    return localStorage.getItem(CHOICE_KEY) || "";
  } catch {
    return "";
  }
}

/** Remember the user's choice ("" = follow the browser) and switch to it; returns true when it changed. */
export function chooseLanguage(tag) {
  try {
    if (tag) localStorage.setItem(CHOICE_KEY, tag);
    else localStorage.removeItem(CHOICE_KEY);
  } catch {
    // storage refused (private mode): the choice holds for this page only
  }
  return setLanguage(tag || navigator.language);
}

/** "de-AT" -> "de"; anything unsupported -> "en". */
export function pickLanguage(tag) {
  const base = String(tag || "").toLowerCase().split(/[-_]/)[0];
  return base in MESSAGES ? base : "en";
}

export function language() {
  return current;
}

/** Switch the UI language; returns true when it changed. */
export function setLanguage(tag) {
  const next = pickLanguage(tag);
  const changed = next !== current;
  current = next;
  if (typeof document !== "undefined") document.documentElement.lang = next;
  return changed;
}

/** The UI text for `key`, with `{name}` placeholders filled from `vars`. */
export function t(key, vars = {}) {
  const text = MESSAGES[current][key] ?? MESSAGES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

/** Re-label every element carrying data-i18n (text), data-i18n-placeholder or data-i18n-aria-label. */
export function translatePage(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of root.querySelectorAll("[data-i18n-placeholder]")) {
    node.placeholder = t(node.dataset.i18nPlaceholder);
  }
  for (const node of root.querySelectorAll("[data-i18n-aria-label]")) {
    node.setAttribute("aria-label", t(node.dataset.i18nAriaLabel));
  }
  for (const node of root.querySelectorAll("[data-i18n-title]")) node.title = t(node.dataset.i18nTitle);
}
