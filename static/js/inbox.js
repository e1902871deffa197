// Inbox: live character counters, and the empty state and bulk buttons follow the list.
(function () {
  function updateCounter(textarea) {
    const counter = document.getElementById(textarea.dataset.counter);
    if (counter) counter.textContent = String(textarea.value.length);
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches("textarea[data-counter]")) updateCounter(event.target);
  });
  // A card can come back twice (the answer to Undo and the live push): keep the first.
  function dropDuplicateCards(list) {
    const seen = new Set();
    list.querySelectorAll(".proposal").forEach(function (card) {
      if (seen.has(card.id)) card.remove();
      else seen.add(card.id);
    });
  }
  function syncEmptyState() {
    const list = document.getElementById("proposal-list");
    const empty = document.getElementById("inbox-empty");
    const bulk = document.getElementById("inbox-bulk");
    if (!list) return;
    dropDuplicateCards(list);
    const hasCards = list.querySelector(".proposal") !== null;
    if (empty) empty.hidden = hasCards;
    if (bulk) bulk.hidden = !hasCards;
  }
  document.addEventListener("htmx:oobAfterSwap", syncEmptyState);
  document.addEventListener("htmx:wsAfterMessage", syncEmptyState);
  document.addEventListener("htmx:afterSettle", syncEmptyState);
  document.addEventListener("DOMContentLoaded", syncEmptyState);
})();
