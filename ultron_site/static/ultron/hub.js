// The hub's admin pages: htmx requests carry the CSRF token (from Django's csrftoken cookie).
(function () {
  function cookie(name) {
    const match = document.cookie.split("; ").find((part) => part.startsWith(name + "="));
    return match ? decodeURIComponent(match.split("=")[1]) : "";
  }
  document.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRFToken"] = cookie("csrftoken");
  });
})();
