// The host side of an add-on page: the page runs in a sandboxed iframe (opaque origin,
// no network), and this bridge answers its sdk.userSettings calls for this add-on only.
// Nothing else the page asks for is done, and the add-on id comes from the host page,
// never from the message.
import { userSettings } from "./sdk.js";

const frame = document.querySelector("iframe[data-addon-frame]");
const addon = frame?.dataset.addon;

async function answer(message) {
  const key = typeof message.key === "string" ? message.key.slice(0, 40) : "";
  if (message.method === "userSettings.get") {
    return { ok: true, value: await userSettings.get(addon, key) };
  }
  if (message.method === "userSettings.set") {
    return { ok: true, value: await userSettings.set(addon, key, message.value) };
  }
  return { ok: false, error: "Add-on pages can only use sdk.userSettings." };
}

window.addEventListener("message", async (event) => {
  if (!frame || event.source !== frame.contentWindow) return;
  const message = event.data;
  if (!message || typeof message !== "object" || message.sdk !== 1) return;
  if (typeof message.id !== "number") return;
  let reply;
  try {
    reply = await answer(message);
  } catch (error) {
    reply = { ok: false, error: error.message };
  }
  // The sandboxed page has an opaque origin, so "*" is the only target that reaches it;
  // the reply goes to that one window and holds only this add-on's setting.
  frame.contentWindow.postMessage({ sdk: 1, id: message.id, ...reply }, "*");
  if (reply.ok && message.method === "userSettings.set") {
    // sdk.userSettings.onChange listeners hear the saved value, as the host checked it.
    const key = message.key.slice(0, 40);
    frame.contentWindow.postMessage({ sdk: 1, event: "change", key, value: reply.value }, "*");
  }
});

// The page gets the site's theme (the switch's choice, or the system's) on load and on
// every change of the system's.
const darkQuery = window.matchMedia("(prefers-color-scheme: dark)");

function theme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen === "light" || chosen === "dark") return chosen;
  return darkQuery.matches ? "dark" : "light";
}

function sendTheme() {
  frame.contentWindow?.postMessage({ sdk: 1, event: "theme", value: theme() }, "*");
}

if (frame) {
  frame.addEventListener("load", sendTheme);
  darkQuery.addEventListener("change", sendTheme);
}

// The page loads only now that the bridge listens, so its first sdk call is never lost.
if (frame) frame.src = frame.dataset.src;
