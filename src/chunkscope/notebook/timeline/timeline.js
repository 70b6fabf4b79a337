// chunkscope timeline — the front end of chunkscope.notebook.Timeline (an anywidget ES module).
//
// Data: one store per widget model holds the chunk records (see _records.py for their
// shapes). While a stream runs it is fed by batch messages ({type: "batch", run, seq, c0,
// v0, v}, the records as UTF-8 JSON in the message's first buffer); a jump in seq makes it
// ask Python for {type: "resync", from, run}. When the
// run ends, the synced `_state` trait holds the whole picture (as JSON text), so a reopened notebook
// renders with no message at all.
//
// The picture: `Picture` folds records one by one into segments, usage, finish and facts,
// by the rules of _view.py (the Python derivation); `derive(state, upto)` is that fold as a
// pure function, and the shared vectors under tests/ (records → picture) pin both sides.
//
// A batch carries the deltas of a block coalesced into one run record ([t, "T" | "R", index,
// text, [length, ...], [step_us, ...]], see _records.coalesce); the store keeps a run as one
// entry (its text, the deltas' lengths and times as typed arrays) and numbers chunks across
// entries, so a million deltas cost a few thousand entries, not a million arrays.
//
// Drawing: each view folds new entries into its picture once per animation frame, for at most
// INGEST_BUDGET_MS a frame (a long backlog, a replay from chunk 0 or a reopened million-chunk
// state is drawn over several frames and never blocks input), and appends one text node per
// changed segment; a segment's text is cut into sealed blocks (see TextSink) and only its last
// TEXT_WINDOW characters are in the DOM (the rest a click away, a window at a time). Bars are
// one element per segment, never one per delta. Model text only ever reaches the page through
// textContent / createTextNode.

const KIND_MARK = { text: "T", reasoning: "R", "tool-call": "F" };
const DELTA_KIND = { t: "text", r: "reasoning", c: "tool-call" };
const JSON_LIMIT = 200; // chunks listed in the JSON panel for one segment
const RESYNC_RETRY_MS = 3000; // a lost answer is asked for again after this long…
const RESYNC_MAX = 5; // …at most this many times per run (the final state heals the rest)
const INGEST_BUDGET_MS = 12; // entries folded per frame at most this long (a long task is 50 ms)
const TEXT_WINDOW = 131072; // characters of a segment's text in the DOM (its tail)
const RUN_TAG = { T: "t", R: "r" };

// --- coalesced runs --------------------------------------------------------------------------

/** True for a run record as the store keeps it: [t, "T" | "R", index, text, lengths, times]. */
function isRun(rec) {
  return rec[1] === "T" || rec[1] === "R";
}

/** The number of chunks an entry stands for. */
function entryLength(rec) {
  return isRun(rec) ? rec[5].length : 1;
}

/**
 * A run as it travels ([t, tag, index, text, [length...], [step_us...]], see
 * _records.coalesce) in the store's form: [t, tag, index, text, lengths, times], the
 * deltas' lengths (UTF-16 code units) and arrival times (ms) as typed arrays.
 */
function storedRun(rec) {
  const text = typeof rec[3] === "string" ? rec[3] : "";
  const lengths = Int32Array.from(Array.isArray(rec[4]) ? rec[4] : []);
  const steps = Array.isArray(rec[5]) ? rec[5] : [];
  const times = new Float64Array(lengths.length);
  let micros = Math.round(Number(rec[0]) * 1000);
  for (let i = 0; i < times.length; i++) {
    micros += Number(steps[i]) || 0;
    times[i] = micros / 1000; // whole microseconds over 1000: the very double the record held
  }
  return [Number(rec[0]), rec[1], rec[2], text, lengths, times];
}

function sumLengths(lengths, from, to) {
  let sum = 0;
  for (let i = from; i < to; i++) sum += lengths[i];
  return sum;
}

/** Deltas `from` to `to` (exclusive) of a stored run, as a run; any other entry as it is. */
function sliceEntry(rec, from, to) {
  if (!isRun(rec) || (from === 0 && to === rec[5].length)) return rec;
  const a = sumLengths(rec[4], 0, from);
  const b = a + sumLengths(rec[4], from, to);
  return [rec[5][from], rec[1], rec[2], rec[3].slice(a, b), rec[4].subarray(from, to), rec[5].subarray(from, to)];
}

/** The per-chunk record of delta `k` of a stored run. */
function runDelta(rec, k) {
  const a = sumLengths(rec[4], 0, k);
  return [rec[5][k], RUN_TAG[rec[1]], rec[2], rec[3].slice(a, a + rec[4][k])];
}

// --- helpers -------------------------------------------------------------------------

