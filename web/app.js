// The live page of observable-server. It uses nothing but the public HTTP
// API: one observer per page, reads made with that observer (so the server
// tracks exactly what the page draws), and one change feed, a stream of
// Server-Sent Events or long-polls where no stream opens, whose changes are
// applied, one by one, to the element each one names.
"use strict";

const POLL_TIMEOUT = 25;       // seconds a poll may wait on the server
const STREAM_OPEN_MS = 3000;   // a stream not open by then is taken as unavailable
const OBSERVER_TTL = 300;      // seconds an unused observer lives
const TAP_MS = 450;            // a tap stays visible at least this long
const GLOW_RESET_MS = 1000;    // a glow is turned off after this long
const BACKOFF_FIRST = 500;     // first wait after a failure, ms; doubles
const BACKOFF_MAX = 5000;
const LOG_LENGTH = 8;          // changes shown in "Changes heard"
const ORDERS_SHOWN = 5;        // orders on a page of the list: the newest five, or five older ones
const ORDER_LOG_LENGTH = 200;  // recent changes of the orders kept, to replay after a page's read
const QUERY_ORDERS_SHOWN = 5;  // the biggest orders of the donut chosen
const TALLEST_SHOWN = 10;      // the tallest posts
const QUERY_LOG_LENGTH = 200;  // recent changes that carry a query, to replay after a view's read
const POST_COLUMNS = 3;
const POST_SCALE = 0.3;        // pixels per unit of a post's height
const POST_MAX_PX = 240;       // the tallest a tile is drawn
const TOKEN_KEY = "observable-server.token";

const $ = (id) => document.getElementById(id);

const page = {
  token: "",
  observer: null,     // the observer's id
  cursor: null,       // seq of the last change applied: `since` of the next poll or stream
  needsRead: true,    // read everything again before following the feed
  feed: null,         // "stream" or "poll"; null: try a stream first
  onlyPoll: false,    // #feed=poll: never open a stream
  streamAbort: null,  // ends the open stream of the feed
  writeDenied: false, // a write was answered 401
  dots: new Map(),    // dot id -> its circle
  donuts: new Map(),  // donut id -> name, menu order
  orders: {          // the page of orders shown
    after: null,      // the page's `after` (from a Link); null: the newest page, open to new orders
    back: [],         // the `after` of each newer page passed on the way here (null: the newest)
    next: null,       // the Link to the next, older page, or null when no more follow
    stale: false,     // the newest page dropped orders since its read: `next` skips them
    cursor: 0,        // Observation-Cursor of the page's read: changes at or before it are in it
    shown: [],        // {order, gone} newest first
    read: 0,          // numbers the reads of a page, so a late answer is dropped
    reading: false,   // a page is being read
    heard: 0,         // new orders heard while an older page is shown
    changed: false,   // changed since last drawn
    log: [],          // recent changes of /truck/orders, replayed after a page's read
  },
  jobs: new Map(),    // job id -> its list item
  serverJobs: new Set(), // jobs known to be advanced by the server
  game: null,         // {id, cards: Map card id -> button, isOver}
  postsLayout: "roundRobin",
  postsRead: 0,       // numbers the reads of the posts, so a late answer is dropped
  postImages: new Map(), // image URL -> "loaded" or "failed", as the browser found it
  queryDonut: null,   // the donut whose biggest orders are shown
  views: {},          // the filtered views (query reads), by name: see makeView
  queryLog: [],       // recent changes that carry a query, replayed after a view's read
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
  return { status: response.status, json, cursor: cursor === null ? null : Number(cursor),
           link: response.headers.get("Link") };
}

/// A GET with the page's observer, so the server tracks what it answers.
async function read(path) {
  const response = await api("GET", path, { observe: true });
  if (response.status !== 200) throw new Answer(response, `reading ${path.split("?")[0]}`);
  return response;
}

const enc = encodeURIComponent;

// MARK: - Observer and reads

async function createObserver() {
  const response = await api("POST", "observers", { body: { ttlSeconds: OBSERVER_TTL } });
  if (response.status !== 201) throw new Answer(response, "creating an observer");
  page.observer = response.json.id;
  page.needsRead = true;
}

/// Reads what the page draws, with the observer, and draws it. Following
/// the feed from the smallest of the answers' cursors neither misses a
/// change nor repeats one for a property (each property counts from the
/// read that first saw it).
async function readEverything() {
  const reads = await Promise.all([
    read("grid"),
    read(`truck?fields=name,orders,orderCount&orders.limit=${ORDERS_SHOWN}&orders.order=desc`),
    read("truck/donuts?fields=name"),
    read("account?fields=userName"),
    read("jobs"),
    read("games?fields=id"),  // the games' membership; only the newest is read whole
    read(postsPath()),
  ]);
  const [grid, truck, donuts, account, jobs, games, posts] = reads.map((response) => response.json);
  // The filtered views, the donut chosen (or the menu's first) for the orders.
  if (!donuts.donuts.some((donut) => donut.id === page.queryDonut)) page.queryDonut = donuts.donuts.length ? donuts.donuts[0].id : null;
  const views = Object.values(page.views);
  for (const view of views) ++view.read;  // a view still on its way is not drawn
  const [game, ...viewReads] = await Promise.all([
    readGame(games.games),
    ...views.map((view) => readViewAnswer(view)),
  ]);
  if (game) reads.push(game);
  reads.push(...viewReads.filter(({ response }) => response).map(({ response }) => response));
  // An older page of orders the page was showing is read again too.
  const older = page.orders.after === null ? null : await read(olderOrdersPath(page.orders.after));
  drawGrid(grid.rows);
  $("truck-name").textContent = truck.name;
  setOrderCount(truck.orderCount, false);
  drawDonuts(donuts.donuts);
  ++page.orders.read;  // a page of orders still on its way is not drawn
  page.orders.reading = false;
  if (older) drawOrders(older, page.orders.after, page.orders.back);
  else drawOrders(reads[1], null, []);
  setUserName(account.userName);
  drawJobs(jobs.jobs);
  drawGame(game ? game.json : null);
  drawPosts(posts.columns);
  for (const { view, query, response, error } of viewReads) {
    view.reading = false;
    if (response) takeViewRead(view, query, response);
    else refuseView(view, error);
  }
  page.cursor = Math.min(...reads.map((response) => response.cursor), ...(older ? [older.cursor] : []));
  page.needsRead = false;
}

