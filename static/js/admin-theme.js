// The admin keeps its theme in localStorage; hand it the site's choice before the
// admin's own theme.js reads it.
const chosen = document.currentScript?.dataset.theme;
localStorage.setItem("theme", chosen === "light" || chosen === "dark" ? chosen : "auto");
