// The REST API client (see the OpenAPI page at /docs). Every call goes to the same origin and the
// server knows the user by an HttpOnly cookie: with tokens, the session cookie that signing in
// (POST /api/session) sets; without, a random user id. The page never keeps a token.

/** An API failure with the server's error kind: llm, store, input, not_found, auth or network. */
export class ApiError extends Error {
  constructor(message, kind = "other", status = 0) {
    super(message);
    this.name = "ApiError";
    this.kind = kind;
    this.status = status;
  }
}

/** A token given in the address (/#token=...), taken off the address bar and out of the history; or null. */
export function takeTokenFromUrl() {
  const match = /(?:^|[#&])token=([^&]+)/.exec(window.location.hash);
  if (!match) return null;
  window.history.replaceState(null, "", window.location.pathname + window.location.search);
  try {
    return decodeURIComponent(match[1]);
  } catch (_) {
    return match[1];
  }
}

let onUnauthorized = () => {};

/** `handler(message)` runs on every 401 (the session ended: signed out elsewhere, expired, or revoked). */
export function setOnUnauthorized(handler) {
  onUnauthorized = handler;
}

function headers(extra = {}) {
  return { Accept: "application/json", ...extra };
}

function kindForStatus(status) {
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "not_found";
  if (status === 502) return "llm";
  if (status === 503) return "store";
  if (status >= 400 && status < 500) return "input";
  return "other";
}

/** Turn a non-2xx response into an ApiError, reading the {"error","kind"} body when there is one. */
async function errorFrom(response) {
  let message = `${response.status} ${response.statusText}`.trim();
  let kind = kindForStatus(response.status);
  try {
    const body = await response.json();
    if (body && typeof body.error === "string") message = body.error;
    else if (body && body.detail !== undefined) {
      message = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    }
    if (body && typeof body.kind === "string") kind = body.kind;
  } catch (_) {
    /* not JSON: keep the status line */
  }
  if (response.status === 401) onUnauthorized(message);
  return new ApiError(message, kind, response.status);
}

async function request(method, path, body) {
  const init = { method, headers: headers(), credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(error.message || String(error), "network");
  }
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return null;
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

const conv = (id) => `/api/conversations/${encodeURIComponent(id)}`;

export const api = {
  signIn: (token) => request("POST", "/api/session", { token }),
  signOut: () => request("DELETE", "/api/session"),
  me: () => request("GET", "/api/me"),
  health: () => request("GET", "/api/health"),
  domains: () => request("GET", "/api/domains"),
  llms: () => request("GET", "/api/llms"),
  listConversations: (includeDeleted) =>
    request("GET", `/api/conversations${includeDeleted ? "?include_deleted=true" : ""}`),
  createConversation: (domain) => request("POST", "/api/conversations", domain ? { domain } : {}),
  openConversation: (id) => request("GET", conv(id)),
  deleteConversation: (id) => request("DELETE", conv(id)),
  restoreConversation: (id) => request("POST", `${conv(id)}/restore`),
  saveSettings: (id, settings) => request("PUT", `${conv(id)}/settings`, settings),
  sendMessage: (id, message) => request("POST", `${conv(id)}/messages`, { message }),
  explain: (id, turn, method, options) => request("POST", `${conv(id)}/turns/${turn}/explain`, { method, options: options || {} }),
  explainOptions: () => request("GET", "/api/explain/options"),
  sourcePage: (id, turn, n) => request("GET", `${conv(id)}/turns/${turn}/sources/${n}/page`),
  originalUrl: (id, turn, n) => new URL(`${conv(id)}/turns/${turn}/sources/${n}/original`, window.location.href).href,
  feedback: (id, turn, rating, comment) =>
    request("POST", `${conv(id)}/turns/${turn}/feedback`, comment ? { rating, comment } : { rating }),
  streamMessage,
};

/** Split an SSE buffer into complete events; returns [events, rest]. */
export function parseSse(buffer) {
  const events = [];
  const blocks = buffer.replace(/\r\n?/g, "\n").split("\n\n");
  const rest = blocks.pop();
  for (const block of blocks) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length) events.push({ event, data: data.join("\n") });
  }
  return [events, rest];
}

/**
 * Send a message over the streaming endpoint; `onDelta(text)` gets each piece of the answer.
 * Resolves with the final turn. Falls back to the JSON endpoint when the server offers no
 * usable event stream (no streaming route, no ReadableStream in this browser); a failure
 * after the server started answering is reported, not retried (it would record the turn twice).
 */
async function streamMessage(id, message, onDelta = () => {}) {
  let response;
  try {
    response = await fetch(`${conv(id)}/messages/stream`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      credentials: "same-origin",
      body: JSON.stringify({ message }),
    });
  } catch (error) {
    throw new ApiError(error.message || String(error), "network");
  }
  if ([404, 405, 501].includes(response.status) && !(await isApiNotFound(response))) {
    return api.sendMessage(id, message);
  }
  if (!response.ok) throw await errorFrom(response);
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("application/json")) return response.json();
  if (!response.body || typeof response.body.getReader !== "function") {
    return api.sendMessage(id, message);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (error) {
      throw new ApiError(error.message || String(error), "network");
    }
    buffer += decoder.decode(chunk.value || new Uint8Array(), { stream: !chunk.done });
    if (chunk.done) buffer += "\n\n";
    const [events, rest] = parseSse(buffer);
    buffer = rest;
    for (const { event, data } of events) {
      const payload = safeJson(data);
      if (event === "delta" && payload && typeof payload.text === "string") onDelta(payload.text);
      else if (event === "turn" && payload) {
        reader.cancel().catch(() => {});
        return payload;
      } else if (event === "error") {
        reader.cancel().catch(() => {});
        throw new ApiError((payload && payload.error) || data, (payload && payload.kind) || "other", 0);
      }
    }
    if (chunk.done) break;
  }
  throw new ApiError("the answer stream ended early", "network");
}

/** A 404 for the conversation itself (JSON error, kind not_found) is a real error, not a missing route. */
async function isApiNotFound(response) {
  try {
    const body = await response.clone().json();
    return body && body.kind === "not_found";
  } catch (_) {
    return false;
  }
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch (_) {
    return null;
  }
}
