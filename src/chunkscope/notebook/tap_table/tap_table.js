// The live table of a chunkscope Tap's calls: redrawn from the synced JSON state.
function draw(model, el) {
  const text = model.get("_state");
  if (!text) return;
  const state = JSON.parse(text);
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const [, label] of state.columns) {
    const th = document.createElement("th");
    th.textContent = label;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const row of state.rows) {
    const tr = body.insertRow();
    tr.dataset.callId = String(row.id);
    tr.title = "open this call's timeline";
    // A click opens the call's live timeline under the table (the kernel answers with it).
    tr.addEventListener("click", () => model.send({ type: "open", id: row.id }));
    if (row.code) tr.className = "cs-tap-failed";
    else if (!row.done) tr.className = "cs-tap-running";
    for (const [key] of state.columns) {
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
  const title = document.createElement("div");
  title.className = "cs-tap-where";
  title.textContent = `chunkscope tap ${state.where}`;
  el.replaceChildren(title, table);
}

function render({ model, el }) {
  el.classList.add("cs-tap-table");
  draw(model, el);
  model.on("change:_state", () => draw(model, el));
}

export default { render };
