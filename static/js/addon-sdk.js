// sdk for add-on pages. Load it in your page with
//   <script src="/static/js/addon-sdk.js"></script>
// Your page runs sandboxed and cannot reach the network; sdk.userSettings asks the
// host page, which reads and writes the signed-in person's settings of your add-on.
(function () {
  let next = 1;
  const waiting = new Map();

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.sdk !== 1 || !waiting.has(message.id)) return;
    const { resolve, reject } = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.ok) resolve(message.value);
    else reject(new Error(message.error || "The host refused."));
  });

  function call(method, key, value) {
    return new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      window.parent.postMessage({ sdk: 1, id, method, key, value }, "*");
    });
  }

  window.sdk = {
    userSettings: {
      get: (key) => call("userSettings.get", key),
      set: (key, value) => call("userSettings.set", key, value),
    },
  };
})();
