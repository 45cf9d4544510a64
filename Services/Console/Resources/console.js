// The console's one script (the pages work without it): keyboard navigation of lists
// (j/k or arrows move, Enter or o opens, x selects for bulk triage, / searches), a box that
// selects every item shown, a confirmation before destructive forms, copy buttons, and on an
// item's page the line saying who else has it open (asked every 15 seconds while the tab is
// visible, never while it is hidden). Loaded from the console's own origin: the
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
  Array.prototype.forEach.call(document.querySelectorAll("input[data-select-all]"), function (all) {
    all.addEventListener("change", function () {
      Array.prototype.forEach.call(document.querySelectorAll("input[type=checkbox][form=bulk]"), function (box) {
        box.checked = all.checked;
      });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("button[data-copy]"), function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) return;
      navigator.clipboard.writeText(source.getAttribute("data-value") || source.textContent).then(function () {
        button.textContent = "Copied";
      });
    });
  });
  var presence = document.querySelector("[data-presence]");
  var csrf = document.querySelector("input[name=csrf]");
  if (presence && csrf) {
    var url = presence.getAttribute("data-presence");
    var seen = presence.getAttribute("data-seen") || "0";
    var body = function (extra) {
      return "csrf=" + encodeURIComponent(csrf.value) + "&seen=" + encodeURIComponent(seen) + (extra || "");
    };
    var ask = function () {
      if (document.visibilityState !== "visible") return;
      fetch(url, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: body()
      }).then(function (answer) { return answer.ok ? answer.text() : ""; })
        .then(function (line) { presence.textContent = line; })
        .catch(function () {});
    };
    ask();
    var timer = window.setInterval(ask, 15000);
    document.addEventListener("visibilitychange", ask);
    window.addEventListener("pagehide", function () {
      window.clearInterval(timer);
      if (navigator.sendBeacon) {
        navigator.sendBeacon(url, new Blob([body("&left=1")], { type: "application/x-www-form-urlencoded" }));
      }
    });
  }
})();
