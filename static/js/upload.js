// Collection uploads: drag and drop or the file input, checked against the server's own
// rules (given by the page), then sent in one request whose progress is shown per file.
// Without this script the form posts normally.

function uploadSetup(form) {
  if (form.dataset.uploadReady) return;
  form.dataset.uploadReady = "1";
  const input = form.querySelector("input[type=file]");
  const zone = form.querySelector("[data-drop-zone]");
  const list = form.querySelector("[data-upload-list]");
  const maxBytes = Number(form.dataset.maxBytes);
  const suffixes = new Set(form.dataset.formats.split(" ").filter(Boolean));
  const names = new Set(form.dataset.names.split(" ").filter(Boolean));
  let chosen = [];

  function problem(file) {
    if (file.size > maxBytes) return form.dataset.textTooBig;
    const lower = file.name.toLowerCase();
    const dot = lower.lastIndexOf(".");
    const allowed = (dot > 0 && suffixes.has(lower.slice(dot))) || names.has(lower);
    return allowed ? "" : form.dataset.textFormat;
  }

  function size(bytes) {
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }

  function show(files) {
    chosen = files.map((file) => ({ file, problem: problem(file) }));
    list.replaceChildren(
      ...chosen.map((entry) => {
        const item = document.createElement("li");
        item.dataset.state = entry.problem ? "refused" : "ready";
        const name = document.createElement("span");
        name.className = "name";
        name.textContent = `${entry.file.name} (${size(entry.file.size)})`;
        const state = document.createElement("span");
        state.className = "state";
        state.textContent = entry.problem || form.dataset.textReady;
        item.append(name, state);
        if (!entry.problem) {
          const bar = document.createElement("progress");
          bar.max = 100;
          bar.value = 0;
          bar.setAttribute("aria-label", entry.file.name);
          item.append(bar);
          entry.bar = bar;
          entry.state = state;
        }
        entry.item = item;
        return item;
      }),
    );
  }

  input.addEventListener("change", () => show(Array.from(input.files)));
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    const files = event.dataTransfer?.files;
    if (!files || !files.length) return;
    try {
      input.files = files; // keeps the plain form in step where the browser allows it
    } catch {
      // older browsers: the list below is what gets sent
    }
    show(Array.from(files));
  });

  form.addEventListener("submit", (event) => {
    if (!chosen.length) return; // nothing picked: the server says so
    event.preventDefault();
    const sending = chosen.filter((entry) => !entry.problem);
    if (!sending.length) {
      window.alert(form.dataset.textNothing);
      return;
    }
    if (sending.length > Number(form.dataset.maxFiles)) {
      window.alert(form.dataset.textTooMany);
      return;
    }
    // The server refuses a larger upload before reading it (REQUEST_MAX_UPLOAD_BYTES).
    const total = sending.reduce((sum, entry) => sum + entry.file.size, 0);
    if (total > Number(form.dataset.maxTotal)) {
      window.alert(form.dataset.textTooMuch);
      return;
    }
    const body = new FormData();
    body.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    sending.forEach((entry) => body.append(input.name, entry.file, entry.file.name));
    const request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.setRequestHeader("HX-Request", "true");
    request.upload.addEventListener("progress", (progress) => {
      if (!progress.lengthComputable || !progress.total) return;
      // One request carries the files in order: the bytes sent so far say how far each is.
      const sent = (progress.loaded / progress.total) * total;
      let offset = 0;
      sending.forEach((entry) => {
        const share = entry.file.size ? (sent - offset) / entry.file.size : sent >= offset ? 1 : 0;
        entry.bar.value = Math.round(100 * Math.min(1, Math.max(0, share)));
        entry.state.textContent = `${entry.bar.value}%`;
        offset += entry.file.size;
      });
    });
    request.upload.addEventListener("load", () => {
      sending.forEach((entry) => {
        entry.bar.value = 100;
        entry.state.textContent = form.dataset.textSent;
        entry.item.dataset.state = "sent";
      });
    });
    request.addEventListener("load", () => {
      const target = request.getResponseHeader("HX-Redirect");
      if (target) {
        window.location.assign(target);
        return;
      }
      if (request.status === 400 && request.responseText) {
        // The server refused: its form, with the reason, replaces this one.
        const card = form.closest("#upload-card");
        const fresh = new DOMParser()
          .parseFromString(request.responseText, "text/html")
          .querySelector("#upload-card");
        if (card && fresh) {
          card.replaceWith(document.importNode(fresh, true));
          document.querySelectorAll("form[data-upload]").forEach(uploadSetup);
          return;
        }
      }
      form.querySelector("button[type=submit]").disabled = false;
      window.alert(form.dataset.textFailed);
    });
    request.addEventListener("error", () => {
      form.querySelector("button[type=submit]").disabled = false;
      window.alert(form.dataset.textFailed);
    });
    form.querySelector("button[type=submit]").disabled = true;
    request.send(body);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-upload]").forEach(uploadSetup);
});
