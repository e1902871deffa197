import { csrfToken } from "./sdk.js";

// Marks the page while its live-events socket is open, so people (and tests)
// can tell that updates arrive without reloading.
let wasOpen = false;
let dropped = false;

document.addEventListener("htmx:wsOpen", () => {
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
  window.htmx.ajax("GET", window.location.href, { target: "#main", select: "#main", swap: "outerHTML" })
    .then(() => { document.body.dataset.resynced = String(Number(document.body.dataset.resynced || 0) + 1); });
}

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
