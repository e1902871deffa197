// Chat page: catch up after the socket (re)connects, copy buttons, citations, composer.

// A page loaded mid-answer shows the text stored so far; once its socket is open it
// asks for each unfinished message again, so nothing pushed in between is missed.
function refreshStreaming() {
  document.querySelectorAll("article.msg[data-state=streaming]").forEach((el) => {
    htmx.ajax("GET", el.dataset.refreshUrl, { target: el, swap: "outerHTML" });
  });
}
document.addEventListener("htmx:wsOpen", refreshStreaming);
// A sent message's answer can finish (or fail) before the send's response is on the page;
// its pushes found nothing to replace then, so the new answer asks for itself once.
document.addEventListener("htmx:afterSwap", (event) => {
  if (event.detail.target && event.detail.target.id === "messages") refreshStreaming();
});

const texts = document.body.dataset;

function addCopyButtons(root) {
  root.querySelectorAll(".md pre").forEach((pre) => {
    if (pre.querySelector("button.copy")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = texts.textCopy || "Copy";
    button.setAttribute("aria-label", texts.textCopyCode || "Copy code");
    button.addEventListener("click", async () => {
      const code = pre.querySelector("code");
      try {
        // The fence's last line break is the renderer's, not part of the code.
        const text = code ? code.innerText : pre.innerText;
        await navigator.clipboard.writeText(text.replace(/\n$/, ""));
        button.textContent = texts.textCopied || "Copied";
      } catch (error) {
        button.textContent = texts.textCopyFailed || "Copy failed";
      }
      setTimeout(() => { button.textContent = texts.textCopy || "Copy"; }, 1500);
    });
    pre.prepend(button);
  });
}

// Every finished answer can be copied whole, as the text it shows (without the code
// blocks' own Copy buttons).
function addAnswerCopyButtons(root) {
  root.querySelectorAll("article.msg-assistant[data-state=complete] .md").forEach((body) => {
    if (body.nextElementSibling?.classList.contains("copy-answer")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-answer link";
    button.textContent = texts.textCopyAnswer || "Copy answer";
    button.addEventListener("click", async () => {
      const text = body.cloneNode(true);
      text.querySelectorAll("button.copy").forEach((el) => el.remove());
      try {
        await navigator.clipboard.writeText(text.innerText.trim());
        button.textContent = texts.textCopied || "Copied";
      } catch (error) {
        button.textContent = texts.textCopyFailed || "Copy failed";
      }
      setTimeout(() => { button.textContent = texts.textCopyAnswer || "Copy answer"; }, 1500);
    });
    body.after(button);
  });
}

function openCitation(hash) {
  if (!hash || !hash.startsWith("#cite-")) return;
  const target = document.getElementById(hash.slice(1));
  if (target && target.tagName === "DETAILS") {
    target.open = true;
    target.scrollIntoView({ block: "nearest" });
    const summary = target.querySelector("summary");
    if (summary) summary.focus();
  }
}
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href^='#cite-']");
  if (!link) return;
  event.preventDefault();
  openCitation(link.getAttribute("href"));
});

function stickToBottom() {
  const list = document.getElementById("messages");
  if (!list) return;
  const last = list.lastElementChild;
  if (last && last.dataset.state === "streaming") {
    const rect = last.getBoundingClientRect();
    if (rect.bottom > window.innerHeight) window.scrollBy(0, Math.min(rect.bottom - window.innerHeight + 16, 400));
  }
}

function enhance() {
  addCopyButtons(document);
  addAnswerCopyButtons(document);
  stickToBottom();
}
document.addEventListener("htmx:afterSwap", enhance);
document.addEventListener("htmx:oobAfterSwap", enhance);
document.addEventListener("htmx:wsAfterMessage", enhance);
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", () => { enhance(); openCitation(location.hash); });
} else {
  enhance();
  openCitation(location.hash);
}

