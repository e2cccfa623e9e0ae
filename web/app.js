// The live page of observable-server. It uses nothing but the public HTTP
// API: one observer per page, reads made with that observer (so the server
// tracks exactly what the page draws), and a long-polling change feed whose
// changes are applied, one by one, to the element each one names.
"use strict";

const POLL_TIMEOUT = 25;       // seconds a poll may wait on the server
const OBSERVER_TTL = 300;      // seconds an unused observer lives
const TAP_MS = 450;            // a tap stays visible at least this long
const GLOW_RESET_MS = 1000;    // a glow is turned off after this long
const BACKOFF_FIRST = 500;     // first wait after a failure, ms; doubles
const BACKOFF_MAX = 5000;
const LOG_LENGTH = 8;          // changes shown in "Changes heard"
const TOKEN_KEY = "observable-server.token";

const $ = (id) => document.getElementById(id);

const page = {
  token: "",
  observer: null,     // the observer's id
  cursor: null,       // `since` of the next poll
  needsRead: true,    // read everything again before the next poll
  writeDenied: false, // a write was answered 401
  dots: new Map(),    // dot id -> its circle
  wake: null,         // ends the current back-off wait early
};

// MARK: - HTTP

/// An answer that is not what the caller needed.
class Answer extends Error {
  constructor(response, what) {
    const detail = response.json && response.json.detail ? response.json.detail : "";
    super(`${what}: ${response.status}${detail ? " " + detail : ""}`);
    this.status = response.status;
    this.detail = detail;
  }
}

/// One API call. Paths are relative, so the page works under any prefix.
/// Rejects only when the server cannot be reached.
async function api(method, path, { body, observe = false, signal, keepalive = false } = {}) {
  const headers = {};
  if (page.token) headers["Authorization"] = "Bearer " + page.token;
  if (observe) headers["Observer"] = page.observer;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, signal, keepalive, cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
  const cursor = response.headers.get("Observation-Cursor");
  return { status: response.status, json, cursor: cursor === null ? null : Number(cursor) };
}

// MARK: - Observer, reads and the change feed

async function createObserver() {
  const response = await api("POST", "observers", { body: { ttlSeconds: OBSERVER_TTL } });
  if (response.status !== 201) throw new Answer(response, "creating an observer");
  page.observer = response.json.id;
  page.needsRead = true;
}

/// Reads what the page draws, with the observer, and draws it. Polling from
/// the smallest of the answers' cursors neither misses a change nor repeats
/// one for a property (each property counts from the read that first saw it).
async function readEverything() {
  const reads = await Promise.all([
    api("GET", "grid", { observe: true }),
    api("GET", "truck?fields=name,orderCount", { observe: true }),
    api("GET", "truck/donuts?fields=name", { observe: true }),
    api("GET", "account?fields=userName", { observe: true }),
  ]);
  for (const response of reads) {
    if (response.status !== 200) throw new Answer(response, "reading");
  }
  const [grid, truck, donuts, account] = reads.map((response) => response.json);
  drawGrid(grid.rows);
  $("truck-name").textContent = truck.name;
  setOrderCount(truck.orderCount, false);
  drawDonuts(donuts.donuts);
  setUserName(account.userName);
  page.cursor = Math.min(...reads.map((response) => response.cursor));
  page.needsRead = false;
}

/// One long-poll; applies what it brings.
async function poll() {
  const abort = new AbortController();
  // A server that vanished without closing the connection must not hold
  // the page forever.
  const timer = setTimeout(() => abort.abort(), (POLL_TIMEOUT + 15) * 1000);
  try {
    const response = await api("GET",
      `observers/${encodeURIComponent(page.observer)}/changes?since=${page.cursor}&timeout=${POLL_TIMEOUT}`,
      { signal: abort.signal });
    if (response.status !== 200) throw new Answer(response, "polling");
    setStatus("live");
    for (const change of response.json.changes) apply(change);
    page.cursor = response.json.cursor;
    showObserver();
  } finally {
    clearTimeout(timer);
  }
}

