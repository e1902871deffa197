// The add-on SDK for pages: sdk.userSettings reads and writes the signed-in
// person's settings of an add-on through /api/addons/{addon}/settings/{key}.
// The server validates every value against the add-on's declared setting.

export function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  } catch (error) {
    return "";
  }
}

async function request(method, addon, key, body) {
  const url = `/api/addons/${encodeURIComponent(addon)}/settings/${encodeURIComponent(key)}`;
  let response;
  try {
    response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new Error("The server could not be reached. Check your connection and try again.");
  }
  let data = {};
  try {
    data = await response.json();
  } catch (error) {
    data = {};
  }
  if (!response.ok) {
    throw new Error(data.detail || `The server answered ${response.status}.`);
  }
  return data.value;
}

export const userSettings = {
  get(addon, key) {
    return request("GET", addon, key);
  },
  set(addon, key, value) {
    return request("PUT", addon, key, { value });
  },
};

export const sdk = { userSettings };
window.sdk = Object.assign(window.sdk || {}, sdk);