function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function formatMs(ms) {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

function formatS(ms) {
  return `${(ms / 1000).toFixed(2).replace(/0+$/, "").replace(/\.$/, "")} s`;
}

function axisTicks(extent, axis) {
  if (!(extent > 0)) return [[0, "0"]];
  const raw = extent / 5;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  if (axis === "chunk") step = Math.max(1, Math.round(step));
  const ticks = [];
  for (let i = 0, value = 0; value <= extent + 1e-9 && i < 50; i++, value = i * step) {
    let label;
    if (axis === "chunk") label = String(Math.round(value));
    else label = value === 0 ? "0" : value < 1000 ? formatMs(value) : formatS(value);
    ticks.push([value / extent, label]);
  }
  return ticks;
}

// one formatter for every count drawn (toLocaleString builds one a call: ms a frame at 60 frames/s)
const NUMBER = new Intl.NumberFormat("en-US");

function count(value) {
  return typeof value === "number" ? NUMBER.format(value) : String(value);
}

function plural(n, word) {
  return `${NUMBER.format(n)} ${word}${n === 1 ? "" : "s"}`;
}

function usageText(u) {
  const parts = [`in ${count(u.inputTokens)}`];
  if (u.cacheReadTokens != null) parts.push(`cache read ${count(u.cacheReadTokens)}`);
  if (u.cacheWriteTokens != null) parts.push(`cache write ${count(u.cacheWriteTokens)}`);
  parts.push(`out ${count(u.outputTokens)}`);
  if (u.reasoningTokens != null) parts.push(`reasoning ${count(u.reasoningTokens)}`);
  return parts.join(" · ");
}

/** The chunk's JSON form from its record (mirrors _records.decode_record). */
export function decodeRecord(rec) {
  switch (rec[1]) {
    case "t":
      return { type: "text-delta", index: rec[2], text: rec[3] };
    case "r":
      return { type: "reasoning-delta", index: rec[2], text: rec[3] };
    case "c": {
      const out = { type: "tool-call-delta", index: rec[2], id: rec[3], argumentsDelta: rec[4] };
      if (rec.length > 5) out.name = rec[5];
      return out;
    }
    default:
      return rec[2] !== null && typeof rec[2] === "object" ? rec[2] : { value: rec[2] };
  }
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function strOrNull(value) {
  return typeof value === "string" && value ? value : null;
}

/** True when `code` is neither a registered code (`codes`, from the widget) nor an HTTP_<status>. */
export function isUnmapped(code, codes) {
  return Array.isArray(codes) && codes.length > 0 && !codes.includes(code) && !/^HTTP_[1-5][0-9][0-9]$/.test(code);
}

/** What the error badge shows: the error the stream raised, else an error / aborted finish's failure. */
export function errorInfo(error, finish) {
  if (isObject(error)) {
    return {
      code: String(error.code), message: String(error.message || ""), status: error.status ?? null,
      retryAfterMs: error.retryAfterMs ?? null, requestId: error.requestId ?? null,
      causes: Array.isArray(error.causes) ? error.causes.map(String) : [], retryable: error.retryable ?? null,
      source: "raised",
    };
  }
  if (finish && (finish.kind === "error" || finish.kind === "aborted")) {
    const f = isObject(finish.failure) ? finish.failure : {};
    return {
      code: String(f.code || String(finish.kind).toUpperCase()), message: String(f.message || ""),
      status: f.status ?? null, retryAfterMs: f.providerRetryAfterMs ?? null, requestId: f.requestId ?? null,
      causes: [], retryable: null, source: "finish",
    };
  }
  return null;
}

// --- the picture: records folded into segments and facts (the rules of _view.py) ------------

/**
 * The picture of a stream, folded record by record. A segment per content block: a
 * block-start opens one, a delta for an index with no segment opens one implicitly, a
 * block-start for an index whose segment was closed opens a new one, a repeated block-start
 * of an open block is ignored; a segment that got no delta shows its block-end's content;
 * an agent run's step-start / retry starts the block indexes afresh.
 */
export class Picture {
  constructor() {
    this.segments = [];
    this.openByIndex = new Map();
    this.lastByIndex = new Map();
    this.usage = null;
    this.finish = null;
    this.deltas = 0;
    this.chunks = 0; // records that are chunks (an agent run's own records are not)
    this.maxGap = 0;
    this.maxGapAt = null;
    this.previousT = null;
  }

  /** Fold record `n` (or a stored run from chunk `n`); returns the segment it changed, or null. */
  add(rec, n) {
    if (isRun(rec)) return this.run(rec, n);
    const t = Number(rec[0]);
    if (this.previousT !== null && t - this.previousT > this.maxGap) {
      this.maxGap = t - this.previousT;
      this.maxGapAt = n;
    }
    this.previousT = t;
    const tag = rec[1];
    if (tag !== "a") this.chunks++;
    if (Object.hasOwn(DELTA_KIND, tag)) return this.delta(rec, n, t);
    if (tag === "a") this.agent(isObject(rec[2]) ? rec[2] : {});
    else if (tag === "x") return this.chunk(decodeRecord(rec), n, t);
    return null;
  }

  open(index, kind, n, t) {
    const seg = {
      index, kind, first: n, last: n, t0: t, t1: t, deltas: 0, started: false, closed: false,
      parts: [], rev: 0, chunks: [], name: null, id: null,
    };
    this.segments.push(seg);
    this.openByIndex.set(index, seg);
    this.lastByIndex.set(index, seg);
    return seg;
  }

  segmentOf(index) {
    // a delta or block-end after the block's end goes to the segment that index last had
    return this.openByIndex.get(index) || this.lastByIndex.get(index);
  }

  run(rec, n) {
    const times = rec[5];
    const k = times.length;
    if (!k) return null;
    for (let i = 0; i < k; i++) {
      const t = times[i];
      if (this.previousT !== null && t - this.previousT > this.maxGap) {
        this.maxGap = t - this.previousT;
        this.maxGapAt = n + i;
      }
      this.previousT = t;
    }
    this.chunks += k;
    this.deltas += k;
    const seg = this.segmentOf(rec[2]) || this.open(rec[2], DELTA_KIND[RUN_TAG[rec[1]]], n, times[0]);
    seg.deltas += k;
    seg.last = n + k - 1;
    seg.t1 = times[k - 1];
    for (let i = 0; i < k; i++) seg.chunks.push(n + i);
    seg.parts.push(rec[3]);
    return seg;
  }

  delta(rec, n, t) {
    const tag = rec[1];
    const index = rec[2];
    this.deltas++;
    const seg = this.segmentOf(index) || this.open(index, DELTA_KIND[tag], n, t);
    seg.deltas++;
    seg.last = n;
    seg.t1 = t;
    seg.chunks.push(n);
    if (tag === "c") {
      seg.id = rec[3];
      if (rec.length > 5 && rec[5]) seg.name = rec[5];
      seg.parts.push(rec[4]);
    } else {
      seg.parts.push(rec[3]);
    }
    return seg;
  }

  agent(ev) {
    // block indexes start again at 0 in every step and attempt: new segments from here on
    if (ev.type === "step-start" || ev.type === "retry") {
      this.openByIndex.clear();
      this.lastByIndex.clear();
    }
  }

  chunk(chunk, n, t) {
    if (chunk.type === "block-start") return this.blockStart(chunk, n, t);
    if (chunk.type === "block-end") return this.blockEnd(chunk, n, t);
    if (chunk.type === "usage") this.usage = isObject(chunk.usage) ? chunk.usage : null;
    else if (chunk.type === "finish") this.finish = isObject(chunk.reason) ? chunk.reason : null;
    return null;
  }

  blockStart(chunk, n, t) {
    if (!Number.isInteger(chunk.index) || this.openByIndex.has(chunk.index)) return null;
    const seg = this.open(chunk.index, String(chunk.blockType), n, t);
    seg.started = true;
    seg.chunks.push(n);
    return seg;
  }

  blockEnd(chunk, n, t) {
    if (!Number.isInteger(chunk.index)) return null;
    const block = isObject(chunk.block) ? chunk.block : {};
    const seg = this.segmentOf(chunk.index) || this.open(chunk.index, String(block.type), n, t);
    seg.last = n;
    seg.t1 = t;
    seg.chunks.push(n);
    seg.closed = true;
    this.openByIndex.delete(chunk.index);
    if (seg.deltas === 0) fillFromBlock(seg, block);
    return seg;
  }
}

function fillFromBlock(seg, block) {
  let text = null;
  if (block.type === "tool-call") {
    seg.name = seg.name || strOrNull(block.name);
    seg.id = seg.id || strOrNull(block.id);
    text = String(block.arguments || "");
  } else if (typeof block.text === "string") {
    text = block.text;
  }
  if (text !== null) {
    seg.parts = [text];
    seg.rev++; // the text was replaced, not appended to: a view redraws it
  }
}

/** Whether a frame of `shown` records marks violation `v`: at its chunk, or the end's once complete. */
export function shows(v, shown, complete) {
  return v[0] === null ? complete : v[0] < shown;
}

function totalOf(total, last) {
  return typeof total === "number" ? Math.max(total, last) : last;
}

/**
 * The picture of a timeline state ({records, violations, status, totalMs, error, title})
 * after its first `upto` chunks (all when null), as plain JSON data: what _view.derive
 * gives, in the shape of the shared vectors (tests/fixtures/timeline/*.json). The records
 * may hold coalesced runs, as batches carry them (the same picture).
 */
export function derive(state, upto = null) {
  const all = Array.isArray(state.records) ? state.records : [];
  const entries = all.map((rec) => (isRun(rec) ? storedRun(rec) : rec));
  const total = entries.reduce((sum, rec) => sum + entryLength(rec), 0);
  const shown = upto === null || upto === undefined ? total : Math.min(total, Math.max(0, upto));
  const picture = new Picture();
  let n = 0;
  let firstMs = null;
  let lastMs = 0;
  for (const rec of entries) {
    if (n >= shown) break;
    const part = sliceEntry(rec, 0, Math.min(entryLength(rec), shown - n));
    if (firstMs === null) firstMs = isRun(part) ? part[5][0] : Number(part[0]);
    lastMs = isRun(part) ? part[5][part[5].length - 1] : Number(part[0]);
    picture.add(part, n);
    n += entryLength(part);
  }
  const complete = shown >= total;
  const violations = Array.isArray(state.violations) ? state.violations : [];
  return {
    title: String(state.title || ""),
    status: complete ? String(state.status || "streaming") : "streaming",
    chunks: picture.chunks,
    deltas: picture.deltas,
    segments: picture.segments.map((seg) => ({
      index: seg.index, kind: seg.kind, first: seg.first, last: seg.last, deltas: seg.deltas,
      started: seg.started, closed: seg.closed, text: seg.parts.join(""), name: seg.name ?? null,
      callId: seg.id ?? null, chunks: seg.chunks.slice(),
    })),
    violations: violations.filter((v) => shows(v, shown, complete)),
    usage: picture.usage,
    finish: picture.finish,
    error: errorInfo(complete ? state.error : null, picture.finish),
    totalMs: totalOf(complete ? state.totalMs : null, lastMs),
    firstMs,
    maxGapMs: picture.maxGap,
    maxGapAt: picture.maxGapAt,
  };
}

// --- a segment's text on the page ---------------------------------------------------------

const SEAL_AT = 4096; // a text block this long is sealed at its next line break…
// …or, with no line break, at a space once it is this long: the growing block is laid out again
// each frame (32,768 chars took 20-60 ms a frame at a million deltas; 8,192 a quarter of it)
const SEAL_HARD = 8192;

/**
 * A segment's text as a run of blocks. Appending a text node to one huge block makes the
 * browser lay all of it out again (100,000 deltas: ~100 ms a frame); only the last, short
 * block changes here. A block is sealed after a line break, so the text wraps as one; text
 * with no line break for SEAL_HARD characters gets one extra wrap at a space there.
 */
class TextSink {
  constructor(el) {
    this.el = el;
    this.reset();
  }

  reset() {
    this.el.replaceChildren();
    this.tail = null;
    this.tailLength = 0;
    this.blocks = []; // [element, length] of the blocks in the DOM, oldest first
    this.shown = 0; // characters in the DOM
    this.hidden = 0; // characters before them, not in the DOM
    this.window = TEXT_WINDOW; // grows when the reader asks for earlier text
  }

  append(text) {
    let rest = text;
    if (rest.length > this.window) {
      // more than the window at once (a backlog, a replay): only its tail reaches the DOM
      let cut = rest.length - this.window;
      if (isLowSurrogate(rest.charCodeAt(cut))) cut++;
      this.hidden += this.shown + cut;
      this.el.replaceChildren();
      this.blocks = [];
      this.shown = 0;
      this.tail = null;
      rest = rest.slice(cut);
    }
    while (rest) {
      if (!this.tail) {
        this.tail = h("span", "cs-text-block");
        this.el.append(this.tail);
        this.tailLength = 0;
        this.blocks.push([this.tail, 0]);
      }
      const cut = this.cutAt(rest);
      const piece = cut < 0 ? rest : rest.slice(0, cut);
      this.tail.appendChild(document.createTextNode(piece));
      this.tailLength += piece.length;
      this.blocks[this.blocks.length - 1][1] += piece.length;
      this.shown += piece.length;
      rest = cut < 0 ? "" : rest.slice(cut);
      if (cut >= 0) this.tail = null;
    }
    // sealed blocks that left the window leave the DOM (the last, growing one stays)
    while (this.blocks.length > 1 && this.shown - this.blocks[0][1] >= this.window) {
      const [el, length] = this.blocks.shift();
      el.remove();
      this.shown -= length;
      this.hidden += length;
    }
    // All but the last two blocks (over 4,096 chars each: more than the box shows) are laid out
    // only when scrolled into sight; a backlog that fills the window at once costs what shows.
    for (let i = this.blocks.length - 3; i >= 0 && !this.blocks[i][0].classList.contains("cs-far"); i--) {
      this.blocks[i][0].classList.add("cs-far");
    }
  }

  /** Put up to TEXT_WINDOW more of the hidden text (`text` is all text so far) back in front. */
  showEarlier(text) {
    if (!this.hidden) return;
    let from = Math.max(0, this.hidden - TEXT_WINDOW);
    if (from > 0 && isLowSurrogate(text.charCodeAt(from))) from--;
    const piece = text.slice(from, this.hidden);
    const block = h("span", "cs-text-block cs-far", piece);
    this.el.prepend(block);
    this.blocks.unshift([block, piece.length]);
    this.shown += piece.length;
    this.hidden = from;
    this.window += piece.length;
  }

  /** Where to seal the tail within `text` (an offset), or -1 to append it all. */
  cutAt(text) {
    const room = SEAL_AT - this.tailLength;
    const newline = text.indexOf("\n", Math.max(0, room - 1));
    if (newline >= 0 && this.tailLength + newline + 1 < SEAL_HARD) return newline + 1;
    const hard = SEAL_HARD - this.tailLength;
    if (text.length <= hard) return -1;
    const space = text.lastIndexOf(" ", hard - 1);
    return space > 0 ? space + 1 : Math.max(1, hard);
  }
}

function isLowSurrogate(code) {
  return code >= 0xdc00 && code <= 0xdfff;
}

// --- the per-model store -----------------------------------------------------------------

const stores = new WeakMap();

class Store {
  constructor(model) {
    this.model = model;
    this.views = new Set();
    this.run = 0;
    this.lastSeq = -1;
    this.clear();
    this.violations = [];
    this.end = null;
    this.stash = new Map(); // seq -> batch that arrived after a gap
    this.resyncAt = -Infinity;
    this.resyncCount = 0;
    this.pieces = null; // a long stream's final records, arriving in pieces
    this.onMsg = (msg, buffers) => {
      if (msg && msg.type === "records") this.receivePiece(msg, buffers);
      else this.receive(withRecords(msg, buffers));
    };
    this.onState = () => this.loadState();
    model.on("msg:custom", this.onMsg);
    model.on("change:_state", this.onState);
    this.loadState();
  }

  dispose() {
    this.model.off("msg:custom", this.onMsg);
    this.model.off("change:_state", this.onState);
  }

  reset(run) {
    this.run = run;
    this.lastSeq = -1;
    this.clear();
    this.violations = [];
    this.end = null;
    this.stash.clear();
    this.resyncAt = -Infinity;
    this.resyncCount = 0;
  }

  clear() {
    this.entries = []; // records and stored runs, in stream order
    this.starts = []; // the chunk number each entry starts at
    this.count = 0; // chunks in all entries
  }

  push(rec) {
    this.entries.push(rec);
    this.starts.push(this.count);
    this.count += entryLength(rec);
  }

  /** The index of the entry holding chunk `n` (0 <= n < count). */
  entryAt(n) {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= n) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Chunk `n`'s own record (a delta of a run made whole again). */
  recordAt(n) {
    const i = this.entryAt(n);
    const rec = this.entries[i];
    return isRun(rec) ? runDelta(rec, n - this.starts[i]) : rec;
  }

  /** Chunk `n`'s arrival time (ms). */
  timeAt(n) {
    const i = this.entryAt(n);
    const rec = this.entries[i];
    return isRun(rec) ? rec[5][n - this.starts[i]] : Number(rec[0]);
  }

  loadState() {
    const raw = this.model.get("_state"); // the final state as JSON text ("" while none)
    if (raw === this.rawState) return;
    this.rawState = raw;
    // The final state of a run this store saw whole (its end batch, nothing missing) holds
    // nothing new: skip parsing it (a million chunks are tens of megabytes of JSON).
    if (raw && this.end !== null && this.stash.size === 0 && this.resyncAt === -Infinity) return;
    let s = null;
    try {
      s = typeof raw === "string" && raw ? JSON.parse(raw) : null;
    } catch (err) {
      console.error("chunkscope: unreadable timeline state", err);
    }
    if (s && s.recordsInBuffer) s.records = bufferRecords(this.model.get("_state_records"));
    if (!s || !Array.isArray(s.records)) return;
    const run = typeof s.run === "number" ? s.run : this.run;
    if (run < this.run) return;
    if (run !== this.run) this.reset(run);
    if (s.records.length >= this.count) {
      this.clear();
      for (const rec of s.records) if (Array.isArray(rec)) this.push(isRun(rec) ? storedRun(rec) : rec);
    }
    if ((s.violations || []).length >= this.violations.length) this.violations = (s.violations || []).slice();
    if (s.status && s.status !== "streaming") {
      this.end = { status: s.status, totalMs: s.totalMs, error: s.error || null };
    }
    this.changed();
  }

  receive(msg) {
    if (!msg || (msg.type !== "batch" && msg.type !== "resync")) return;
    if (msg.run < this.run) return; // a late message of an earlier run
    if (msg.run > this.run) this.reset(msg.run);
    if (msg.type === "resync") {
      this.resyncAt = -Infinity;
      this.apply(msg);
      this.lastSeq = Math.max(this.lastSeq, msg.seq);
    } else if (msg.seq > this.lastSeq + 1) {
      this.stash.set(msg.seq, msg);
      this.askResync();
      return;
    } else {
      this.apply(msg);
      this.lastSeq = Math.max(this.lastSeq, msg.seq);
    }
    for (const seq of [...this.stash.keys()].sort((a, b) => a - b)) {
      if (seq <= this.lastSeq + 1) {
        const held = this.stash.get(seq);
        this.stash.delete(seq);
        this.apply(held);
        this.lastSeq = Math.max(this.lastSeq, seq);
      }
    }
    this.changed();
  }

  apply(msg) {
    const records = msg.r || [];
    const violations = msg.v || [];
    if (msg.c0 > this.count || msg.v0 > this.violations.length) {
      this.askResync(); // a hole before this message: take nothing, ask for all
      return;
    }
    let skip = this.count - msg.c0; // chunks of this message the store has already
    for (const rec of records) {
      const length = entryLength(rec);
      if (skip >= length) {
        skip -= length;
        continue;
      }
      this.push(sliceEntry(rec, skip, length));
      skip = 0;
    }
    for (let i = this.violations.length - msg.v0; i < violations.length; i++) this.violations.push(violations[i]);
    if (msg.end) this.end = msg.end;
  }

  /** A piece of a long stream's final records; once all are here, they become `_state_records`
   * (never parsed here: a saved notebook keeps them, `loadState` reads them if it must). Each
   * piece is copied in place as it arrives, so the last one costs no more than the others. */
  receivePiece(msg, buffers) {
    const buffer = buffers && buffers[0];
    if (!buffer || !(msg.parts > 0) || !(msg.part >= 0 && msg.part < msg.parts)) return;
    if (!(msg.size >= 0 && msg.at >= 0 && msg.at + buffer.byteLength <= msg.size)) return;
    let pieces = this.pieces;
    if (!pieces || pieces.run !== msg.run || pieces.got.length !== msg.parts || pieces.all.length !== msg.size) {
      pieces = this.pieces = { run: msg.run, got: new Array(msg.parts).fill(false), count: 0, all: new Uint8Array(msg.size) };
    }
    pieces.all.set(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength), msg.at);
    if (!pieces.got[msg.part]) pieces.count++;
    pieces.got[msg.part] = true;
    if (pieces.count < pieces.got.length) return;
    this.pieces = null;
    this.model.set("_state_records", new DataView(pieces.all.buffer));
  }

  askResync() {
    const now = performance.now();
    if (now - this.resyncAt < RESYNC_RETRY_MS || this.resyncCount >= RESYNC_MAX) return;
    this.resyncAt = now;
    this.resyncCount++;
    try {
      this.model.send({ type: "resync", from: this.lastSeq + 1, run: this.run });
    } catch (err) {
      // no kernel (a reopened notebook): the saved state is all there is
    }
  }

  changed() {
    for (const view of this.views) view.schedule();
  }
}

const utf8 = new TextDecoder();

/** A long stream's final records, from the binary `_state_records` trait (UTF-8 JSON). */
function bufferRecords(value) {
  try {
    if (value instanceof DataView || ArrayBuffer.isView(value)) {
      return JSON.parse(utf8.decode(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)));
    }
    if (value instanceof ArrayBuffer) return JSON.parse(utf8.decode(value));
  } catch (err) {
    console.error("chunkscope: unreadable timeline records", err);
  }
  return null;
}

