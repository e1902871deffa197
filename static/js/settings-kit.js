// Settings kit: every setting an add-on declares, saved through sdk.userSettings.
// A setting with choices is a radio group (a line per option); a boolean is a checkbox;
// text and whole numbers are inputs saved when they change. On failure the earlier
// value comes back on screen and the reason is shown.
import { userSettings } from "./sdk.js";

function current(group, type) {
  const radio = group.querySelector("input[type=radio]");
  if (radio) return group.querySelector("input[type=radio]:checked")?.value;
  const input = group.querySelector("input");
  return input.type === "checkbox" ? input.checked : input.value;
}

function valueOf(input, type) {
  if (input.type === "radio") return JSON.parse(input.value);
  if (input.type === "checkbox") return input.checked;
  if (type === "integer") return input.value.trim() === "" ? null : Number(input.value);
  return input.value;
}

function restore(group, saved) {
  const radio = group.querySelector("input[type=radio]");
  if (radio) {
    const previous = [...group.querySelectorAll("input[type=radio]")].find((r) => r.value === saved);
    if (previous) previous.checked = true;
    return;
  }
  const input = group.querySelector("input");
  if (input.type === "checkbox") input.checked = saved;
  else input.value = saved;
}

for (const group of document.querySelectorAll("[data-setting-kit]")) {
  const { addon, key, type } = group.dataset;
  const status = group.querySelector("[data-setting-status]");
  let saved = current(group, type);

  group.addEventListener("change", async (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement)) return;
    status.textContent = status.dataset.textSaving || "Saving…";
    status.className = "muted";
    try {
      await userSettings.set(addon, key, valueOf(input, type));
      saved = current(group, type);
      status.textContent = status.dataset.textSaved || "Saved.";
      status.className = "notice";
    } catch (error) {
      restore(group, saved);
      const { textNotSaved = "Not saved:", textKept = "Your earlier choice is kept." } = status.dataset;
      status.textContent = `${textNotSaved} ${error.message} ${textKept}`;
      status.className = "error";
    }
  });
}
