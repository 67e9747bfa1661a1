// Live status for the console pages (served from the crate; the pages carry no inline
// script). The runs table updates its status cells; the run page reloads when its run
// commits a new checkpoint, so the timeline and the forms stay current.
(function () {
  "use strict";
  function start() {
    var runs = document.getElementById("runs");
    var run = document.getElementById("run");
    if (!runs && !run) { return; }
    var url = "/ui/events";
    if (run) { url += "?run=" + encodeURIComponent(run.getAttribute("data-run-id")); }
    var source = new EventSource(url);
    source.addEventListener("status", function (message) {
      var rows;
      try { rows = JSON.parse(message.data); } catch (e) { return; }
      rows.forEach(function (row) {
        if (run) {
          var seen = run.getAttribute("data-checkpoint-seq");
          if (row.run_id === run.getAttribute("data-run-id") && String(row.checkpoint_seq) !== seen) {
            source.close();
            window.location.reload();
          }
          return;
        }
        var cells = runs.querySelectorAll("tr.run-row");
        for (var i = 0; i < cells.length; i++) {
          if (cells[i].getAttribute("data-run-id") !== row.run_id) { continue; }
          var status = cells[i].querySelector(".run-status");
          if (status) {
            status.textContent = row.status;
            status.setAttribute("data-status", row.status);
            status.className = "run-status status-" + row.status;
          }
          var step = cells[i].querySelector(".run-step");
          if (step) { step.textContent = String(row.step); }
        }
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