/** A batch or resync message with its records (sent as a JSON buffer, runs stored) in `r`. */
function withRecords(msg, buffers) {
  if (!msg || msg.r !== undefined || !buffers || !buffers.length) return msg;
  let r = [];
  try {
    r = JSON.parse(utf8.decode(buffers[0]));
  } catch (err) {
    console.error("chunkscope: unreadable timeline records", err);
  }
  r = Array.isArray(r) ? r.filter(Array.isArray).map((rec) => (isRun(rec) ? storedRun(rec) : rec)) : [];
  return { ...msg, r };
}

// anywidget hands initialize() and every render() a different proxy of the same model,
// so the proxy cannot key the store. The widget's Layout model is one object per widget
// for its whole life; fall back to the proxy (a store per view) if it is missing.
function storeKey(model) {
  const layout = model.get("layout");
  return layout !== null && typeof layout === "object" ? layout : model;
}

function storeFor(model) {
  const key = storeKey(model);
  let store = stores.get(key);
  if (!store) {
    store = new Store(model);
    stores.set(key, store);
  }
  return store;
}

// --- one view ------------------------------------------------------------------------------

class View {
  constructor(model, el, store) {
    this.model = model;
    this.store = store;
    this.frame = 0;
    this.scrubTo = null; // null = follow the stream
    this.selected = null;
    // A text box follows its text to the end once it has a size too: a view drawn before the page
    // showed it (a re-rendered output) set scrollTop on a box with no layout, which stays at 0.
    this.follow = new ResizeObserver((entries) => {
      for (const { target } of entries) if (target.csSeg && !target.csSeg.scrolledUp) target.scrollTop = 1e9;
    });
    this.build(el);
    this.resetPicture();
    this.onAxis = () => this.relayout(true);
    this.onTitle = () => (this.titleEl.textContent = model.get("title") || "stream");
    model.on("change:axis", this.onAxis);
    model.on("change:title", this.onTitle);
    store.views.add(this);
    this.draw();
  }

