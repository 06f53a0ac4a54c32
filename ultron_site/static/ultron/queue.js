// The review queue's keys: j / k move between rows, m d o u c s press the focused row's button with
// that key (data-key), x selects the row for a bulk decision, ? opens the help. Typing in a field
// never triggers them. The bulk bar's buttons are enabled while rows are selected.
(function () {
  function rows() { return Array.prototype.slice.call(document.querySelectorAll(".hub-queue-row")); }
  function current() { return document.querySelector(".hub-queue-row.hub-queue-focus"); }
  function focus(row) {
    var was = current();
    if (was) { was.classList.remove("hub-queue-focus"); }
    if (row) { row.classList.add("hub-queue-focus"); row.focus({ preventScroll: true }); row.scrollIntoView({ block: "nearest" }); }
  }
  function move(step) {
    var all = rows().filter(function (r) { return r.querySelector("button[data-key]"); });
    if (!all.length) { return; }
    var at = all.indexOf(current());
    focus(all[Math.max(0, Math.min(all.length - 1, at < 0 ? 0 : at + step))]);
  }
  function selection() {
    var boxes = Array.prototype.slice.call(document.querySelectorAll('.hub-queue-row input[name="items"]'));
    var chosen = boxes.filter(function (box) { return box.checked; }).length;
    var counter = document.getElementById("queue-selected");
    if (counter) { counter.textContent = String(chosen); }
    document.querySelectorAll('#queue-bulk button[type="submit"]').forEach(function (button) { button.disabled = chosen === 0; });
    return boxes;
  }
  // The sidebar's Review badge follows the counts the queue fetches again after each decision.
  document.addEventListener("htmx:afterSettle", function () {
    var counts = document.getElementById("queue-counts");
    if (!counts) { return; }
    var link = document.querySelector('#nav-sidebar a[href="' + counts.dataset.queue + '"], nav a[href="' + counts.dataset.queue + '"]');
    var badge = link && link.querySelector("span:last-child");
    if (badge && /^\d*$/.test(badge.textContent.trim())) {
      var none = counts.dataset.total === "0";
      badge.textContent = none ? "" : counts.dataset.total;
      badge.hidden = none;  // no empty box when nothing waits (the server draws none then either)
    }
  });
  document.addEventListener("change", function (event) {
    if (event.target && event.target.name === "items") { selection(); }
  });
  document.addEventListener("click", function (event) {
    var all = event.target && event.target.closest && event.target.closest("[data-select-all]");
    if (!all) { return; }
    var boxes = selection().filter(function (box) { return !box.disabled; });
    var every = boxes.every(function (box) { return box.checked; });
    boxes.forEach(function (box) { box.checked = !every; });
    selection();
  });
  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("review-queue")) { return; }
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey ||
        (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)))) { return; }
    var help = document.getElementById("queue-help");
    if (event.key === "?") { help.showModal(); event.preventDefault(); return; }
    if (event.key === "j") { move(1); event.preventDefault(); return; }
    if (event.key === "k") { move(-1); event.preventDefault(); return; }
    var row = current();
    if (!row) { return; }
    if (event.key === "x") {
      var box = row.querySelector('input[name="items"]');
      if (box && !box.disabled) { box.checked = !box.checked; selection(); }
      event.preventDefault();
      return;
    }
    var button = row.querySelector('button[data-key="' + event.key + '"]');
    if (button) { button.click(); event.preventDefault(); }
  });
  // A decided row is replaced by its outcome: focus moves on to the next undecided one.
  document.addEventListener("htmx:afterSwap", function (event) {
    var row = event.target.closest && event.target.closest(".hub-queue-row");
    if (row && row === current()) { move(1); }
    selection();
  });
  document.addEventListener("DOMContentLoaded", selection);
})();
