// sdk for add-on pages. Load it in your page with
//   <script src="/static/js/addon-sdk.js"></script>
// Your page runs sandboxed and cannot reach the network; sdk.userSettings asks the
// host page, which reads and writes the signed-in person's settings of your add-on.
// Types: `memory-host addon types <folder>` writes sdk.d.ts for your manifest.
(function () {
  let next = 1;
  const waiting = new Map();
  const listeners = new Map();
  // Opened on its own (not in the host's frame) the page has nobody to ask.
  const inHost = window.parent !== window;
  const OUTSIDE =
    "This page works only inside the memory host: open it from Add-ons → the add-on → its " +
    "page. Opened on its own it cannot read or save settings.";

  const themeListeners = new Set();

  // The host's theme (light or dark) as the page's own colour scheme, so light-dark() and
  // [data-theme] in the page's CSS follow the person's choice.
  function themed(theme) {
    if (theme !== "light" && theme !== "dark") return;
    document.documentElement.style.colorScheme = theme;
    document.documentElement.dataset.theme = theme;
    window.sdk.theme = theme;
    for (const callback of themeListeners) callback(theme);
  }

  function changed(key, value) {
    for (const callback of listeners.get(key) || []) callback(value, key);
  }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.sdk !== 1) return;
    if (message.event === "theme") {
      themed(message.value);
      return;
    }
    if (message.event === "change" && typeof message.key === "string") {
      changed(message.key, message.value);
      return;
    }
    if (!waiting.has(message.id)) return;
    const { resolve, reject } = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.ok) resolve(message.value);
    else reject(new Error(message.error || "The host refused without giving a reason."));
  });

  function call(method, key, value) {
    if (!inHost) return Promise.reject(new Error(OUTSIDE));
    return new Promise((resolve, reject) => {
      const id = next++;
      const seconds = window.sdk.timeoutMs / 1000;
      // A host page that went away never answers: the promise says so instead of hanging.
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`The host did not answer within ${seconds} s.`));
      }, window.sdk.timeoutMs);
      waiting.set(id, {
        resolve: (result) => { clearTimeout(timer); resolve(result); },
        reject: (error) => { clearTimeout(timer); reject(error); },
      });
      window.parent.postMessage({ sdk: 1, id, method, key, value }, "*");
    });
  }

  window.sdk = {
    inHost,
    timeoutMs: 10000,
    theme: window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light",
    onTheme(callback) {
      themeListeners.add(callback);
      return () => themeListeners.delete(callback);
    },
    userSettings: {
      get: (key) => call("userSettings.get", key),
      set: (key, value) => call("userSettings.set", key, value),
      onChange(key, callback) {
        if (!listeners.has(key)) listeners.set(key, new Set());
        listeners.get(key).add(callback);
        return () => listeners.get(key).delete(callback);
      },
    },
  };
})();