  dispose() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.follow.disconnect();
    this.store.views.delete(this);
    this.model.off("change:axis", this.onAxis);
    this.model.off("change:title", this.onTitle);
    this.root.remove();
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  // DOM skeleton ---------------------------------------------------------------------------

  build(el) {
    const root = (this.root = h("div", "cs-timeline"));
    const head = h("div", "cs-head");
    this.titleEl = h("span", "cs-title", this.model.get("title") || "stream");
    head.append(this.titleEl);
    this.facts = {};
    for (const [key, label] of [["chunks", "chunks"], ["first", "first chunk"], ["total", "total"], ["gap", "max gap"], ["violations", "violations"]]) {
      const fact = h("span", "cs-fact", `${label} `);
      const value = h("b", key === "chunks" ? "cs-fact-chunks" : null);
      const after = h("span", null);
      fact.append(value, after);
      if (key === "violations") fact.classList.add("cs-fact-violations");
      this.facts[key] = { fact, value, after };
      head.append(fact);
    }
    const toggle = (this.toggle = h("button", "cs-axis-toggle"));
    toggle.type = "button";
    toggle.title = "switch the x axis between arrival time and chunk number";
    this.toggleTime = h("span", null, "time");
    this.toggleTime.dataset.axis = "time";
    this.toggleChunk = h("span", null, "chunk #");
    this.toggleChunk.dataset.axis = "chunk";
    toggle.append(this.toggleTime, this.toggleChunk);
    toggle.addEventListener("click", () => {
      const axis = this.axis() === "time" ? "chunk" : "time";
      this.model.set("axis", axis);
      // A message, not save_changes(): that would send every attribute the page set, the
      // `_state_records` it joined (tens of MB, over the server's 10 MiB limit: the
      // connection drops) too. The kernel sets `axis`, which reaches every view.
      try {
        this.model.send({ type: "axis", axis });
      } catch (err) {
        // no kernel (a reopened notebook): the switch still works on the page
      }
      this.relayout(true);
    });
    head.append(toggle);

    const plot = (this.plot = h("div", "cs-plot"));
    const axisRow = h("div", "cs-row cs-axis");
    this.axisTrack = h("div", "cs-track");
    axisRow.append(h("span", "cs-lane-label"), this.axisTrack, h("span", "cs-cap"));
    this.lanes = h("div", "cs-lanes");
    this.marksRow = h("div", "cs-row cs-marks");
    this.marksTrack = h("div", "cs-track");
    this.marksRow.append(h("span", "cs-lane-label", "violations"), this.marksTrack, h("span", "cs-cap"));
    this.marksRow.hidden = true;
    plot.append(axisRow, this.lanes, this.marksRow);

    this.badges = h("div", "cs-badges");
    this.list = h("ul", "cs-violations");

    const scrubRow = (this.scrubRow = h("label", "cs-scrub-row"));
    this.scrub = h("input", "cs-scrub");
    this.scrub.type = "range";
    this.scrub.min = "0";
    this.scrub.step = "1";
    this.scrub.disabled = true;
    this.scrub.setAttribute("aria-label", "scrub through the chunks of the finished stream");
    this.scrubLabel = h("span", "cs-scrub-label", "");
    scrubRow.append(h("span", null, "replay"), this.scrub, this.scrubLabel);
    this.scrub.addEventListener("input", () => {
      const value = Number(this.scrub.value);
      this.scrubTo = value >= this.store.count ? null : value;
      this.schedule();
    });

    this.json = h("pre", "cs-json");
    this.json.hidden = true;
    this.json.setAttribute("aria-live", "polite");

    root.append(head, plot, this.badges, this.list, scrubRow, this.json);
    root.addEventListener("click", (event) => this.onClick(event));
    root.addEventListener("keydown", (event) => {
      if ((event.key === "Enter" || event.key === " ") && event.target.matches?.("[role=button]")) {
        event.preventDefault();
        this.onClick(event);
      }
    });
    el.append(root);
  }

