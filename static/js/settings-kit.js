// Settings kit: a radio group per declared setting, saved through sdk.userSettings.
// On failure the earlier choice comes back on screen and the reason is shown.
import { userSettings } from "./sdk.js";

for (const group of document.querySelectorAll("[data-setting-kit]")) {
  const { addon, key } = group.dataset;
  const status = group.querySelector("[data-setting-status]");
  let saved = group.querySelector("input[type=radio]:checked")?.value;

  group.addEventListener("change", async (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || input.type !== "radio") return;
    status.textContent = "Saving…";
    status.className = "muted";
    try {
      saved = await userSettings.set(addon, key, input.value);
      status.textContent = "Saved.";
      status.className = "notice";
    } catch (error) {
      const previous = group.querySelector(`input[type=radio][value="${saved}"]`);
      if (previous) previous.checked = true;
      status.textContent = `Not saved: ${error.message} Your earlier choice is kept.`;
      status.className = "error";
    }
  });
}
