// The console's one script (the pages work without it): keyboard navigation of lists
// (j/k or arrows move, Enter or o opens, x selects for bulk triage, / searches), and a
// confirmation before destructive forms. Loaded from the console's own origin: the
// Content-Security-Policy allows no other script and no inline one.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-href]"));
  var current = -1;
  function select(index) {
    if (!rows.length) return;
    if (current >= 0) rows[current].classList.remove("selected");
    current = Math.max(0, Math.min(rows.length - 1, index));
    rows[current].classList.add("selected");
    rows[current].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.key === "j" || event.key === "ArrowDown") { select(current + 1); event.preventDefault(); }
    else if (event.key === "k" || event.key === "ArrowUp") { select(current - 1); event.preventDefault(); }
    else if ((event.key === "Enter" || event.key === "o") && current >= 0) { window.location.assign(rows[current].getAttribute("data-href")); }
    else if (event.key === "x" && current >= 0) {
      var box = rows[current].querySelector("input[type=checkbox]");
      if (box) box.checked = !box.checked;
    } else if (event.key === "/") {
      var search = document.querySelector("input[name=q]");
      if (search) { search.focus(); event.preventDefault(); }
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll("form[data-confirm]"), function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
    });
  });
})();