/// Observes until the page is closed: creates the observer, reads, polls,
/// and recovers from whatever the server or the network does meanwhile.
async function run() {
  let backoff = BACKOFF_FIRST;
  let startAgainAtOnce = true;  // the first 404 or 410 in a row
  for (;;) {
    let wait;
    try {
      if (!page.observer) await createObserver();
      if (page.needsRead) await readEverything();
      setStatus("live");
      showObserver();
      await poll();
      backoff = BACKOFF_FIRST;
      startAgainAtOnce = true;
      continue;
    } catch (error) {
      wait = backoff;
      if (!(error instanceof Answer)) {
        // The server cannot be reached (stopped, restarting, network gone).
        setStatus("disconnected", `disconnected — retrying in ${(backoff / 1000).toFixed(1)} s`);
      } else if (error.status === 404 || error.status === 410) {
        // 404: the observer is gone (expired, deleted, another database), so
        // a new one reads everything again. 410: the feed no longer holds
        // our cursor, so read again and poll from there. The server is up,
        // so go on at once, unless that is what just failed.
        if (error.status === 404) page.observer = null;
        page.needsRead = true;
        setStatus("connecting", error.status === 404 ? "observer gone — starting again" : "cursor too old — reading again");
        if (startAgainAtOnce) {
          backoff = BACKOFF_FIRST;
          wait = 0;
        }
        startAgainAtOnce = false;
      } else if (error.status === 401) {
        setStatus("needs-token", "this server needs a token to read — enter it below");
        wait = 30000;
      } else if (error.status === 400) {
        // `since` ahead of the server's newest change: another database.
        page.needsRead = true;
        setStatus("connecting", error.message);
      } else {
        setStatus("disconnected", `${error.message} — retrying in ${(backoff / 1000).toFixed(1)} s`);
      }
    }
    await pause(wait);
    if (wait === backoff) backoff = Math.min(backoff * 2, BACKOFF_MAX);
  }
}

/// Waits `ms`, or less when something (a new token) wakes the page.
function pause(ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() { clearTimeout(timer); page.wake = null; resolve(); }
    page.wake = done;
  });
}

// MARK: - Applying changes

/// Applies one change to the one element its path names.
function apply(change) {
  logChange(change);
  const [, model, collection, id, field] = change.path.split("/");
  if (model === "grid") {
    if (collection === "rows" && change.op === "insert") {
      insertIntoGrid(change.new);
    } else if (collection === "dots" && page.dots.has(id)) {
      const dot = page.dots.get(id);
      if (field === "isTapAnimated") setTapped(dot, change.new === true);
      if (field === "isRandomAnimated") setGlowing(dot, change.new === true);
    }
  } else if (model === "truck") {
    if (collection === "orderCount") setOrderCount(change.new, true);
    else if (collection === "name") $("truck-name").textContent = change.new;
    else if (collection === "donuts" && id === undefined) {
      if (change.op === "insert") addDonut(change.new);
      if (change.op === "remove") removeDonut(change.old.id);
    } else if (collection === "donuts" && field === "name") setDonutName(id, change.new);
  } else if (model === "account" && collection === "userName") {
    setUserName(change.new);
  }
}

function logChange(change) {
  const log = $("changes");
  const item = document.createElement("li");
  const shortPath = change.path.replace(/[0-9a-f]{8}-[0-9a-f-]{23}([0-9a-f]{4})/g, "…$1");
  let value;
  if (change.op === "set") value = `${JSON.stringify(change.old)} → ${JSON.stringify(change.new)}`;
  else value = change.op;
  item.textContent = `#${change.seq} ${shortPath} ${value}`;
  log.prepend(item);
  while (log.children.length > LOG_LENGTH) log.lastElementChild.remove();
}

// MARK: - Dot grid

function drawGrid(rows) {
  const grid = $("grid");
  grid.replaceChildren();
  for (const dot of page.dots.values()) stopTimers(dot);
  page.dots.clear();
  rows.forEach((dots, row) => {
    dots.forEach((dot, col) => addDot(row, col, dot));
  });
}

function rowElement(row) {
  const grid = $("grid");
  while (grid.children.length <= row) {
    const element = document.createElement("div");
    element.className = "row";
    element.dataset.row = String(grid.children.length);
    grid.append(element);
  }
  return grid.children[row];
}