  axis() {
    return this.model.get("axis") === "chunk" ? "chunk" : "time";
  }

  // the picture: what the first `applied` records show ---------------------------------------

  resetPicture() {
    this.run = this.store.run;
    this.applied = 0;
    this.appliedViolations = 0;
    this.picture = new Picture();
    this.rows = []; // what the plot positions: the segments drawn so far, retry waits, tool spans
    this.dirty = new Set();
    this.lanes.replaceChildren();
    this.toolSpans = new Map();
    this.waiting = null;
    this.marksTrack.replaceChildren();
    this.list.replaceChildren();
    this.marks = [];
    this.marksRow.hidden = true;
    this.badgeKey = null;
    if (this.selectedEl) this.selectedEl.classList.remove("cs-selected");
    this.selected = this.selectedEl = null;
    this.json.hidden = true;
  }

  ingest(rec, n) {
    if (this.waiting) {
      // a retry wait ends when the next attempt shows its first sign of life
      this.waiting.closed = true;
      this.waiting.last = n;
      this.waiting.t1 = Number(rec[0]);
      this.waiting = null;
    }
    const seg = this.picture.add(rec, n);
    if (seg) {
      if (!seg.drawn) {
        // holds the segment's place among the lanes until its first draw (an agent run's sections interleave)
        seg.anchor = document.createComment("cs-seg");
        this.lanes.append(seg.anchor);
        seg.drawn = { parts: 0, rev: 0, chars: 0 };
        this.rows.push(seg);
      }
      this.dirty.add(seg);
    } else if (rec[1] === "a") {
      this.ingestAgent(isObject(rec[2]) ? rec[2] : {}, n, Number(rec[0]));
    }
  }