// Only the newest answer keeps Regenerate; older ones lose it once a new one arrives.
function pruneOldActions() {
  const answers = document.querySelectorAll("#messages article.msg-assistant");
  answers.forEach((article, index) => {
    if (index < answers.length - 1) article.querySelectorAll(".msg-actions").forEach((el) => el.remove());
  });
}
document.addEventListener("htmx:afterSwap", pruneOldActions);

document.addEventListener("htmx:afterRequest", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.id !== "composer") return;
  if (!event.detail.successful || document.querySelector("#composer-error .error")) return;
  // "Edit your last message" now means the message just sent.
  const sent = form.querySelector("#composer-text");
  const edit = document.getElementById("edit-last-text");
  if (sent && edit) {
    edit.value = sent.value;
    edit.closest("details").hidden = false;
  }
  form.reset();
});

// In every message box Enter sends and Shift+Enter adds a line; Ctrl/Cmd+Enter always
// sends. The person can swap Enter to add lines (kept in this browser).
const ENTER_KEY = "memory-host.enter-adds-line";
const swapBox = document.getElementById("enter-adds-line");

function enterAddsLine() {
  return localStorage.getItem(ENTER_KEY) === "yes";
}

const hint = document.getElementById("keys-hint");
const hintTexts = hint ? { usual: hint.textContent, swapped: hint.dataset.swapped } : null;

function showHint() {
  if (hint) hint.textContent = enterAddsLine() ? hintTexts.swapped : hintTexts.usual;
}

if (swapBox) {
  swapBox.checked = enterAddsLine();
  showHint();
  swapBox.addEventListener("change", () => {
    localStorage.setItem(ENTER_KEY, swapBox.checked ? "yes" : "no");
    showHint();
  });
}

document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (event.key !== "Enter" || !(box instanceof HTMLTextAreaElement)) return;
  if (!box.hasAttribute("data-enter-sends") || !box.form) return;
  if (event.isComposing || event.shiftKey || event.altKey) return; // an input method, or a new line
  const chord = event.ctrlKey || event.metaKey;
  if (!chord && enterAddsLine()) return;
  event.preventDefault();
  // requestSubmit checks the form (an empty box is refused) and htmx hears its submit.
  box.form.requestSubmit();
});

// On wide screens the conversation list stays open beside the chat.
if (window.matchMedia("(min-width: 721px)").matches) {
  document.querySelectorAll("details.chat-list-box").forEach((box) => { box.open = true; });
}

// Editing a message inline: Escape (or Cancel) puts the text back and closes the form.
function cancelEdit(form) {
  const box = form.querySelector("textarea");
  if (box) box.value = box.defaultValue;
  const details = form.closest("details");
  if (details) {
    details.open = false;
    details.querySelector("summary")?.focus();
  }
}
document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (event.key !== "Escape" || !(box instanceof HTMLTextAreaElement)) return;
  if (!box.hasAttribute("data-escape-cancels") || !box.form) return;
  event.preventDefault();
  cancelEdit(box.form);
});
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-edit-cancel]");
  if (button && button.form) cancelEdit(button.form);
});
document.addEventListener("toggle", (event) => {
  const details = event.target;
  if (details instanceof HTMLDetailsElement && details.classList.contains("msg-edit") && details.open) {
    details.querySelector("textarea")?.focus();
  }
}, true);

// Attaching: a picked or dropped file is uploaded at once; the chips show its progress.
const attachForm = document.getElementById("attach-form");
const attachInput = document.getElementById("attach-files");
if (attachForm && attachInput) {
  attachInput.addEventListener("change", () => {
    if (attachInput.files.length) attachForm.requestSubmit();
  });
  attachForm.addEventListener("htmx:afterRequest", () => { attachForm.reset(); });
  const dropZone = document.querySelector(".chat-main");
  dropZone?.addEventListener("dragover", (event) => {
    if (event.dataTransfer?.types.includes("Files")) event.preventDefault();
  });
  dropZone?.addEventListener("drop", (event) => {
    if (!event.dataTransfer?.files.length) return;
    event.preventDefault();
    attachInput.files = event.dataTransfer.files;
    attachForm.requestSubmit();
  });
}
