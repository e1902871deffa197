import { csrfToken } from "./sdk.js";

// Marks the page while its live-events socket is open, so people (and tests)
// can tell that updates arrive without reloading.
let wasOpen = false;
let dropped = false;

// A part still in progress when the page was made (a job) may have finished before the
// socket joined the person's group: its last push went nowhere. On every open, such parts
// fetch their current state once.
// When one has moved on, the parts its end changed (e.g. a collection's sources) are
// stale too: the page's main part is fetched again.
async function refreshInProgress() {
  for (const element of document.querySelectorAll("[data-refresh-on-open][data-refresh-url]")) {
    try {
      const answer = await fetch(element.dataset.refreshUrl, { credentials: "same-origin" });
      if (!answer.ok) continue;
      const now = new DOMParser().parseFromString(await answer.text(), "text/html").body.firstElementChild;
      if (now && now.dataset.state !== element.dataset.state) {
        resync();
        return;
      }
    } catch {
      // offline for a moment: the next open tries again
    }
  }
}

document.addEventListener("htmx:wsOpen", () => {
  refreshInProgress();
  document.body.dataset.live = "connected";
  if (dropped) resync();
  wasOpen = true;
  dropped = false;
});
document.addEventListener("htmx:wsClose", () => {
  document.body.dataset.live = "disconnected";
  if (wasOpen) dropped = true;
});

function typedSomething(root) {
  // data-unsaved: the server gave back text it refused to save; it is still the person's.
  if (root.querySelector("[data-unsaved]")) return true;
  return [...root.querySelectorAll("input, textarea")].some((field) =>
    field.type !== "hidden" && field.type !== "checkbox" && field.type !== "radio"
    && field.value !== field.defaultValue);
}

// Fragments pushed while the socket was down are lost: fetch the page's main part
// again, unless the person is typing there (their text comes first; a notice says so).
function resync() {
  const main = document.getElementById("main");
  if (!main || !window.htmx) return;
  if (typedSomething(main)) {
    const notice = document.getElementById("live-missed");
    if (notice) notice.hidden = false;
    return;
  }
  main.dataset.resyncing = "1";
  window.htmx.ajax("GET", window.location.href, { target: "#main", select: "#main", swap: "outerHTML" })
    .then(() => {
      if (document.body.dataset.resyncKept) {
        delete document.body.dataset.resyncKept;
        return;
      }
      document.body.dataset.resynced = String(Number(document.body.dataset.resynced || 0) + 1);
    });
}

// The person may start typing (or pick files) while the resync is on its way: their input
// still comes first when the answer arrives.
document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  if (!(target instanceof HTMLElement) || target.id !== "main" || !target.dataset.resyncing) return;
  delete target.dataset.resyncing;
  if (typedSomething(target)) {
    event.detail.shouldSwap = false;
    document.body.dataset.resyncKept = "1";
    const notice = document.getElementById("live-missed");
    if (notice) notice.hidden = false;
  }
});

function answerStarted(root) {
  return typedSomething(root) || [...root.querySelectorAll("input[type=radio], input[type=checkbox]")]
    .some((field) => field.checked !== field.defaultChecked);
}

// A card the person has started to fill in (a question's choice, say) stays as it is when
// the block around it is pushed again while that card still waits: htmx keeps an element
// marked hx-preserve, so the pushed copy of it is marked so.
function keepStartedAnswers(target, fragment) {
  if (!fragment?.querySelector) return;
  const cards = target.matches("[data-keep-while-started]") ? [target] : [];
  cards.push(...target.querySelectorAll("[data-keep-while-started]"));
  for (const card of cards) {
    if (!card.id || !answerStarted(card)) continue;
    fragment.querySelector(`#${CSS.escape(card.id)}[data-keep-while-started]`)
      ?.setAttribute("hx-preserve", "true");
  }
}

// Before a pushed fragment replaces part of the page:
// - a notice about an older change never replaces a newer one (change sets count up), so a
//   late push from another tab cannot contradict what this tab just did (e.g. its Undo);
// - a part where the person is typing is left alone; a notice there says it is stale.
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  const { target, fragment } = event.detail;
  if (!(target instanceof HTMLElement)) return;
  if (target.id === "live-notice") {
    const incoming = fragment?.querySelector?.("[data-change-set]") || fragment?.firstElementChild;
    const shown = Number(target.dataset.changeSet || 0);
    const arriving = Number(incoming?.dataset?.changeSet || 0);
    if (shown && arriving && arriving <= shown) event.detail.shouldSwap = false;
    return;
  }
  keepStartedAnswers(target, fragment);
  if (target.dataset.staleNotice && typedSomething(target)) {
    event.detail.shouldSwap = false;
    const notice = document.getElementById(target.dataset.staleNotice);
    if (notice) notice.hidden = false;
  }
});

// Live pushes go to every open page of the person; a part this page does not show (the
// Memory tab's entries on the Inbox, say) is dropped before htmx looks for its target, so
// no htmx:oobErrorNoTarget. The socket element names this extension (base.html).
function oobTarget(element) {
  const value = element.getAttribute("hx-swap-oob") || "true";
  const colon = value.indexOf(":");
  return colon > 0 ? value.slice(colon + 1) : `#${CSS.escape(element.id)}`;
}
window.htmx?.defineExtension("live-targets", {
  transformResponse(text) {
    const template = document.createElement("template");
    template.innerHTML = text;
    let dropped = false;
    for (const element of [...template.content.children]) {
      let present = false;
      try {
        present = document.querySelector(oobTarget(element)) !== null;
      } catch {
        present = true; // not a plain selector: htmx decides
      }
      if (!present) {
        element.remove();
        dropped = true;
      }
    }
    return dropped ? template.innerHTML : text;
  },
});

// Pushed notices are rendered without the page's language: their words carry a key,
// and the page holds the words in its own language (#live-texts).
function translateLive(root) {
  const texts = document.getElementById("live-texts");
  if (!texts || !root?.querySelectorAll) return;
  root.querySelectorAll("[data-i18n]").forEach((element) => {
    const text = texts.querySelector(`[data-i18n-text="${CSS.escape(element.dataset.i18n)}"]`);
    if (text) element.textContent = text.textContent;
  });
}
document.addEventListener("htmx:oobAfterSwap", (event) => translateLive(event.target));
document.addEventListener("htmx:afterSettle", (event) => translateLive(event.target));

// Cards that arrive over the socket are rendered without a request, so their
// forms carry no CSRF field; give them the page's token when submitted.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== "post") return;
  if (form.querySelector("input[name=csrfmiddlewaretoken]")) return;
  const input = document.createElement("input");
  input.type = "hidden";
  input.name = "csrfmiddlewaretoken";
  input.value = csrfToken();
  form.appendChild(input);
}, true);