  // an agent run: steps, retry waits, tool spans, the outcome (records tagged "a") ----------

  agentRow(className, label, kind) {
    const node = h("div", className);
    const row = h("div", "cs-row");
    const labelEl = h("span", "cs-lane-label", label);
    const track = h("div", "cs-track");
    const bar = h("div", "cs-bar");
    track.append(bar);
    const cap = h("span", "cs-cap");
    row.append(labelEl, track, cap);
    const text = h("div", "cs-seg-text");
    node.append(row, text);
    this.lanes.append(node);
    const span = { kind, first: 0, last: 0, t0: 0, t1: 0, closed: false, dom: { node, bar, cap, text, sink: text } };
    return span;
  }

  ingestAgent(ev, n, t) {
    const type = String(ev.type || ""); // the picture already started new segments at a step or retry
    if (type === "step-start") {
      const head = h("div", "cs-step", `step ${ev.step}`);
      head.dataset.step = String(ev.step);
      this.lanes.append(head);
    } else if (type === "retry") {
      const span = this.agentRow("cs-retry", `retry ${ev.retry}`, "retry");
      span.first = span.last = n;
      span.t0 = span.t1 = t;
      this.waiting = span; // open (growing with the time axis) until the next record arrives
      span.dom.node.dataset.code = String(ev.code || "");
      span.dom.cap.textContent = `wait ${formatMs(Number(ev.delayMs || 0))} · ${ev.code}`;
      span.dom.text.textContent = `attempt ${ev.attempt} failed: ${ev.code}${ev.status != null ? " (HTTP " + ev.status + ")" : ""} ${ev.message || ""}`;
      this.rows.push(span);
    } else if (type === "discarded") {
      this.lanes.append(h("div", "cs-discarded", `partial output of attempt ${ev.attempt} discarded (${plural(Number(ev.chunks || 0), "chunk")})`));
    } else if (type === "tool-call") {
      const span = this.agentRow("cs-tool-span", `tool ${ev.name}`, "tool-run");
      span.first = span.last = n;
      span.t0 = span.t1 = t;
      span.id = String(ev.id || "");
      span.dom.node.dataset.tool = String(ev.name || "");
      span.dom.node.dataset.state = "running";
      span.dom.cap.textContent = "running";
      span.dom.text.textContent = `${ev.name}(${ev.arguments || ""})`;
      this.rows.push(span);
      this.toolSpans.set(span.id, span);
    } else if (type === "tool-result") {
      const span = this.toolSpans.get(String(ev.id || ""));
      if (!span) return;
      span.closed = true;
      span.last = n;
      span.t1 = t;
      span.dom.node.dataset.state = ev.isError ? "error" : "ok";
      span.dom.cap.textContent = `${formatMs(Number(ev.durationMs || 0))} · ${ev.isError ? "error" : "ok"}`;
      span.dom.text.append(document.createTextNode(" → " + String(ev.content || "")));
    } else if (type === "loop-end") {
      const out = h("div", "cs-outcome", `run ${ev.outcome}${ev.code ? " · " + ev.code : ""} · ${plural(Number(ev.steps || 0), "step")}`);
      out.dataset.outcome = String(ev.outcome || "");
      this.lanes.append(out);
    }
  }

  // drawing --------------------------------------------------------------------------------

  draw() {
    // JupyterLab replaces a view when the output is updated (the final text/html); the
    // old one is detached, not disposed: stop drawing it.
    if (this.root.isConnected) this.wasConnected = true;
    else if (this.wasConnected) return;
    const store = this.store;
    const total = store.count;
    const done = store.end !== null;
    if (this.scrubTo !== null && (!done || this.scrubTo >= total)) this.scrubTo = null;
    const target = this.scrubTo === null ? total : this.scrubTo;
    if (target < this.applied || store.run !== this.run) this.resetPicture();
    this.run = store.run;
    const behind = this.catchUp(target);
    if (behind) this.schedule(); // the rest next frame: input is answered in between
    const limit = this.applied;
    const complete = limit === total;

    for (const seg of this.dirty) this.drawSeg(seg);
    this.dirty.clear();

    // violations: in arrival order; an end-of-stream one (position null) once complete
    while (this.appliedViolations < store.violations.length) {
      const v = store.violations[this.appliedViolations];
      const position = v[0];
      if (position === null ? !(complete && done) : position >= limit) break;
      this.addViolation(v);
      this.appliedViolations++;
    }

    const root = this.root;
    // the end marker: the stream ended and every chunk of it is drawn
    const drawn = done && (!behind || this.scrubTo !== null);
    root.dataset.state = !drawn ? "streaming" : store.end.status === "error" ? "error" : "done";
    root.dataset.chunks = String(limit);
    root.dataset.deltas = String(this.picture.deltas);
    root.dataset.axis = this.axis();
    if (this.scrubTo === null) delete root.dataset.scrub;
    else root.dataset.scrub = String(this.scrubTo);

    this.drawFacts(limit, complete);
    this.drawBadges(complete);
    this.relayout(false);

    this.scrub.disabled = !done;
    this.scrub.max = String(total);
    if (this.scrubTo === null) this.scrub.value = String(total);
    this.scrubLabel.textContent = done ? `chunk ${limit} / ${total}` : "available when the stream ends";
  }

  /** Fold entries up to chunk `target` for at most INGEST_BUDGET_MS; true when some are left. */
  catchUp(target) {
    const store = this.store;
    const deadline = performance.now() + INGEST_BUDGET_MS;
    let steps = 0;
    while (this.applied < target) {
      const i = store.entryAt(this.applied);
      const rec = store.entries[i];
      const from = this.applied - store.starts[i];
      const to = Math.min(entryLength(rec), from + target - this.applied);
      this.ingest(sliceEntry(rec, from, to), this.applied);
      this.applied += to - from;
      if (++steps % 64 === 0 && performance.now() > deadline) break;
    }
    return this.applied < target;
  }

