// linkpatrol dashboard: keeps the progress panel current without reloading the page.
"use strict";

(function () {
  const panel = document.getElementById("progress");
  if (!panel || panel.dataset.live !== "1") {
    return;
  }
  const INTERVAL_MS = 2000;

  function show(status) {
    for (const node of panel.querySelectorAll("[data-field]")) {
      const value = status[node.dataset.field];
      if (value !== undefined) {
        node.textContent = node.dataset.field === "elapsed" ? Number(value).toFixed(1) : String(value);
      }
    }
    for (const node of panel.querySelectorAll("[data-verdict]")) {
      node.textContent = String(status.verdicts[node.dataset.verdict] || 0);
    }
    const bar = panel.querySelector("progress");
    const share = status.complete || !status.seen ? 1 : status.done / status.seen;
    bar.value = Math.round(share * 100);
    bar.textContent = bar.value + "%";
    panel.dataset.pass = String(status.pass);
  }

  async function poll() {
    let status = null;
    try {
      const answer = await fetch("/api/status", { cache: "no-store" });
      if (answer.ok) {
        status = await answer.json();
      }
    } catch (error) {
      status = null; // the dashboard went away: try again later
    }
    if (status) {
      show(status);
      if (status.complete) {
        document.getElementById("progress-note").hidden = false;
        panel.dataset.live = "0";
        return;
      }
    }
    window.setTimeout(poll, INTERVAL_MS);
  }

  window.setTimeout(poll, INTERVAL_MS);
})();
