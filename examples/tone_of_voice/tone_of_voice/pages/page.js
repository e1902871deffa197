// Runs sandboxed: window.sdk.userSettings is the only way to the host.
const shown = document.getElementById("tone");
const status = document.getElementById("status");

window.sdk.userSettings.get("tone").then(
  (tone) => { shown.textContent = tone; },
  (error) => { status.textContent = error.message; },
);

for (const button of document.querySelectorAll("button[data-tone]")) {
  button.addEventListener("click", async () => {
    try {
      shown.textContent = await window.sdk.userSettings.set("tone", button.dataset.tone);
      status.textContent = "Saved.";
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
    }
  });
}
