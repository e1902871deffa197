// Page behaviour without inline handlers (the Content-Security-Policy allows none).

// Says a short text once through the page's polite status region (base.html).
function announce(text) {
  const status = document.getElementById("page-status");
  if (!status) return;
  status.textContent = "";
  // Emptied first: the same text twice in a row is spoken again.
  requestAnimationFrame(() => { status.textContent = text; });
}

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
// The count is not a live region (it would be read out on every keystroke): the polite
// #page-status says how many are left once, when the field enters the last 20 and at 0.
const LOW = 20;
function updateCounter(field, typed = false) {
  const counter = document.getElementById(field.dataset.counter);
  if (!counter || !field.maxLength || field.maxLength < 0) return;
  const left = field.maxLength - field.value.length;
  counter.textContent = counter.hasAttribute("data-count-only")
    ? String(field.value.length)
    : `${field.value.length} / ${field.maxLength}`;
  counter.classList.toggle("counter-low", left < LOW);
  const band = left <= 0 ? "none" : left < LOW ? "low" : "plenty";
  if (typed && band !== field.dataset.counterBand && band !== "plenty") {
    announce((document.body.dataset.textCharactersLeft || "{left}").replace("{left}", String(Math.max(left, 0))));
  }
  field.dataset.counterBand = band;
}
document.addEventListener("input", (event) => {
  if (event.target instanceof HTMLElement && event.target.dataset.counter) updateCounter(event.target, true);
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
  const setOpen = (open) => {
    toggle.setAttribute("aria-expanded", String(open));
    bar.classList.toggle("menu-open", open);
  };
  toggle.addEventListener("click", () => setOpen(toggle.getAttribute("aria-expanded") !== "true"));
  // Escape closes the open menu and gives the focus back to its button.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || toggle.getAttribute("aria-expanded") !== "true") return;
    setOpen(false);
    toggle.focus();
  });
});

// Forms marked data-stay (adding a note, deciding a proposal) are sent with htmx and only
// the inside of <main> is swapped (or of the part a card names in data-stay-target, such
// as the block under a chat answer): the page does not jump to the top, the focus stays on
// the same field (or moves to the next card when the person's card is gone), and the
// page's confirmation lands in the #page-messages live region, which is spoken once.
function stayTarget(form) {
  return form.closest("[data-stay-target]")?.dataset.stayTarget || "#main";
}
function prepareStayForms(root) {
  root.querySelectorAll?.("form[data-stay]:not([hx-post])").forEach((form) => {
    const target = stayTarget(form);
    form.setAttribute("hx-post", form.getAttribute("action"));
    form.setAttribute("hx-target", target);
    form.setAttribute("hx-select", `${target} > *`);
    form.setAttribute("hx-swap", "innerHTML");
    window.htmx?.process(form);
  });
}
document.addEventListener("DOMContentLoaded", () => prepareStayForms(document));
document.addEventListener("htmx:oobAfterSwap", () => prepareStayForms(document));
let stayed = null;
document.addEventListener("htmx:beforeRequest", (event) => {
  const form = event.detail.elt;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-stay")) return;
  const card = form.closest("article[id]");
  stayed = {
    target: form.getAttribute("hx-target") || "#main",
    focused: document.activeElement?.id || "",
    card: card?.id || "",
    next: card?.nextElementSibling?.id || "",
    previous: card?.previousElementSibling?.id || "",
  };
});
// A refused note comes back as 422 with the form and its reason: it is shown too. The
// answer's messages go into the page's #page-messages region here, by hand: a live push
// may already have removed the person's card (and its form) from the page.
document.addEventListener("htmx:beforeSwap", (event) => {
  const form = event.detail.requestConfig?.elt;
  if (!form?.hasAttribute?.("data-stay")) return;
  const status = event.detail.xhr.status;
  if (status >= 400 && status < 500) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
  const answer = new DOMParser().parseFromString(event.detail.xhr.responseText, "text/html");
  const incoming = answer.getElementById("page-messages");
  const region = document.getElementById("page-messages");
  if (incoming && region) region.replaceChildren(...incoming.childNodes);
});
document.addEventListener("htmx:afterSettle", (event) => {
  if (!stayed || !(event.target instanceof HTMLElement)) return;
  if (`#${event.target.id}` !== stayed.target) return;
  const { focused, card, next, previous } = stayed;
  stayed = null;
  prepareStayForms(event.target);
  const byId = (id) => (id ? document.getElementById(id) : null);
  let target = byId(focused);
  if (!target && card && !byId(card)) {
    const neighbour = byId(next) || byId(previous);
    target = neighbour?.querySelector("button, a[href], textarea, input:not([type=hidden])") || null;
  }
  if (!target) {
    // The page's heading, or the block under the answer that the card was in.
    target = event.target.id === "main" ? event.target.querySelector("h1") : event.target;
    target?.setAttribute("tabindex", "-1");
  }
  target?.focus({ preventScroll: true });
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
