// API tokens page: copy the token that is shown once (no inline script: CSP).
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element && event.target.closest("[data-copy-target]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copyTarget);
  const status = document.getElementById("copy-status");
  if (!field) return;
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
    if (status) status.textContent = status.dataset.textCopied || "Copied.";
  } catch {
    // Clipboard refused (no permission, plain http): the text stays selected to copy by hand.
    if (status) status.textContent = status.dataset.textCopyByHand || "Press Ctrl+C (⌘C) to copy the selected text.";
  }
});
