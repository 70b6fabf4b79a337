// The live table of a chunkscope Tap's calls, from the synced JSON state (the last calls, at most
// ten pushes a second). A push changes few rows (new calls at the end, the oldest leaving the top,
// the running ones' numbers): rows are kept by call id and only a row whose values changed is
// written again, so a push of 200 rows costs the page what changed, not 2,000 new cells.

function fill(tr, row, columns) {
  tr.className = row.code ? "cs-tap-failed" : row.done ? "" : "cs-tap-running";
  tr.replaceChildren();
  for (const [key] of columns) {
    const td = tr.insertCell();
    const value = row[key];
    if (key === "code" && value) {
      const badge = document.createElement("span");
      badge.className = "cs-tap-badge";
      badge.textContent = value;
      td.appendChild(badge);
    } else if (key === "duration_ms" && !row.done) {
      td.textContent = "streaming";
    } else {
      td.textContent = value === null || value === undefined ? "" : String(value);
    }
  }
}

class TableView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.columnsKey = null;
    this.rows = new Map(); // call id -> {tr, key: the row's JSON}
    el.classList.add("cs-tap-table");
    // A click opens the call's live timeline under the table (the kernel answers with it).
    el.addEventListener("click", (event) => {
      const tr = event.target instanceof Element ? event.target.closest("tr[data-call-id]") : null;
      if (tr) model.send({ type: "open", id: Number(tr.dataset.callId) });
    });
  }

  build(state) {
    this.title = document.createElement("div");
    this.title.className = "cs-tap-where";
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const [key, label] of state.columns) {
      const th = document.createElement("th");
      th.dataset.key = key; // its width (tap_table.css): the table is laid out from its head alone
      th.textContent = label;
      head.appendChild(th);
    }
    this.body = table.createTBody();
    this.rows.clear();
    this.el.replaceChildren(this.title, table);
  }

  draw() {
    const text = this.model.get("_state");
    if (!text) return;
    const state = JSON.parse(text);
    const columnsKey = JSON.stringify(state.columns);
    if (columnsKey !== this.columnsKey) {
      this.columnsKey = columnsKey;
      this.build(state);
    }
    this.title.textContent = `chunkscope tap ${state.where}`;
    const kept = new Map();
    let previous = null;
    for (const row of state.rows) {
      const key = JSON.stringify(row);
      let entry = this.rows.get(row.id);
      if (!entry) {
        const tr = document.createElement("tr");
        tr.dataset.callId = String(row.id);
        tr.title = "open this call's timeline";
        entry = { tr, key: null };
      }
      if (entry.key !== key) {
        fill(entry.tr, row, state.columns);
        entry.key = key;
      }
      const at = previous ? previous.nextSibling : this.body.firstChild;
      if (at !== entry.tr) this.body.insertBefore(entry.tr, at);
      previous = entry.tr;
      kept.set(row.id, entry);
    }
    for (const [id, entry] of this.rows) if (!kept.has(id)) entry.tr.remove();
    this.rows = kept;
  }
}

function render({ model, el }) {
  const view = new TableView(model, el);
  view.draw();
  const onState = () => view.draw();
  model.on("change:_state", onState);
  return () => model.off("change:_state", onState);
}

export default { render };