function addDot(row, col, value) {
  if (page.dots.has(value.id)) return;
  const dot = document.createElement("button");
  dot.type = "button";
  dot.className = "dot write";
  dot.dataset.dotId = value.id;
  dot.dataset.row = String(row);
  dot.dataset.col = String(col);
  dot.dataset.taps = "0";
  dot.dataset.glows = "0";
  dot.setAttribute("aria-label", `dot at row ${row + 1}, column ${col + 1}`);
  dot.addEventListener("click", () => tap(dot));
  dot.disabled = page.writeDenied;
  rowElement(row).append(dot);
  page.dots.set(value.id, dot);
  setTapped(dot, value.isTapAnimated === true);
  setGlowing(dot, value.isRandomAnimated === true);
}

/// `new` of an insert into `/grid/rows`: a new row, or one dot appended.
function insertIntoGrid(value) {
  if (Array.isArray(value.dots)) value.dots.forEach((dot, col) => addDot(value.row, col, dot));
  else if (value.dot) addDot(value.row, value.col, value.dot);
}

/// The server sets isTapAnimated true and at once false again, so the
/// scale-up is held for TAP_MS after `true` whatever comes next.
function setTapped(dot, on) {
  if (on) {
    clearTimeout(dot.tapTimer);
    dot.tapTimer = null;
    dot.tapStarted = performance.now();
    dot.classList.add("tapped");
    dot.dataset.taps = String(Number(dot.dataset.taps) + 1);
    dot.dataset.lastTapAt = String(Date.now());
  } else if (dot.classList.contains("tapped") && dot.tapTimer == null) {
    const left = Math.max(0, TAP_MS - (performance.now() - (dot.tapStarted || 0)));
    dot.tapTimer = setTimeout(() => {
      dot.tapTimer = null;
      dot.classList.remove("tapped");
      showDotState(dot);
    }, left);
  }
  showDotState(dot);
}

/// A glow lasts until the server says it is over. The page that sees it
/// turns it off after GLOW_RESET_MS, as the seed's onChange does; when
/// several pages do, the later PATCHes change nothing.
function setGlowing(dot, on) {
  clearTimeout(dot.glowTimer);
  dot.glowTimer = null;
  if (on && !dot.classList.contains("glowing")) {
    dot.dataset.glows = String(Number(dot.dataset.glows) + 1);
    dot.dataset.lastGlowAt = String(Date.now());
  }
  dot.classList.toggle("glowing", on);
  if (on) dot.glowTimer = setTimeout(() => resetGlow(dot), GLOW_RESET_MS);
  showDotState(dot);
}

async function resetGlow(dot) {
  dot.glowTimer = null;
  let response;
  try {
    response = await api("PATCH", `grid/dots/${encodeURIComponent(dot.dataset.dotId)}`, { body: { isRandomAnimated: false } });
  } catch (_) {
    response = null;
  }
  if (response && response.status === 401) {
    // A read-only page leaves the reset to a page that may write.
    denyWrites();
    showMessage(`Could not turn the glow off: 401 — ${response.json ? response.json.detail : "a token is needed"}`, "401");
  } else if ((!response || response.status >= 500) && dot.classList.contains("glowing") && !dot.glowTimer) {
    dot.glowTimer = setTimeout(() => resetGlow(dot), 2 * GLOW_RESET_MS);
  }
}

function stopTimers(dot) {
  clearTimeout(dot.tapTimer);
  clearTimeout(dot.glowTimer);
}

function showDotState(dot) {
  const tapped = dot.classList.contains("tapped");
  const glowing = dot.classList.contains("glowing");
  dot.dataset.state = tapped ? "tapped" : glowing ? "glowing" : "idle";
  dot.dataset.glowing = String(glowing);
}

async function tap(dot) {
  await write("POST", `grid/dots/${encodeURIComponent(dot.dataset.dotId)}/tap`, undefined, "tap");
}

// MARK: - Food truck and account

function setOrderCount(count, changed) {
  const output = $("order-count");
  output.textContent = String(count);
  output.dataset.value = String(count);
  if (changed) {
    output.classList.remove("bumped");
    void output.offsetWidth;  // restarts the animation
    output.classList.add("bumped");
  }
}

function drawDonuts(donuts) {
  $("donuts").replaceChildren();
  donuts.forEach(addDonut);
}

