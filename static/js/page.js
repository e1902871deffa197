// Page behaviour without inline handlers (the Content-Security-Policy allows none).

// Destructive forms and buttons ask first: data-confirm holds the question.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const button = event.submitter;
  const question = (button && button.dataset.confirm) || form.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    event.stopPropagation(); // htmx listens on the form itself and would still send it
  }
}, true);

// A picker that changes the page (e.g. the memory scope) submits its form at once.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.hasAttribute("data-submit-on-change")) {
    field.form?.requestSubmit();
  }
});

// Fields with data-counter show how many characters are left (the id of the counter).
// A counter marked data-count-only is followed by its own "/ 300 characters" label.
function updateCounter(field) {
  const counter = document.getElementById(field.dataset.counter);
  if (!counter || !field.maxLength || field.maxLength < 0) return;
  const left = field.maxLength - field.value.length;
  counter.textContent = counter.hasAttribute("data-count-only")
    ? String(field.value.length)
    : `${field.value.length} / ${field.maxLength}`;
  counter.classList.toggle("counter-low", left < 20);
}
document.addEventListener("input", (event) => {
  if (event.target instanceof HTMLElement && event.target.dataset.counter) updateCounter(event.target);
});
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-counter]").forEach(updateCounter);
});
document.addEventListener("htmx:afterSettle", (event) => {
  event.target.querySelectorAll?.("[data-counter]").forEach(updateCounter);
});

// Undo after saving a rule is offered for a short time: hide it when that time is over.
function hideExpired() {
  const now = Date.now();
  document.querySelectorAll("[data-hide-after]").forEach((element) => {
    const until = Date.parse(element.dataset.hideAfter);
    if (!Number.isNaN(until) && until <= now) element.remove();
  });
}
setInterval(hideExpired, 1000);

// Narrow screens: the navigation folds into a menu behind one button (CSS decides when).
document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.querySelector(".menu-toggle");
  const bar = toggle?.closest(".topbar");
  if (!toggle || !bar) return;
  toggle.hidden = false;
  bar.classList.add("menu-ready");
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    bar.classList.toggle("menu-open", open);
  });
});

// Narrow screens show each table row as a card: every cell is labelled with its column.
function labelCells(root) {
  root.querySelectorAll?.("table.table").forEach((table) => {
    const heads = Array.from(table.querySelectorAll("thead th")).map((th) => th.textContent.trim());
    table.querySelectorAll("tbody tr").forEach((row) => {
      Array.from(row.children).forEach((cell, index) => {
        if (heads[index] && !cell.dataset.label) cell.dataset.label = heads[index];
      });
    });
  });
}
document.addEventListener("DOMContentLoaded", () => labelCells(document));
document.addEventListener("htmx:afterSettle", (event) => labelCells(event.target));
// Live fragments (websocket swaps) bring new tables too: label their cells as they arrive.
document.addEventListener("htmx:oobAfterSwap", () => labelCells(document));

// Editors with data-warn-unsaved ask before the page is left with text not saved: text
// typed since the last save, or text the server refused (data-unsaved on the form).
let submittingPage = false;
document.addEventListener("submit", (event) => {
  const form = event.target;
  // A plain form submit leaves the page on purpose; an htmx one stays.
  if (form instanceof HTMLFormElement && !event.defaultPrevented && !form.hasAttribute("hx-post")) {
    submittingPage = true;
  }
});
function unsavedText(form) {
  if (form.dataset.unsaved === "true") return true;
  return [...form.querySelectorAll("textarea, input[type=text], input:not([type])")].some(
    (field) => field.value !== field.defaultValue,
  );
}
window.addEventListener("beforeunload", (event) => {
  if (submittingPage) return;
  if ([...document.querySelectorAll("form[data-warn-unsaved]")].some(unsavedText)) {
    event.preventDefault();
    event.returnValue = "";
  }
});