/// The newest of `games`, read whole; null when there is none, or when it
/// was deleted meanwhile (its removal then comes through the feed).
async function readGame(games) {
  const newest = games[games.length - 1];
  if (!newest) return null;
  try {
    return await read(`games/${enc(newest.id)}`);
  } catch (error) {
    if (error instanceof Answer && error.status === 404 && error.detail.startsWith("no game")) return null;
    throw error;
  }
}

// MARK: - The change feed

/// Follows the feed as a stream of Server-Sent Events until it ends, read
/// through fetch rather than EventSource: so the observer goes in the
/// `Observer` header, never in the URL, and a token is sent too. Resolves
/// "unavailable" when it never opened (a server without streams answers a
/// long-poll's JSON, or parks it), "ended" when an open stream broke off;
/// rejects when the server cannot be reached. A refusal (the observer gone: 404) and a `gone` event
/// (the cursor is past the server's retention: the 410 it carries) reject.
async function stream() {
  const abort = new AbortController();
  page.streamAbort = abort;
  const headers = { "Accept": "text/event-stream", "Observer": page.observer };
  if (page.token) headers["Authorization"] = "Bearer " + page.token;
  // A server without streams parks this request as a long-poll.
  const timer = setTimeout(() => abort.abort(), STREAM_OPEN_MS);
  try {
    let response;
    try {
      response = await fetch(`observer/changes?since=${page.cursor}&repair=true`,
                             { headers, signal: abort.signal, cache: "no-store" });
    } catch (error) {
      // Aborted by the timer: the request was parked as a long-poll, so no
      // stream opens here. Any other failure is a server that cannot be
      // reached (stopped, restarting): not a sign that it has no streams,
      // so the page retries with a stream once it is back.
      if (abort.signal.aborted) return "unavailable";
      throw error;
    } finally {
      clearTimeout(timer);
    }
    const type = response.headers.get("Content-Type") || "";
    if (response.status !== 200 || !type.startsWith("text/event-stream")) {
      if (response.status >= 400 && response.status < 500) {
        const text = await response.text().catch(() => "");
        let json = null;
        try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
        throw new Answer({ status: response.status, json }, "streaming");
      }
      return "unavailable";
    }
    page.feed = "stream";
    setStatus("live");
    showObserver();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (_) {
        return "ended";
      }
      if (chunk.done) return "ended";
      buffer += decoder.decode(chunk.value, { stream: true });
      // Events end with a blank line; comment lines (heartbeats) are skipped.
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "event") name = value;
          else if (field === "data") data.push(value);
        }
        if (name === "changes") {
          receive(JSON.parse(data.join("\n")));
        } else if (name === "gone") {
          let problem = null;
          try { problem = JSON.parse(data.join("\n")); } catch (_) { problem = null; }
          throw new Answer({ status: 410, json: problem }, "streaming");
        }
      }
    }
  } finally {
    abort.abort();
    if (page.streamAbort === abort) page.streamAbort = null;
  }
}

/// One long-poll, waiting up to `timeout` seconds; applies what it brings.
async function poll(timeout = POLL_TIMEOUT) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), (timeout + 15) * 1000);
  try {
    const response = await api("GET", `observer/changes?since=${page.cursor}&timeout=${timeout}`,
                               { observe: true, signal: abort.signal });
    if (response.status !== 200) throw new Answer(response, "polling");
    setStatus("live");
    receive(response.json);
  } finally {
    clearTimeout(timer);
  }
}

/// Applies one answer of the feed, `{"cursor", "changes"}`, from a poll or
/// a stream's event. A change at or before the page's cursor was applied
/// already, so it is skipped if it ever comes again.
function receive(answer) {
  for (const change of answer.changes) {
    const applied = change.op !== "repair" && typeof change.seq === "number" && change.seq <= page.cursor;
    // A change that carries a query is for the view of that query read;
    // the same write reaches the plain reads as a change without one.
    if (applied) continue;
    if (typeof change.query === "string") applyQueryChange(change);
    else apply(change);
  }
  if (page.orders.changed) showOrders();
  for (const view of Object.values(page.views)) if (view.changed) drawView(view);
  page.cursor = answer.cursor;
  showObserver();
  // A repair brings back the properties the page read, but not reads of
  // another shape (the grid's rows, the posts' columns): those are read again.
  if (answer.changes.some((change) => change.op === "repair")) {
    rereadGrid();
    refreshPosts();
    // Each page of orders read is a shape, and a shape's repair does not
    // say which page it is: the page shown is read again.
    if (answer.changes.some((change) => change.op === "repair" && change.path === "/truck/orders")) rereadOrders();
    // A query read is repaired as its window read afresh: the views are
    // read again, as they would be after a 410.
    rereadViews();
  }
}

