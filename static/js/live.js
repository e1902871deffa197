import { csrfToken } from "./sdk.js";

// Marks the page while its live-events socket is open, so people (and tests)
// can tell that updates arrive without reloading.
document.addEventListener("htmx:wsOpen", () => { document.body.dataset.live = "connected"; });
document.addEventListener("htmx:wsClose", () => { document.body.dataset.live = "disconnected"; });

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
