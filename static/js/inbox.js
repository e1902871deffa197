// Inbox: live character counters, and the empty state follows the list.
(function () {
  function updateCounter(textarea) {
    const counter = document.getElementById(textarea.dataset.counter);
    if (counter) counter.textContent = String(textarea.value.length);
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches("textarea[data-counter]")) updateCounter(event.target);
  });
  function syncEmptyState() {
    const list = document.getElementById("proposal-list");
    const empty = document.getElementById("inbox-empty");
    if (list && empty) empty.hidden = list.querySelector(".proposal") !== null;
  }
  document.addEventListener("htmx:oobAfterSwap", syncEmptyState);
  document.addEventListener("htmx:wsAfterMessage", syncEmptyState);
  document.addEventListener("DOMContentLoaded", syncEmptyState);
})();
