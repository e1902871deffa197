// The admin keeps its theme in localStorage; hand it the site's choice before the
// admin's own theme.js reads it.
const chosen = document.currentScript?.dataset.theme;
localStorage.setItem("theme", chosen === "light" || chosen === "dark" ? chosen : "auto");

// The admin's two-box picker labels its search icons with aria-label on a bare span, which
// assistive technology ignores (axe: aria-prohibited-attr): they are images with a name.
new MutationObserver(() => {
  document.querySelectorAll(".search-label-icon[aria-label]:not([role])").forEach((icon) => {
    icon.setAttribute("role", "img");
  });
}).observe(document.documentElement, { childList: true, subtree: true });
