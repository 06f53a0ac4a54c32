// The hub's admin pages: htmx requests carry the CSRF token (from Django's csrftoken cookie).
(function () {
  function cookie(name) {
    const match = document.cookie.split("; ").find((part) => part.startsWith(name + "="));
    return match ? decodeURIComponent(match.split("=")[1]) : "";
  }
  document.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRFToken"] = cookie("csrftoken");
  });
  // The header's space switcher goes as soon as a space is chosen (its button is shown only
  // without scripts).
  document.addEventListener("change", function (event) {
    const select = event.target;
    if (select.matches && select.matches("select[data-autosubmit]")) {
      select.form.submit();
    }
  });
  // A conversation opened from a memory scrolls to the first message the memory came from.
  function showSource(root) {
    const first = root.querySelector && root.querySelector("[data-first-source]");
    const box = first && first.closest(".hub-conversation");
    if (box) { box.scrollTop = first.offsetTop - box.offsetTop - 8; }
  }
  document.addEventListener("htmx:afterSettle", function (event) { showSource(event.target); });
  document.addEventListener("DOMContentLoaded", function () { showSource(document); });
  // Several session files can be chosen at once: list them all beside the button.
  document.addEventListener("change", function (event) {
    const input = event.target;
    const box = input.closest && input.closest(".hub-file");
    if (box && input.files) {
      const names = Array.from(input.files).map((file) => file.name).join(", ");
      setTimeout(function () { box.querySelector(".hub-file-names").value = names; }, 0);
    }
  });
})();