  drawSeg(seg) {
    if (!seg.dom) {
      const node = h("div", "cs-seg");
      node.dataset.kind = seg.kind;
      node.dataset.index = String(seg.index);
      const row = h("div", "cs-row");
      row.tabIndex = 0; // keyboard: Enter shows the block's chunks
      row.setAttribute("role", "button");
      row.setAttribute("aria-label", `block ${seg.index} (${seg.kind}): show its chunks as JSON`);
      const label = h("span", "cs-lane-label");
      const mark = h("span", "cs-kind-mark", KIND_MARK[seg.kind] || "?");
      mark.setAttribute("aria-hidden", "true");
      label.append(mark, document.createTextNode(`#${seg.index} ${seg.kind}`));
      const track = h("div", "cs-track");
      const bar = h("div", "cs-bar");
      bar.title = "click: show this block's chunks as JSON";
      track.append(bar);
      const cap = h("span", "cs-cap");
      row.append(label, track, cap);
      const text = h("div", "cs-seg-text");
      let sink = text;
      if (seg.kind === "tool-call") {
        const name = h("span", "cs-tool-name");
        const id = h("span", "cs-tool-id");
        const args = h("span", "cs-tool-args");
        text.append(name, document.createTextNode(" "), id, document.createTextNode(" "), args);
        sink = args;
        seg.nameEl = name;
        seg.idEl = id;
      }
      // whether the reader scrolled up, read when they scroll (never in a frame that appends)
      text.addEventListener("scroll", () => {
        seg.scrolledUp = text.scrollTop + text.clientHeight < text.scrollHeight - 4;
      }, { passive: true });
      const earlier = h("button", "cs-show-earlier");
      earlier.type = "button";
      earlier.hidden = true;
      earlier.addEventListener("click", (event) => {
        event.stopPropagation(); // not a click on the segment
        const dom = seg.dom;
        dom.sink.showEarlier(seg.parts.slice(0, seg.drawn.parts).join(""));
        this.drawHidden(seg);
      });
      node.append(row, earlier, text);
      node.csSeg = seg;
      text.csSeg = seg;
      this.follow.observe(text);
      seg.dom = { node, bar, cap, text, earlier, sink: new TextSink(sink) };
      if (seg.anchor && seg.anchor.parentNode) seg.anchor.replaceWith(node);
      else this.lanes.append(node);
    }
    const dom = seg.dom;
    const drawn = seg.drawn;
    if (drawn.rev !== seg.rev) {
      // the block-end's content replaced what was drawn
      dom.sink.reset();
      drawn.rev = seg.rev;
      drawn.parts = drawn.chars = 0;
    }
    if (drawn.parts < seg.parts.length) {
      const piece = seg.parts.slice(drawn.parts).join("");
      drawn.parts = seg.parts.length;
      drawn.chars += piece.length;
      dom.sink.append(piece);
      if (!seg.scrolledUp) dom.text.scrollTop = 1e9; // follow the text (clamped to the end)
      this.drawHidden(seg);
    }
    if (seg.nameEl) {
      seg.nameEl.textContent = seg.name || "";
      seg.idEl.textContent = seg.id || "";
    }
    dom.node.dataset.deltas = String(seg.deltas);
    dom.node.dataset.started = seg.started ? "true" : "false";
    dom.node.dataset.closed = seg.closed ? "true" : "false";
    let cap = seg.kind === "tool-call" ? `${seg.name || "?"} · ${plural(seg.deltas, "delta")}` : `${plural(seg.deltas, "delta")} · ${plural(drawn.chars, "char")}`;
    if (!seg.closed) cap += this.store.end ? " · never closed" : " · open";
    dom.cap.textContent = cap;
  }

  /** The button that brings the text before the window back, with how much there is. */
  drawHidden(seg) {
    const { earlier, sink, node } = seg.dom;
    earlier.hidden = sink.hidden === 0;
    node.dataset.hiddenChars = String(sink.hidden);
    if (sink.hidden) {
      earlier.textContent = `${count(sink.hidden)} earlier chars not drawn · show ${count(Math.min(sink.hidden, TEXT_WINDOW))} more`;
    }
  }

  addViolation(v) {
    const [position, rule, severity, message] = v;
    const where = position === null ? "end of stream" : `chunk ${position}`;
    const mark = h("span", "cs-violation-mark", "!");
    mark.dataset.rule = String(rule);
    mark.dataset.position = position === null ? "end" : String(position);
    mark.dataset.severity = String(severity);
    mark.title = `${where} · ${rule}: ${message}`;
    mark.csViolation = v;
    mark.tabIndex = 0;
    mark.setAttribute("role", "button");
    mark.setAttribute("aria-label", mark.title);
    this.marksTrack.append(mark);
    this.marks.push(mark);
    this.marksRow.hidden = false;

    const li = h("li");
    li.dataset.rule = String(rule);
    li.dataset.position = mark.dataset.position;
    li.dataset.severity = String(severity);
    li.append(h("span", "cs-pos", where), document.createTextNode(" "), h("code", "cs-rule", rule),
      document.createTextNode(" "), h("span", "cs-severity", severity), document.createTextNode(" "),
      h("span", "cs-msg", message));
    li.csViolation = v;
    this.list.append(li);
  }

  drawFacts(limit, complete) {
    const store = this.store;
    const f = this.facts;
    f.chunks.value.textContent = String(this.picture.chunks);
    const first = limit ? store.timeAt(0) : null;
    f.first.fact.hidden = first === null;
    if (first !== null) f.first.value.textContent = formatMs(first);
    const totalMs = this.totalMs(limit, complete);
    f.total.fact.hidden = limit === 0;
    f.total.value.textContent = formatMs(totalMs);
    f.gap.fact.hidden = this.picture.maxGapAt === null;
    if (this.picture.maxGapAt !== null) {
      f.gap.value.textContent = formatMs(this.picture.maxGap);
      f.gap.after.textContent = ` before chunk ${this.picture.maxGapAt}`;
    }
    f.violations.value.textContent = String(this.appliedViolations);
    f.violations.fact.dataset.count = String(this.appliedViolations);
  }

  totalMs(limit, complete) {
    const last = limit ? this.store.timeAt(limit - 1) : 0;
    const end = this.store.end;
    return complete && end && typeof end.totalMs === "number" ? Math.max(end.totalMs, last) : last;
  }

