// Signing in: <body data-sign-in> is rendered by the server (sign-in | signed-in | proxy | open), so the
// page knows before any API call whether it must ask for a token. The token is traded once for an
// HttpOnly session cookie (POST /api/session) and kept nowhere; signing out ends the session there.

import { api, setOnUnauthorized, takeTokenFromUrl } from "./api.js";
import { t } from "./i18n.js";

const $ = (id) => document.getElementById(id);

export function signInMode() {
  return document.body.dataset.signIn || "open";
}

/** Show the sign-in form (and only it), with `message` when there is one. */
export function showSignIn(message) {
  document.body.dataset.signIn = "sign-in";
  const error = $("sign-in-error");
  error.textContent = message || "";
  error.hidden = !message;
  $("sign-in-token").focus();
}

/** Trade `token` for a session, then load the page afresh as that user; false (the form says why) if refused. */
async function signIn(token) {
  try {
    await api.signIn(token);
  } catch (error) {
    showSignIn(error.status === 401 ? t("signInWrong") : t("signInFailed", { msg: error.message }));
    return false;
  }
  window.location.replace(window.location.pathname + window.location.search);
  return true;
}

/** A token in the address (/#token=…, the link `ragonite users add` users may be sent) signs in; true while reloading. */
export async function signInFromUrl() {
  const token = takeTokenFromUrl();
  if (!token || signInMode() === "open" || signInMode() === "proxy") return false;
  return signIn(token);
}

/** The signed-in user's name in the top bar (a users-file or proxy user; a bare token has none). */
export async function showUser() {
  if (signInMode() !== "signed-in" && signInMode() !== "proxy") return;
  try {
    const me = await api.me();
    if (me && me.name) {
      $("user-name").textContent = t("signedInAs", { name: me.name });
      $("user-name").hidden = false;
    }
  } catch (_) {
    /* a 401 has shown the sign-in form already */
  }
}

export function bindSignIn() {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("sign-in-token").value.trim();
    if (!token) return;
    $("sign-in-submit").disabled = true;
    if (!(await signIn(token))) {
      $("sign-in-submit").disabled = false;
      $("sign-in-token").select();
    }
  });
  $("sign-out").addEventListener("click", async () => {
    try {
      await api.signOut();
    } catch (_) {
      /* the server is gone: its sessions went with it */
    }
    window.location.replace(window.location.pathname + window.location.search);
  });
  // a session that ends while the page is open (expired, revoked, signed out in another tab): ask again
  setOnUnauthorized((message) => {
    if (signInMode() === "signed-in") showSignIn(message);
  });
}
