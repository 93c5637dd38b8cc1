/* linkpatrol HTML report: sort and filter the table of problems.
   Inlined into the report and allowed by its hash in the Content-Security-Policy. It only
   reads text and data-* attributes the report wrote, and never turns text into markup or
   code. Without it the table is complete and sorted worst first; the controls are its own. */
(function () {
  "use strict";
  var table = document.getElementById("problems");
  if (!table || !table.tHead || !table.tBodies.length) {
    return;
  }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var haystack = rows.map(function (row) {
    var links = Array.prototype.map.call(row.querySelectorAll("a[href]"), function (a) {
      return a.getAttribute("href");
    });
    return (row.textContent + " " + links.join(" ")).toLowerCase();
  });

  /* ---- sorting: click a column header; numbers and dates compare as numbers ---- */

  function sortKey(row, column, type) {
    var cell = row.cells[column];
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    raw = raw.trim();
    if (type === "number" || type === "date") {
      var number = raw === "" ? NaN : Number(raw);
      return isNaN(number) ? null : number;
    }
    return raw === "" ? null : raw.toLowerCase();
  }

  function compare(a, b) {
    if (typeof a === "number") {
      return a - b;
    }
    return a < b ? -1 : a > b ? 1 : 0;
  }

  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);

  function sortBy(column, type, direction) {
    var keyed = rows.map(function (row, index) {
      return { row: row, key: sortKey(row, column, type), index: index };
    });
    keyed.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        if (a.key === b.key) {
          return a.index - b.index;
        }
        return a.key === null ? 1 : -1; /* cells without a value last, either way */
      }
      return compare(a.key, b.key) * direction || a.index - b.index;
    });
    keyed.forEach(function (item) {
      body.appendChild(item.row);
    });
    headers.forEach(function (th, index) {
      if (index === column) {
        th.setAttribute("aria-sort", direction > 0 ? "ascending" : "descending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
  }

  headers.forEach(function (th, column) {
    var type = th.getAttribute("data-type");
    if (!type) {
      return;
    }
    var button = document.createElement("button");
    button.type = "button";
    button.title = "Sort by this column";
    while (th.firstChild) {
      button.appendChild(th.firstChild);
    }
    th.appendChild(button);
    button.addEventListener("click", function () {
      var direction = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      sortBy(column, type, direction);
    });
  });

  /* ---- filtering: a text box and a checkbox per verdict ---- */

  var tools = document.createElement("div");
  tools.className = "table-tools";
  tools.id = "problems-tools";

  var search = document.createElement("input");
  search.type = "search";
  search.id = "problems-filter";
  search.placeholder = "Filter by URL, error or page";
  search.setAttribute("aria-label", "Filter the table by URL, error or page");
  tools.appendChild(search);

  var fieldset = document.createElement("fieldset");
  var legend = document.createElement("legend");
  legend.textContent = "Show";
  fieldset.appendChild(legend);
  var verdicts = [];
  var counts = {};
  var names = {};
  rows.forEach(function (row) {
    var verdict = row.getAttribute("data-verdict");
    if (!(verdict in counts)) {
      verdicts.push(verdict);
      counts[verdict] = 0;
      var label = row.querySelector(".verdict");
      names[verdict] = label ? label.textContent.trim() : verdict;
    }
    counts[verdict] += 1;
  });
  var boxes = verdicts.map(function (verdict) {
    var label = document.createElement("label");
    var box = document.createElement("input");
    box.type = "checkbox";
    box.checked = true;
    box.value = verdict;
    box.name = "verdict";
    label.appendChild(box);
    label.appendChild(document.createTextNode(" " + names[verdict] + " (" + counts[verdict] + ")"));
    fieldset.appendChild(label);
    return box;
  });
  tools.appendChild(fieldset);

  var shown = document.createElement("span");
  shown.className = "shown";
  shown.id = "problems-shown";
  shown.setAttribute("aria-live", "polite");
  tools.appendChild(shown);

  function applyFilter() {
    var allowed = {};
    boxes.forEach(function (box) {
      allowed[box.value] = box.checked;
    });
    var terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var visible = 0;
    rows.forEach(function (row, index) {
      var match = allowed[row.getAttribute("data-verdict")] === true && terms.every(function (term) {
        return haystack[index].indexOf(term) !== -1;
      });
      row.hidden = !match;
      visible += match ? 1 : 0;
    });
    shown.textContent = visible === rows.length
      ? "Showing all " + rows.length + " rows"
      : "Showing " + visible + " of " + rows.length + " rows";
  }

  search.addEventListener("input", applyFilter);
  boxes.forEach(function (box) {
    box.addEventListener("change", applyFilter);
  });
  var wrap = table.parentNode.classList.contains("table-wrap") ? table.parentNode : table;
  wrap.parentNode.insertBefore(tools, wrap);
  applyFilter();
})();