function addDonut(donut) {
  const list = $("donuts");
  let item = list.querySelector(`[data-donut-id="${CSS.escape(donut.id)}"]`);
  if (!item) {
    item = document.createElement("li");
    item.dataset.donutId = donut.id;
    list.append(item);
  }
  item.textContent = donut.name;
}

function removeDonut(id) {
  const item = $("donuts").querySelector(`[data-donut-id="${CSS.escape(id)}"]`);
  if (item) item.remove();
}

function setDonutName(id, name) {
  const item = $("donuts").querySelector(`[data-donut-id="${CSS.escape(id)}"]`);
  if (item) item.textContent = name;
}

function setUserName(name) {
  const output = $("user-name");
  output.textContent = name === null ? "signed out" : name;
  output.dataset.signedIn = String(name !== null);
}

async function addOrder() {
  const first = $("donuts").querySelector("li");
  if (!first) return showMessage("There is no donut on the menu to order.");
  await write("POST", "truck/orders", { donutId: first.dataset.donutId, quantity: 1 }, "add an order");
}

async function randomDot() {
  await write("POST", "grid/random", undefined, "pick a random dot");
}

// MARK: - Writes, tokens and messages

/// A write the user asked for. Its effect arrives through the change feed,
/// like everyone else's; only a refusal is shown here.
async function write(method, path, body, what) {
  let response;
  try {
    response = await api(method, path, { body });
  } catch (_) {
    return showMessage(`Could not ${what}: the server cannot be reached.`, "network");
  }
  if (response.status === 401) {
    denyWrites();
    return showMessage(`Could not ${what}: 401 — ${response.json ? response.json.detail : "a token is needed"}`, "401");
  }
  if (response.status >= 300) {
    return showMessage(`Could not ${what}: ${response.status} — ${response.json ? response.json.detail : ""}`, String(response.status));
  }
  showMessage("");
}

function denyWrites() {
  if (page.writeDenied) return;
  page.writeDenied = true;
  showAccess();
}

function showAccess() {
  for (const button of document.querySelectorAll(".write")) button.disabled = page.writeDenied;
  const access = $("access");
  if (page.writeDenied) {
    access.dataset.access = "read-only";
    access.textContent = page.token
      ? "Read-only: this token may not change models. Enter the write token."
      : "Read-only: changing a model needs the write token (OBSERVABLE_TOKEN). Enter it above, or open the page with #token=….";
  } else if (page.token) {
    access.dataset.access = "token";
    access.textContent = "Using a token (kept in this tab only).";
  } else {
    access.dataset.access = "none";
    access.textContent = "No token: reading only, unless the server needs none to write.";
  }
}

function useToken(token) {
  page.token = token;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  page.writeDenied = false;
  $("token").value = "";
  showAccess();
  showMessage("");
  if (page.wake) page.wake();
}

function showMessage(text, status) {
  const message = $("message");
  message.textContent = text;
  message.hidden = !text;
  if (status) message.dataset.status = status;
  else delete message.dataset.status;
}

function setStatus(state, text) {
  const status = $("status");
  status.dataset.state = state;
  status.textContent = text || (state === "live" ? "live — observing" : state);
  document.body.dataset.connection = state;
}

function showObserver() {
  $("observer-info").textContent =
    `observer ${page.observer} · cursor ${page.cursor} · ${page.dots.size} dots`;
  document.body.dataset.observer = page.observer || "";
  document.body.dataset.cursor = String(page.cursor);
}

// MARK: - Start

function start() {
  // A token given as #token=… is kept for this tab and taken off the
  // address bar, so it is not bookmarked or shared by accident.
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  page.token = sessionStorage.getItem(TOKEN_KEY) || "";
  showAccess();

  $("random").addEventListener("click", randomDot);
  $("add-order").addEventListener("click", addOrder);
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    useToken($("token").value.trim());
  });
  $("forget-token").addEventListener("click", () => useToken(""));
  // Leaving the page frees its observer; a page restored later makes a new one.
  window.addEventListener("pagehide", () => {
    if (!page.observer) return;
    api("DELETE", `observers/${encodeURIComponent(page.observer)}`, { keepalive: true }).catch(() => {});
    page.observer = null;
  });
  run();
}

start();