/// Observes until the page is closed: creates the observer, reads, follows
/// the feed, and recovers from whatever the server or the network does
/// meanwhile.
async function run() {
  let backoff = BACKOFF_FIRST;
  let startAgainAtOnce = true;  // the first 404 or 410 in a row
  for (;;) {
    let wait;
    try {
      if (!page.observer) await createObserver();
      if (page.needsRead) await readEverything();
      showObserver();
      if (page.onlyPoll || page.feed === "poll") {
        // Until a poll has answered, one that answers at once tells
        // whether the server can be reached.
        const live = $("status").dataset.state === "live";
        page.feed = "poll";
        await poll(live ? POLL_TIMEOUT : 0);
      } else if (await stream() === "ended") {
        // The server stopped or the connection broke: open a new stream
        // soon, from the cursor the page has reached.
        setStatus("disconnected", "disconnected — reconnecting");
        page.feed = null;
        await pause(BACKOFF_FIRST);
      } else {
        // No stream here: long-poll instead. The next time the server
        // cannot be reached, a stream is tried again.
        page.feed = "poll";
      }
      backoff = BACKOFF_FIRST;
      startAgainAtOnce = true;
      continue;
    } catch (error) {
      wait = backoff;
      page.feed = null;
      if (!(error instanceof Answer)) {
        // The server cannot be reached (stopped, restarting, network gone).
        setStatus("disconnected", `disconnected — retrying in ${(backoff / 1000).toFixed(1)} s`);
      } else if (error.status === 404 || error.status === 410) {
        // 404: the observer is gone (expired, deleted, another database), so
        // a new one reads everything again. 410: the feed no longer holds
        // our cursor, so read again and follow from there. The server is
        // up, so go on at once, unless that is what just failed.
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

/// Applies one change to the one element its path names. A repair (sent
/// after the page fell behind the server's retention) gives a property's
/// current value, so it is applied as a set.
function apply(change) {
  logChange(change);
  const [model, ...rest] = change.path.split("/").slice(1);
  const value = change.new;
  const inserted = change.op === "insert";
  const removed = change.op === "remove";
  if (model === "grid") {
    const [what, id, field] = rest;  // rows, dots/{id}/{field}
    if (what === "rows" && inserted) {
      insertIntoGrid(value);
    } else if (what === "dots" && page.dots.has(id)) {
      const dot = page.dots.get(id);
      if (field === "isTapAnimated") setTapped(dot, value === true);
      if (field === "isRandomAnimated") setGlowing(dot, value === true);
    }
  } else if (model === "truck") {
    const [what, id, field] = rest;  // name, orderCount, donuts[/{id}/name], orders
    if (what === "orderCount") setOrderCount(value, true);
    else if (what === "name") $("truck-name").textContent = value;
    else if (what === "donuts" && inserted) addDonut(value);
    else if (what === "donuts" && removed) removeDonut(change.old.id);
    else if (what === "donuts" && field === "name") setDonutName(id, value);
    else if (what === "donuts" && !id && change.op === "repair" && Array.isArray(value)) drawDonuts(value);
    if (what === "donuts") menuChanged();
    else if (what === "orders" && !id && (inserted || removed)) {
      logOrderChange(change);
      applyOrderChange(change, false);  // drawn once the answer is applied
    }
  } else if (model === "account" && rest[0] === "userName") {
    setUserName(value);
  } else if (model === "jobs") {
    const [id, field] = rest;  // nothing (membership), {id}/progress, {id}/isComplete
    if (inserted) addJob(value);
    else if (removed) removeJob(change.old.id);
    else if (!id && change.op === "repair" && Array.isArray(value)) drawJobs(value);
    else if (field === "progress") setJobProgress(id, value);
    else if (field === "isComplete") setJobComplete(id, value === true);
  } else if (model === "games") {
    const [id, what, cardId, field] = rest;  // nothing (membership), {id}/isOver, {id}/cards/{cardId}/{field}
    if (inserted) drawGame(value);
    else if (removed && page.game && page.game.id === change.old.id) reloadGame();
    else if (change.op === "repair" && Array.isArray(value) && (!id || (page.game && page.game.id === id))) reloadGame();
    else if (page.game && page.game.id === id) {
      if (what === "cards" && cardId) setCard(cardId, field, value === true);
      if (what === "isOver") setGameOver(value === true);
    }
  } else if (model === "posts" && (inserted || removed)) {
    // Where a post goes depends on the layout and on every post before
    // it, so the page asks the server to deal the columns again.
    refreshPosts();
  }
}

function logChange(change) {
  const log = $("changes");
  const item = document.createElement("li");
  const shortPath = change.path.replace(/[0-9a-f]{8}-[0-9a-f-]{23}([0-9a-f]{4})/g, "…$1");
  let value;
  if (change.op === "set") value = `${JSON.stringify(change.old)} → ${JSON.stringify(change.new)}`;
  else if (change.op === "repair") value = `repair → ${JSON.stringify(change.new)}`;
  else value = change.op;
  const query = typeof change.query === "string" ? ` [${change.query}]` : "";
  item.textContent = `#${change.seq} ${shortPath} ${value}${query}`.replace(/[0-9a-f]{8}-[0-9a-f-]{23}([0-9a-f]{4})/g, "…$1");
  if (query) item.dataset.query = change.query;
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

async function rereadGrid() {
  try {
    drawGrid((await read("grid")).json.rows);
  } catch (_) {
    // The feed's own recovery reads everything again if the server is gone.
  }
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

async function randomDot() {
  await write("POST", "grid/random", undefined, "pick a random dot");
}

// MARK: - Food truck and account

function setOrderCount(count, changed) {
  const output = $("order-count");
  output.textContent = count.toLocaleString("en-US");
  output.dataset.value = String(count);
  if (changed) {
    output.classList.remove("bumped");
    void output.offsetWidth;  // restarts the animation
    output.classList.add("bumped");
  }
}

function drawDonuts(donuts) {
  $("donuts").replaceChildren();
  $("order-donut").replaceChildren();
  $("query-donut").replaceChildren();
  page.donuts.clear();
  donuts.forEach((donut) => addDonut(donut));
  chooseQueryDonut();
}

function addDonut(donut) {
  page.donuts.set(donut.id, donut.name);
  const selector = `[data-donut-id="${CSS.escape(donut.id)}"]`;
  let item = $("donuts").querySelector(selector);
  if (!item) {
    item = document.createElement("li");
    item.dataset.donutId = donut.id;
    $("donuts").append(item);
    for (const select of [$("order-donut"), $("query-donut")]) {
      const option = document.createElement("option");
      option.value = donut.id;
      option.dataset.donutId = donut.id;
      select.append(option);
    }
  }
  setDonutName(donut.id, donut.name);
}

function removeDonut(id) {
  page.donuts.delete(id);
  for (const element of document.querySelectorAll(`[data-donut-id="${CSS.escape(id)}"]`)) element.remove();
  showOrders();
}

function setDonutName(id, name) {
  if (!page.donuts.has(id)) return;
  page.donuts.set(id, name);
  for (const element of document.querySelectorAll(`[data-donut-id="${CSS.escape(id)}"]`)) element.textContent = name;
  showOrders();
}

// MARK: - Orders, a page at a time

/// The next page's link of a read: `rel="next"` (on /truck, the one titled
/// "orders"), or null when no more follow.
function nextLink(header) {
  if (!header) return null;
  for (const part of header.split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (!match || !/;\s*rel="?next"?/.test(match[2])) continue;
    const title = /;\s*title="([^"]*)"/.exec(match[2]);
    if (!title || title[1] === "orders") return match[1];
  }
  return null;
}

/// The `after` a Link names. The page follows only its query: the link's
/// path starts at the server's root, the page's own paths are relative.
function linkAfter(link) {
  const query = link.includes("?") ? link.slice(link.indexOf("?") + 1) : "";
  return new URLSearchParams(query).get("after");
}

function olderOrdersPath(after) {
  return `truck/orders?limit=${ORDERS_SHOWN}&order=desc&after=${enc(after)}`;
}

/// Shows a page of orders as read (`response`: of /truck on the newest
/// page, of /truck/orders on an older one), and replays the changes of the
/// orders that came through the feed after the read's cursor while it was
/// on its way.
function drawOrders(response, after, back) {
  const view = page.orders;
  view.after = after;
  view.back = back;
  view.next = nextLink(response.link);
  view.stale = false;
  view.cursor = response.cursor;
  view.shown = response.json.orders.map((order) => ({ order, gone: false }));
  if (after === null) view.heard = 0;
  for (const change of view.log) {
    if (change.seq > view.cursor) applyOrderChange(change, false);
  }
  showOrders();
}

function logOrderChange(change) {
  const log = page.orders.log;
  log.push(change);
  if (log.length > ORDER_LOG_LENGTH) log.splice(0, log.length - ORDER_LOG_LENGTH);
}

/// An order made or removed. The newest page hears every new order (its
/// window is open upward): it shows it on top and lets the oldest shown go.
/// An older page is a fixed window of older orders: it hears no new ones,
/// and shows the removal of one of its own as gone (it is not refilled).
function applyOrderChange(change, show = true) {
  const view = page.orders;
  if (typeof change.seq === "number" && change.seq <= view.cursor) return;  // the page's read showed it
  if (change.op === "insert" && view.after !== null) {
    view.heard += 1;
  } else if (change.op === "insert") {
    if (view.shown.some((entry) => entry.order.id === change.new.id)) return;
    view.shown.unshift({ order: change.new, gone: false });
    if (view.shown.length > ORDERS_SHOWN) {
      view.shown.length = ORDERS_SHOWN;
      view.stale = true;
    }
  } else if (change.op === "remove") {
    const index = view.shown.findIndex((entry) => entry.order.id === change.old.id);
    if (index < 0) return;
    if (view.after === null) view.shown.splice(index, 1);
    else view.shown[index].gone = true;
  } else {
    return;
  }
  page.orders.changed = true;
  if (show) showOrders();
}

/// Reads a page of orders with the observer, so that it is tracked (one
/// shape), and shows it. `after` null: the newest page; `back`: the pages
/// to go back through with Newer.
async function readOrders(after, back) {
  const number = ++page.orders.read;
  page.orders.reading = true;
  setPaging();
  try {
    const response = await read(after === null
      ? `truck/orders?limit=${ORDERS_SHOWN}&order=desc` : olderOrdersPath(after));
    if (number === page.orders.read) drawOrders(response, after, back);
  } catch (error) {
    if (number === page.orders.read) showMessage(`Could not read the orders: ${error.message}`);
  } finally {
    if (number === page.orders.read) {
      page.orders.reading = false;
      setPaging();
    }
  }
}

function rereadOrders() {
  if (page.observer) readOrders(page.orders.after, page.orders.back);
}

/// Older: the page after the last order shown. The newest page's Link is
/// good until new orders push the oldest shown off it; then the page asks
/// where the orders it shows end (a read of their ids only, not tracked).
async function olderOrders() {
  const view = page.orders;
  let link = view.next;
  if (view.after === null && view.stale && view.shown.length > 0) {
    const number = ++view.read;
    view.reading = true;
    setPaging();
    try {
      const probe = await api("GET", `truck/orders?fields=id&limit=${view.shown.length}&order=desc`);
      if (probe.status !== 200) throw new Answer(probe, "reading the orders");
      link = nextLink(probe.link);
    } catch (error) {
      link = null;
      showMessage(`Could not read the orders: ${error.message}`);
    }
    if (number !== view.read) return;  // another read began meanwhile
    view.reading = false;
    setPaging();
  }
  if (!link) return;
  await readOrders(linkAfter(link), [...view.back, view.after]);
}

async function newerOrders() {
  const back = [...page.orders.back];
  if (back.length === 0) return;
  const after = back.pop();
  await readOrders(after, back);
}

async function newestOrders() {
  await readOrders(null, []);
}

/// Enables the paging buttons as the page shown allows, and none while a
/// page is read. Newest counts the orders made since an older page was read.
function setPaging() {
  const view = page.orders;
  const newest = view.after === null;
  $("orders-older").disabled = view.reading || !(view.next || (newest && view.stale));
  $("orders-newer").disabled = view.reading || newest;
  $("orders-newest").disabled = view.reading || newest;
  $("orders-newest").textContent = !newest && view.heard > 0 ? `Newest (+${view.heard.toLocaleString("en-US")})` : "Newest";
  $("orders-state").dataset.reading = String(view.reading);
}

/// The page of orders, newest first, with their donuts' names.
function showOrders() {
  const view = page.orders;
  view.changed = false;
  const list = $("orders");
  list.dataset.page = view.after === null ? "newest" : "older";
  list.replaceChildren(...view.shown.map(({ order, gone }) => {
    const item = document.createElement("li");
    item.dataset.orderId = order.id;
    item.dataset.gone = String(gone);
    const text = document.createElement("span");
    text.className = "order-text";
    text.textContent = `${order.quantity} × ${page.donuts.get(order.donutId) || "a donut no longer on the menu"}`;
    item.append(text);
    if (gone) {
      const note = document.createElement("span");
      note.className = "order-gone";
      note.textContent = "removed";
      item.append(note);
    } else {
      const remove = writeButton("×", `remove the order of ${text.textContent}`, () =>
        write("DELETE", `truck/orders/${enc(order.id)}`, undefined, "remove an order"));
      remove.className += " remove-order";
      item.append(remove);
    }
    return item;
  }));
  const state = $("orders-state");
  const depth = view.back.length;
  state.dataset.page = String(depth + 1);
  if (view.shown.length === 0) {
    state.textContent = depth === 0 ? "No orders yet." : "No older orders.";
  } else if (depth === 0) {
    state.textContent = `Newest ${view.shown.length}, newest first`;
  } else {
    const first = depth * ORDERS_SHOWN + 1;
    state.textContent = `Page ${depth + 1}: orders ${first.toLocaleString("en-US")}–${(first + view.shown.length - 1).toLocaleString("en-US")} from the newest, as read`;
  }
  setPaging();
}

function setUserName(name) {
  const output = $("user-name");
  output.textContent = name === null ? "signed out" : name;
  output.dataset.signedIn = String(name !== null);
}

async function addOrder(event) {
  event.preventDefault();
  const donutId = $("order-donut").value;
  if (!donutId) return showMessage("There is no donut on the menu to order.");
  await write("POST", "truck/orders", { donutId, quantity: 1 }, "add an order");
}

async function signIn(event) {
  event.preventDefault();
  const userName = $("login-name").value.trim();
  if (!userName) return showMessage("Type a user name to sign in.");
  const response = await write("POST", "account/login", { userName }, "sign in");
  if (response && response.status === 200) $("login-name").value = "";
}

async function signOut() {
  await write("POST", "account/logout", undefined, "sign out");
}

// MARK: - Jobs

function drawJobs(jobs) {
  $("jobs").replaceChildren();
  page.jobs.clear();
  jobs.forEach(addJob);
}

/// A job as a list item: a progress bar, its numbers, and buttons to report
/// progress and to cancel (or remove, once complete).
function addJob(job) {
  if (page.jobs.has(job.id)) return;
  const item = document.createElement("li");
  item.className = "job";
  item.dataset.jobId = job.id;
  const name = `job …${job.id.slice(-4)}`;
  const label = document.createElement("span");
  label.className = "job-name";
  label.textContent = name;
  const bar = document.createElement("progress");
  bar.setAttribute("aria-label", `progress of ${name}`);
  const numbers = document.createElement("output");
  const report = writeButton("+10%", `report 10% more progress on ${name}`, () => reportProgress(job.id));
  report.className += " report";
  const cancel = writeButton("Cancel", `cancel ${name}`, () =>
    write("DELETE", `jobs/${enc(job.id)}`, undefined, `remove ${name}`));
  cancel.className += " cancel";
  item.append(label, bar, numbers, report, cancel);
  $("jobs").prepend(item);
  page.jobs.set(job.id, item);
  setJobProgress(job.id, job.progress);
  setJobComplete(job.id, job.isComplete);
  if (page.serverJobs.has(job.id)) markServerJob(job.id);
}

function removeJob(id) {
  const item = page.jobs.get(id);
  if (item) item.remove();
  page.jobs.delete(id);
}

function setJobProgress(id, progress) {
  const item = page.jobs.get(id);
  if (!item) return;
  const bar = item.querySelector("progress");
  bar.max = progress.total;
  bar.value = progress.current;
  item.querySelector("output").textContent = `${progress.current} / ${progress.total}`;
  item.dataset.current = String(progress.current);
  item.dataset.total = String(progress.total);
}

function setJobComplete(id, complete) {
  const item = page.jobs.get(id);
  if (!item) return;
  item.dataset.complete = String(complete);
  item.querySelector(".report").hidden = complete || item.dataset.driver === "server";
  item.querySelector(".cancel").textContent = complete ? "Remove" : "Cancel";
}

/// The API does not say who advances a job; the page learns it when it
/// starts one, or when its report is refused.
function markServerJob(id) {
  page.serverJobs.add(id);
  const item = page.jobs.get(id);
  if (!item) return;
  item.dataset.driver = "server";
  item.querySelector(".report").hidden = true;
}

async function startJob(byServer) {
  const body = { total: Number($("job-total").value) };
  if (byServer) {
    body.step = Number($("job-step").value);
    body.intervalMs = Number($("job-interval").value);
  }
  const response = await write("POST", "jobs", body, "start a job");
  if (byServer && response && response.status === 201) markServerJob(response.json.id);
}

async function reportProgress(id) {
  const item = page.jobs.get(id);
  const total = Number(item.dataset.total);
  const current = Math.min(total, Number(item.dataset.current) + Math.ceil(total / 10));
  const response = await write("POST", `jobs/${enc(id)}/progress`, { current }, "report progress");
  if (response && response.status === 422 && /advanced by the server/.test(response.json.detail)) {
    markServerJob(id);
    showMessage("");
  }
}

// MARK: - Memory game

/// Draws `game` (null: none) as a row of cards that can be chosen. The page
/// shows the newest game; one dealt later, here or elsewhere, replaces it.
function drawGame(game) {
  const table = $("game");
  table.replaceChildren();
  page.game = game && { id: game.id, cards: new Map(), isOver: false };
  table.dataset.gameId = game ? game.id : "";
  if (!game) return showGameState();
  game.cards.forEach((card, index) => {
    const button = writeButton("", "", () =>
      write("POST", `games/${enc(game.id)}/cards/${enc(card.id)}/choose`, undefined, "choose a card"));
    button.className += " playing-card";
    button.dataset.cardId = card.id;
    button.dataset.index = String(index + 1);
    button.dataset.content = card.content;
    table.append(button);
    page.game.cards.set(card.id, button);
    setCard(card.id, "isFaceUp", card.isFaceUp);
    setCard(card.id, "isMatched", card.isMatched);
  });
  setGameOver(game.isOver);
}

async function reloadGame() {
  try {
    const games = await read("games?fields=id");
    const game = await readGame(games.json.games);
    drawGame(game ? game.json : null);
  } catch (_) {
    // The feed's own recovery reads everything again if the server is gone.
  }
}

function setCard(cardId, field, on) {
  const button = page.game && page.game.cards.get(cardId);
  if (!button) return;
  if (field === "isFaceUp") button.dataset.faceUp = String(on);
  else if (field === "isMatched") button.dataset.matched = String(on);
  else return;
  const shown = button.dataset.faceUp === "true" || button.dataset.matched === "true";
  button.textContent = shown ? button.dataset.content : "";
  const state = button.dataset.matched === "true" ? "matched" : shown ? "face up" : "face down";
  button.setAttribute("aria-label", `card ${button.dataset.index}, ${shown ? button.dataset.content + ", " : ""}${state}`);
  showGameState();
}

function setGameOver(over) {
  if (!page.game) return;
  page.game.isOver = over;
  showGameState();
}

function showGameState() {
  const state = $("game-state");
  if (!page.game) {
    state.textContent = "No game yet.";
    state.dataset.matchedPairs = "0";
    return;
  }
  const cards = [...page.game.cards.values()];
  const pairs = cards.filter((card) => card.dataset.matched === "true").length / 2;
  state.dataset.matchedPairs = String(pairs);
  state.dataset.over = String(page.game.isOver);
  state.textContent = page.game.isOver
    ? `All ${pairs} pairs matched: game over.`
    : `Matched ${pairs} of ${cards.length / 2} pairs.`;
}

async function newGame(event) {
  event.preventDefault();
  await write("POST", "games", { pairs: Number($("game-pairs").value) }, "deal a new game");
}

// MARK: - Staggered posts

function postsPath() {
  return `posts/staggered?columns=${POST_COLUMNS}&layout=${page.postsLayout}`;
}

/// Draws the columns as the server dealt them. A post is a tile as tall as
/// its height (scaled) showing its image, cut to fit; an image that cannot
/// load (missing, or on another server, which the page's
/// Content-Security-Policy refuses) leaves the tile a coloured box with the
/// height and the image's file name.
function drawPosts(columns) {
  const wall = $("posts");
  wall.dataset.layout = page.postsLayout;
  wall.replaceChildren(...columns.map((posts, index) => {
    const column = document.createElement("div");
    column.className = "post-column";
    column.dataset.column = String(index);
    column.setAttribute("aria-label", `column ${index + 1}`);
    column.append(...posts.map(drawPost));
    return column;
  }));
}

function drawPost(post) {
  const tile = document.createElement("div");
  tile.className = "post";
  tile.dataset.postId = post.id;
  tile.dataset.height = String(post.height);
  tile.style.height = `${Math.min(POST_MAX_PX, Math.max(18, post.height * POST_SCALE))}px`;
  tile.title = post.imageURL;
  const label = `${post.height} · ${post.imageURL.replace(/^.*\//, "") || post.imageURL}`;
  // The posts are drawn anew on every read: an image seen before is shown
  // at once, and one that could not load is not asked for again.
  const known = page.postImages.get(post.imageURL);
  if (known === "failed") {
    tile.dataset.image = "failed";
    tile.textContent = label;
    return tile;
  }
  const image = document.createElement("img");
  image.alt = label;
  image.decoding = "async";
  tile.dataset.image = known ?? "loading";
  image.addEventListener("load", () => {
    page.postImages.set(post.imageURL, "loaded");
    tile.dataset.image = "loaded";
  }, { once: true });
  image.addEventListener("error", () => {
    page.postImages.set(post.imageURL, "failed");
    tile.dataset.image = "failed";
    tile.replaceChildren(label);
  }, { once: true });
  image.src = post.imageURL;
  tile.append(image);
  return tile;
}

/// Reads the staggered columns again (after a post came or went, or the
/// layout changed). Only the newest read is drawn.
async function refreshPosts() {
  if (!page.observer) return;
  const number = ++page.postsRead;
  let response;
  try {
    response = await api("GET", postsPath(), { observe: true });
  } catch (_) {
    return;  // the feed's own recovery reads everything again
  }
  if (number === page.postsRead && response.status === 200) drawPosts(response.json.columns);
}

async function addPost(event) {
  event.preventDefault();
  const body = { imageURL: $("post-url").value.trim(), height: Number($("post-height").value) };
  await write("POST", "posts", body, "add a post");
}

function chooseLayout(event) {
  page.postsLayout = event.target.value;
  refreshPosts();
}

// MARK: - Filtered views: query reads kept exact

/// A view is one query read (SPEC §3d) with the page's observer: a
/// collection, its conditions and sort, and the copy of what the read
/// showed. The feed brings the changes that keep that copy equal to a fresh
/// read, each carrying the read's canonical `query`: an `insert` of an
/// element that comes to match in the window, a `remove` of one that stops
/// matching or leaves it, a `set` of a shown field of one that stays.
function makeView(name, { collection, list, conditions, sort = null, limit = null, draw }) {
  return {
    name, collection, list, conditions, sort, limit, draw,
    query: null,       // the canonical query of the copy; null until read
    cursor: null,      // Observation-Cursor of its read: changes at or before it are in it
    elements: [],      // the copy, in the query's order
    bound: null,       // the last element of the window when more follow (a limited read), else null: open
    read: 0,           // numbers the reads, so a late answer is dropped
    reading: false,
    changed: false,    // changed since last drawn
    entered: new Set(),// ids that came in since last drawn, marked for a moment
  };
}

/// The conditions and sort in canonical order (conditions in the model's
/// field order, then the sort): the `query` member of the changes the read
/// brings.
function viewQuery(view) {
  const parts = view.conditions().map(([field, expression]) => `${field}=${expression}`);
  if (view.sort) parts.push(`sort=${view.sort}`);
  return parts.join("&");
}

function viewPath(view) {
  const parts = view.conditions().map(([field, expression]) => `${field}=${enc(expression)}`);
  if (view.sort) parts.push(`sort=${enc(view.sort)}`);
  if (view.limit) parts.push(`limit=${view.limit}`);
  return `${view.collection}?${parts.join("&")}`;
}

/// Orders two values of the sort field ascending; null after every value.
function compareValues(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/// Where an element that came in goes in the copy. With a sort: by its
/// value, and among equal values where a new element goes (positions only
/// grow: last ascending, first descending). Without one, by position,
/// which the page takes from the id (ids are made in creation order).
function placeOf(view, element) {
  const elements = view.elements;
  if (!view.sort) {
    const index = elements.findIndex((other) => other.id > element.id);
    return index < 0 ? elements.length : index;
  }
  const descending = view.sort.startsWith("-");
  const field = descending ? view.sort.slice(1) : view.sort;
  const index = elements.findIndex((other) => {
    const order = compareValues(element[field], other[field]);
    return descending ? order >= 0 : order < 0;
  });
  return index < 0 ? elements.length : index;
}

/// Whether a new element falls in the copy's window: before its bound, or
/// anywhere when the window is open at the end.
function inWindow(view, element) {
  if (!view.bound || !view.sort) return true;
  const descending = view.sort.startsWith("-");
  const field = descending ? view.sort.slice(1) : view.sort;
  const order = compareValues(element[field], view.bound[field]);
  return descending ? order >= 0 : order < 0;
}

/// Takes a view's read: the copy is what it showed, and the changes of its
/// query that came through the feed after the read's cursor while it was on
/// its way are applied to it.
function takeViewRead(view, query, response) {
  view.query = query;
  view.cursor = response.cursor;
  view.elements = response.json[view.list].slice();
  // A limited read with a Link is closed at its last element: an element
  // that would come after it is outside the window, and not heard.
  view.bound = nextLink(response.link) ? view.elements[view.elements.length - 1] || null : null;
  view.entered.clear();
  for (const change of page.queryLog) {
    if (change.query === query && change.seq > view.cursor) applyToView(view, change);
  }
  drawView(view);
}

/// A view's read with the observer: `{view, query, response}`, or
/// `{view, query, error}` when the server refuses the query (400) or the
/// observer's reads are full (422), which leaves the rest of the page be.
/// Anything else (the observer gone, the server away) rejects.
async function readViewAnswer(view) {
  const query = viewQuery(view);
  try {
    return { view, query, response: await read(viewPath(view)) };
  } catch (error) {
    if (error instanceof Answer && (error.status === 400 || error.status === 422)) return { view, query, error };
    throw error;
  }
}

/// A view whose query the server refused: no copy, and the reason shown.
function refuseView(view, error) {
  view.query = null;
  view.cursor = null;
  view.elements = [];
  view.bound = null;
  drawView(view);
  showMessage(`Could not read ${view.name}: ${error.message}`, String(error.status));
}

/// Reads a view with the observer (a new donut chosen, after a repair, or
/// to refill a limited view that lost an element) and draws it.
async function readView(view) {
  if (!page.observer) return;
  const number = ++view.read;
  view.reading = true;
  try {
    const { query, response, error } = await readViewAnswer(view);
    if (number !== view.read) return;
    if (response) takeViewRead(view, query, response);
    else refuseView(view, error);
  } catch (_) {
    // The feed's own recovery reads everything again if the server is gone.
  } finally {
    if (number === view.read) view.reading = false;
  }
}

function rereadViews() {
  for (const view of Object.values(page.views)) readView(view);
}

/// A change that carries a `query`: applied to the view of that query (a
/// view whose query the page no longer shows ignores it), and kept a while
/// to be applied after a read of that query still on its way.
function applyQueryChange(change) {
  logChange(change);
  if (change.op === "repair") return;  // the views are read again (see receive)
  page.queryLog.push(change);
  if (page.queryLog.length > QUERY_LOG_LENGTH) page.queryLog.splice(0, page.queryLog.length - QUERY_LOG_LENGTH);
  for (const view of Object.values(page.views)) {
    if (view.query === change.query) applyToView(view, change);
  }
}

/// insert: the element goes into the copy at its place; remove: the
/// element of `old.id` goes; set: the field of the element whose path
/// prefixes the change's path is set. A limited view keeps no more than
/// its limit: the last goes and the window ends at the new last; one that
/// lost an element while more follow is read again to be refilled.
function applyToView(view, change) {
  if (view.cursor === null || (typeof change.seq === "number" && change.seq <= view.cursor)) return;
  const elements = view.elements;
  if (change.op === "insert") {
    const element = change.new;
    if (elements.some((other) => other.id === element.id) || !inWindow(view, element)) return;
    elements.splice(placeOf(view, element), 0, element);
    view.entered.add(element.id);
    if (view.limit && elements.length > view.limit) {
      elements.length = view.limit;
      view.bound = elements[elements.length - 1];
    }
  } else if (change.op === "remove") {
    const index = elements.findIndex((other) => other.id === change.old.id);
    if (index < 0) return;
    elements.splice(index, 1);
    if (view.limit && view.bound && elements.length < view.limit) readView(view);
  } else if (change.op === "set") {
    const prefix = `/${view.collection}/`;
    if (!change.path.startsWith(prefix)) return;
    const [id, ...field] = change.path.slice(prefix.length).split("/");
    const element = elements.find((other) => other.id === decodeURIComponent(id));
    if (!element || field.length === 0) return;
    let target = element;
    for (const key of field.slice(0, -1)) target = target[key] = { ...target[key] };
    target[field[field.length - 1]] = change.new;
  } else {
    return;
  }
  view.changed = true;
}

function drawView(view) {
  view.changed = false;
  view.draw(view);
  view.entered.clear();
}

/// A list item for each element of a view, marked with its id and, for a
/// moment, as entered when it came through the feed.
function drawList(view, id, attribute, text) {
  const list = $(id);
  list.dataset.query = view.query || "";
  list.dataset.cursor = String(view.cursor);
  list.replaceChildren(...view.elements.map((element) => {
    const item = document.createElement("li");
    item.dataset[attribute] = element.id;
    item.textContent = text(element);
    if (view.entered.has(element.id)) item.className = "entered";
    return item;
  }));
}

function drawQueryOrders(view) {
  drawList(view, "query-orders", "orderId", (order) => `${order.quantity} × ${donutName(order.donutId)}`);
  const state = $("query-orders-state");
  const chosen = /(?:^|&)donutId=eq\.([^&]*)/.exec(view.query || "");
  const name = donutName(chosen ? chosen[1] : page.queryDonut);
  const count = view.elements.length;
  state.textContent = count === 0 ? `No orders of ${name} yet.`
    : view.bound ? `The ${count} biggest orders of ${name}, of more`
    : count === 1 ? `The only order of ${name}` : `All ${count} orders of ${name}, biggest first`;
}

function drawQueryJobs(id) {
  return (view) => {
    // Newest first, as the jobs above.
    const newestFirst = { ...view, elements: [...view.elements].reverse() };
    drawList(newestFirst, id, "jobId", (job) => `job …${job.id.slice(-4)}  ${job.progress.current} / ${job.progress.total}`);
  };
}

function drawQueryTallest(view) {
  drawList(view, "query-tallest", "postId", (post) => `${post.height} · ${post.imageURL.replace(/^.*\//, "") || post.imageURL}`);
}

function donutName(id) {
  return page.donuts.get(id) || "a donut no longer on the menu";
}

/// The donut whose orders are shown: the one chosen, or the first on the menu.
function chooseQueryDonut() {
  const select = $("query-donut");
  if (page.queryDonut && page.donuts.has(page.queryDonut)) {
    select.value = page.queryDonut;
  } else {
    page.queryDonut = page.donuts.keys().next().value || null;
    if (page.queryDonut) select.value = page.queryDonut;
  }
}

function queryDonutChosen(event) {
  page.queryDonut = event.target.value;
  readView(page.views.orders);
}

/// After a change of the menu: the view follows the donut chosen, and one
/// removed from the menu gives way to the first.
function menuChanged() {
  const before = page.queryDonut;
  chooseQueryDonut();
  const view = page.views.orders;
  if (page.queryDonut !== before && page.queryDonut && view.query !== null) readView(view);
  else if (view.query !== null) drawView(view);
}

// MARK: - Writes, tokens and messages

/// A write the user asked for. Its effect arrives through the change feed,
/// like everyone else's; only a refusal is shown here. Returns the answer,
/// or null when the server cannot be reached.
async function write(method, path, body, what) {
  let response;
  try {
    response = await api(method, path, { body });
  } catch (_) {
    showMessage(`Could not ${what}: the server cannot be reached.`, "network");
    return null;
  }
  const detail = response.json && response.json.detail ? response.json.detail : "";
  if (response.status === 401) {
    denyWrites();
    showMessage(`Could not ${what}: 401 — ${detail || "a token is needed"}`, "401");
  } else if (response.status >= 300) {
    showMessage(`Could not ${what}: ${response.status} — ${detail}`, String(response.status));
  } else {
    showMessage("");
  }
  return response;
}

/// A button that writes: disabled while the page may not write.
function writeButton(text, label, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "write";
  button.textContent = text;
  if (label) button.setAttribute("aria-label", label);
  button.disabled = page.writeDenied;
  button.addEventListener("click", onClick);
  return button;
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
  const live = page.feed === "stream" ? "live — streaming" : "live — long-polling";
  status.textContent = text || (state === "live" ? live : state);
  document.body.dataset.connection = state;
  document.body.dataset.feed = page.feed || "";
}

function showObserver() {
  const feed = page.feed === "stream" ? "stream" : page.feed === "poll" ? "long-poll" : "no feed yet";
  $("observer-info").textContent = `observer ${page.observer} · cursor ${page.cursor} · ${feed}`;
  document.body.dataset.observer = page.observer || "";
  document.body.dataset.cursor = String(page.cursor);
}

// MARK: - Start

function start() {
  page.views = {
    orders: makeView("the biggest orders", {
      collection: "truck/orders", list: "orders", sort: "-quantity", limit: QUERY_ORDERS_SHOWN,
      conditions: () => [["donutId", `eq.${page.queryDonut || ""}`]], draw: drawQueryOrders,
    }),
    running: makeView("the jobs running", {
      collection: "jobs", list: "jobs", conditions: () => [["isComplete", "eq.false"]], draw: drawQueryJobs("query-running"),
    }),
    finished: makeView("the jobs finished", {
      collection: "jobs", list: "jobs", conditions: () => [["isComplete", "eq.true"]], draw: drawQueryJobs("query-finished"),
    }),
    tallest: makeView("the tallest posts", {
      collection: "posts", list: "posts", sort: "-height", limit: TALLEST_SHOWN, conditions: () => [], draw: drawQueryTallest,
    }),
  };
  // A token given as #token=… is kept for this tab and taken off the
  // address bar, so it is not bookmarked or shared by accident.
  // #feed=poll keeps the page on long-polls, even where a stream would open.
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (match) sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  page.onlyPoll = /(?:^#|&)feed=poll(?:&|$)/.test(location.hash);
  if (match) history.replaceState(null, "", location.pathname + location.search + (page.onlyPoll ? "#feed=poll" : ""));
  page.token = sessionStorage.getItem(TOKEN_KEY) || "";
  showAccess();

  $("random").addEventListener("click", randomDot);
  $("order-form").addEventListener("submit", addOrder);
  $("orders-older").addEventListener("click", olderOrders);
  $("orders-newer").addEventListener("click", newerOrders);
  $("orders-newest").addEventListener("click", newestOrders);
  $("login-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", signOut);
  $("job-form").addEventListener("submit", (event) => {
    event.preventDefault();
    startJob(true);
  });
  $("start-client-job").addEventListener("click", () => startJob(false));
  $("game-form").addEventListener("submit", newGame);
  $("post-form").addEventListener("submit", addPost);
  $("query-donut").addEventListener("change", queryDonutChosen);
  // A post needs an http(s) URL: one of the images built in with the page.
  $("post-url").value = new URL("assets/post-lake.svg", location.href).href;
  for (const radio of document.querySelectorAll('#posts-layout input[name="layout"]')) {
    radio.addEventListener("change", chooseLayout);
  }
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    useToken($("token").value.trim());
  });
  $("forget-token").addEventListener("click", () => useToken(""));
  // Leaving the page ends its stream and frees its observer; a page
  // restored later makes a new one.
  window.addEventListener("pagehide", () => {
    if (page.streamAbort) page.streamAbort.abort();
    if (!page.observer) return;
    api("DELETE", "observer", { observe: true, keepalive: true }).catch(() => {});
    page.observer = null;
  });
  run();
}

start();