  drawBadges(complete) {
    const badges = [];
    if (this.picture.usage) {
      const b = h("span", "cs-badge cs-usage");
      b.append(h("b", null, "usage"), document.createTextNode(" " + usageText(this.picture.usage)));
      badges.push(b);
    }
    if (this.picture.finish) {
      const kind = String(this.picture.finish.kind);
      const b = h("span", "cs-badge cs-finish");
      b.dataset.kind = kind;
      b.append(h("b", null, "finish"), document.createTextNode(" " + kind));
      badges.push(b);
    }
    const end = this.store.end;
    const error = errorInfo(complete && end ? end.error : null, this.picture.finish);
    if (error) {
      const b = h("span", "cs-badge cs-error");
      b.dataset.code = error.code;
      const label = h("b", null, error.source === "raised" ? "LlmError " : "failure ");
      label.append(h("span", "cs-error-code", error.code));
      const parts = error.message ? [error.message] : [];
      if (isUnmapped(error.code, this.model.get("_codes"))) parts.push("unmapped code: not in cs.ERROR_CODES");
      if (error.status != null) parts.push(`HTTP ${error.status}`);
      if (error.retryAfterMs != null) parts.push(`retry after ${formatMs(Number(error.retryAfterMs))}`);
      if (error.requestId) parts.push(`request id ${error.requestId}`);
      if (error.retryable != null) parts.push(error.retryable ? "retryable" : "not retryable");
      b.append(label, document.createTextNode(" " + parts.join(" · ")));
      badges.push(b);
      for (const cause of error.causes || []) badges.push(h("span", "cs-badge cs-cause", `caused by ${cause}`));
      if (this.applied) {
        badges.push(h("span", "cs-badge cs-partial", `partial output kept: ${this.picture.chunks} chunks, ${this.picture.deltas} deltas`));
      }
    }
    // Badges are few; rebuild only when their text changed.
    const key = badges.map((b) => b.className + "|" + (b.dataset.kind || b.dataset.code || "") + "|" + b.textContent).join("\n");
    if (key !== this.badgeKey) {
      this.badgeKey = key;
      this.badges.replaceChildren(...badges);
    }
  }

  /** Position bars, marks and ticks for the current extent (CSS variables: one write per frame). */
  relayout(axisChanged) {
    const axis = this.axis();
    const limit = this.applied;
    const endMs = this.totalMs(limit, limit === this.store.count);
    const extent = axis === "chunk" ? Math.max(limit, 1) : Math.max(endMs, 1);
    this.plot.style.setProperty("--cs-extent", String(extent));
    this.root.dataset.axis = axis;
    this.toggleTime.className = axis === "time" ? "cs-on" : "";
    this.toggleChunk.className = axis === "chunk" ? "cs-on" : "";
    const endX = axis === "chunk" ? limit : endMs;
    for (const seg of this.rows) {
      if (!seg.dom) continue;
      // A block still open runs to the end of what arrived (it grows with the stream).
      const x0 = axis === "chunk" ? seg.first : seg.t0;
      const x1 = !seg.closed ? endX : axis === "chunk" ? seg.last + 1 : seg.t1;
      if (axisChanged || seg.x0 !== x0 || seg.x1 !== x1) {
        seg.x0 = x0;
        seg.x1 = x1;
        const bar = seg.dom.bar;
        bar.style.left = `calc(${x0} * 100% / var(--cs-extent))`;
        bar.style.width = `max(3px, calc(${x1 - x0} * 100% / var(--cs-extent)))`;
      }
    }
    for (const mark of this.marks) {
      const position = mark.csViolation[0];
      let x;
      if (axis === "chunk") x = position === null ? limit : position + 0.5;
      else x = position === null || position >= limit ? this.totalMs(limit, true) : this.store.timeAt(position);
      if (axisChanged || mark.csX !== x || mark.csAxis !== axis) {
        mark.csX = x;
        mark.csAxis = axis;
        mark.style.left = `min(100%, calc(${x} * 100% / var(--cs-extent)))`;
      }
    }
    const ticks = axisTicks(axis === "chunk" ? limit : extent, axis);
    const key = axis + ticks.map((t) => t[0].toFixed(4) + t[1]).join();
    if (key !== this.tickKey) {
      this.tickKey = key;
      this.axisTrack.replaceChildren(...ticks.map(([frac, label]) => {
        const tick = h("span", "cs-tick", label);
        tick.style.left = `${(Math.min(1, Math.max(0, frac)) * 100).toFixed(3)}%`;
        return tick;
      }));
    }
  }

  // clicks: show chunks as JSON --------------------------------------------------------------

  onClick(event) {
    const target = event.target;
    if (!(target instanceof Element)) return;
    const violationEl = target.closest(".cs-violation-mark, ul.cs-violations > li");
    if (violationEl && violationEl.csViolation) {
      this.showViolation(violationEl.csViolation, violationEl);
      return;
    }
    // A drag that selected text is for copying, not a click on the segment.
    const selection = window.getSelection ? window.getSelection() : null;
    if (selection && !selection.isCollapsed && target.closest(".cs-seg-text")) return;
    const segEl = target.closest(".cs-seg");
    if (segEl && segEl.csSeg) this.showSegment(segEl.csSeg, segEl);
  }

  select(el, key) {
    if (this.selectedEl) this.selectedEl.classList.remove("cs-selected");
    if (this.selected === key) {
      this.selected = null;
      this.selectedEl = null;
      this.json.hidden = true;
      this.json.textContent = "";
      return false;
    }
    this.selected = key;
    this.selectedEl = el;
    el.classList.add("cs-selected");
    return true;
  }

  chunkLine(n) {
    const rec = this.store.recordAt(n);
    const line = `#${n} +${formatMs(Number(rec[0]))} ${JSON.stringify(decodeRecord(rec))}`;
    // a block-end drawn from its deltas comes with its block's long strings cut (see _records.py)
    const cut = rec[1] === "x" && rec.length > 3 ? Number(rec[3]) : 0;
    return cut > 0 ? `${line} (the block's text: ${count(cut)} more chars, drawn from its deltas)` : line;
  }

  showSegment(seg, el) {
    if (!this.select(el, "seg:" + seg.first + ":" + seg.index)) return;
    const lines = [`block #${seg.index} (${seg.kind}) · chunks ${seg.first}–${seg.last} · ${seg.deltas} deltas`];
    const numbers = seg.chunks;
    const half = JSON_LIMIT / 2;
    numbers.forEach((n, i) => {
      if (numbers.length > JSON_LIMIT && i >= half && i < numbers.length - half) {
        if (i === half) lines.push(`… ${numbers.length - JSON_LIMIT} more chunks …`);
        return;
      }
      lines.push(this.chunkLine(n));
    });
    this.json.textContent = lines.join("\n");
    this.json.hidden = false;
  }

  showViolation(v, el) {
    const [position, rule, severity, message] = v;
    if (!this.select(el, "v:" + position + ":" + rule + ":" + message)) return;
    const lines = [`${rule} (${severity}) at ${position === null ? "the end of the stream" : "chunk " + position}: ${message}`];
    if (position !== null && position < this.store.count) lines.push(this.chunkLine(position));
    this.json.textContent = lines.join("\n");
    this.json.hidden = false;
  }
}

export default {
  initialize({ model }) {
    const key = storeKey(model);
    const store = storeFor(model);
    return () => {
      store.dispose();
      stores.delete(key);
    };
  },
  render({ model, el }) {
    // No message goes back to the kernel unless a gap shows up: a comm message that reaches
    // ipykernel 7 while an async cell runs is handled concurrently, and there it can cost the
    // running cell its execute_reply. A view opened late (page reloaded mid-run) sees a gap
    // at the next batch and asks then.
    const view = new View(model, el, storeFor(model));
    return () => view.dispose();
  },
};
