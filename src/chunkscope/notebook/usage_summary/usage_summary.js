// chunkscope usage summary — the front end of chunkscope.notebook.UsageSummary (an anywidget ES module).
//
// Python pushes the whole (small) summary as JSON text in the synced `_state` trait, at most
// ~30 times a second; each change redraws the numbers in place. Everything reaches the page
// through textContent: error codes and titles are text, never HTML.

const TOKEN_KINDS = [
  ["input", "input (uncached)"],
  ["cacheRead", "cache read"],
  ["cacheWrite", "cache write"],
  ["output", "output"],
  ["reasoning", "of which reasoning"],
];

function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function count(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : "-";
}

function rate(r) {
  return typeof r === "number" ? `${(r * 100).toFixed(1)}%` : "-";
}

function cost(c, currency) {
  if (typeof c !== "number") return "-";
  return currency ? `${c.toFixed(6)} ${currency}` : c.toFixed(6);
}

class View {
  constructor(model, el) {
    this.model = model;
    this.root = h("div", "cs-usage cs-live");
    const head = h("div", "cs-usage-head");
    this.title = h("span", "cs-usage-title", "Token usage");
    head.append(this.title);
    this.progress = h("div", "cs-usage-progress");
    const bar = h("div", "cs-usage-bar");
    this.fill = h("div", "cs-usage-fill");
    bar.append(this.fill);
    bar.setAttribute("role", "progressbar");
    bar.setAttribute("aria-valuemin", "0");
    this.bar = bar;
    this.progressText = h("span", "cs-usage-progress-text");
    this.progress.append(bar, this.progressText);
    this.progress.hidden = true;
    this.values = {};
    const stats = h("div", "cs-usage-stats");
    for (const [field, label] of [
      ["calls", "calls"],
      ["attempts", "attempts"],
      ["errors", "errors"],
      ["cacheHitRate", "cache hit rate"],
      ["cost", "cost so far"],
    ]) {
      const stat = h("div", "cs-usage-stat");
      const value = h("span", "cs-usage-value");
      value.dataset.field = field;
      stat.append(h("span", "cs-usage-label", label), value);
      stats.append(stat);
      this.values[field] = value;
    }
    const tokens = h("div", "cs-usage-tokens");
    for (const [key, label] of TOKEN_KINDS) {
      const token = h("span", "cs-usage-token");
      token.dataset.kind = key;
      const value = h("span", "cs-usage-value");
      value.dataset.field = `tokens.${key}`;
      token.append(h("span", "cs-usage-label", label), document.createTextNode(" "), value);
      tokens.append(token);
      this.values[`tokens.${key}`] = value;
    }
    this.errors = h("div", "cs-usage-errors");
    this.note = h("div", "cs-usage-note");
    this.root.append(head, this.progress, stats, tokens, this.errors, this.note);
    el.append(this.root);
    this.onState = () => this.draw();
    model.on("change:_state", this.onState);
    this.draw();
  }

  dispose() {
    this.model.off("change:_state", this.onState);
  }

  draw() {
    const raw = this.model.get("_state");
    if (!raw) return;
    let s;
    try {
      s = JSON.parse(raw);
    } catch (err) {
      return; // a state this version cannot read: keep the last picture
    }
    const root = this.root;
    this.title.textContent = s.title || "Token usage";
    root.dataset.calls = String(s.calls);
    root.dataset.errors = String(s.errors);
    if (Array.isArray(s.progress)) {
      const [done, total] = s.progress;
      root.dataset.done = String(done);
      root.dataset.total = String(total);
      this.progress.hidden = false;
      this.fill.style.width = `${total ? (100 * done) / total : 100}%`;
      this.bar.setAttribute("aria-valuemax", String(total));
      this.bar.setAttribute("aria-valuenow", String(done));
      this.progressText.textContent = `${done} / ${total} calls`;
    }
    this.values.calls.textContent = count(s.calls);
    this.values.attempts.textContent = count(s.attempts);
    this.values.errors.textContent = count(s.errors);
    this.values.cacheHitRate.textContent = rate(s.cacheHitRate);
    this.values.cost.textContent = cost(s.cost, s.currency);
    for (const [key] of TOKEN_KINDS) {
      // a count no attempt reported is unknown ("-"), as in summary(), never 0
      this.values[`tokens.${key}`].textContent = count((s.tokens || {})[key]);
    }
    this.errors.replaceChildren();
    for (const [code, n] of s.errorsByCode || []) {
      const item = h("span", "cs-usage-code", `${code} `);
      item.dataset.code = String(code);
      item.append(h("b", null, String(n)));
      this.errors.append(item);
    }
    this.note.textContent = s.unpriced ? `${s.unpriced} attempts of unpriced models` : "";
  }
}

export default {
  render({ model, el }) {
    const view = new View(model, el);
    return () => view.dispose();
  },
};
