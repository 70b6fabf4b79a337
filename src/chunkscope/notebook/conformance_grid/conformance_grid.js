// chunkscope conformance grid — the front end of chunkscope.notebook.ConformanceGrid (an anywidget ES module).
//
// The synced `_grid` trait holds the report's picture as JSON text: a headline, the checks
// (columns) and one row per case with a cell per check (null = the check does not apply).
// A click on a row sets `selected`; Python then loads that case's stream into the Timeline
// shown below the grid. Every text reaches the page through textContent or an attribute.

function h(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = String(text);
  return el;
}

function parse(raw) {
  try {
    return typeof raw === "string" && raw ? JSON.parse(raw) : null;
  } catch (err) {
    console.error("chunkscope: unreadable conformance grid", err);
    return null;
  }
}

function render({ model, el }) {
  const root = h("div", "cs-conformance");
  el.append(root);

  function draw() {
    const grid = parse(model.get("_grid"));
    root.replaceChildren();
    if (!grid) return;
    const selected = model.get("selected");
    const head = h("div", `cs-grid-head ${grid.ok ? "cs-ok" : "cs-bad"}`, grid.headline);
    const hint = h("div", "cs-grid-hint", "click a row to open its stream's timeline below");
    const table = h("table", "cs-grid");
    const headRow = h("tr");
    headRow.append(h("th", "cs-case", "case"));
    for (const check of grid.checks) {
      const th = h("th", "cs-check", check.id);
      th.title = check.title;
      headRow.append(th);
    }
    const thead = h("thead");
    thead.append(headRow);
    const tbody = h("tbody");
    for (const row of grid.rows) {
      const tr = h("tr", row.ok ? "cs-row-ok" : "cs-row-bad");
      tr.dataset.case = row.name;
      if (row.name === selected) tr.classList.add("cs-selected");
      const name = h("td", "cs-case", row.name);
      name.title = row.description;
      tr.append(name);
      row.cells.forEach((cell, i) => {
        const check = grid.checks[i].id;
        let td;
        if (cell === null) {
          td = h("td", "cs-na", "·");
          td.title = "does not apply";
        } else {
          td = h("td", cell.passed ? "cs-pass" : "cs-fail", cell.passed ? "✓" : "✗");
          td.title = cell.sentence;
        }
        td.dataset.check = check;
        tr.append(td);
      });
      tr.addEventListener("click", () => {
        model.set("selected", row.name);
        model.save_changes();
      });
      tbody.append(tr);
    }
    table.append(thead, tbody);
    root.append(head, hint, table);
  }

  draw();
  model.on("change:_grid", draw);
  model.on("change:selected", draw);
  return () => {
    model.off("change:_grid", draw);
    model.off("change:selected", draw);
  };
}

export default { render };
