"""Precision checker: a randomized, model-based test of observable-server.

The promise of the service is precision: an observer hears every change to
what it read, once, in order, with the right values, and nothing else, across
restarts, replays and instances (SPEC §2, §2a, §3a, §5). This checker checks
that promise the way Jepsen's checkers or FoundationDB's simulation do: it
drives real server processes with random operations chosen from a seed, keeps
a reference model of everything, and compares every answer with the model.

Run it (Python 3.11, standard library only; the server binary must be built):

    scripts/precision-check.py --mode sequential            # CI scale
    scripts/precision-check.py --mode concurrent
    scripts/with-postgres scripts/precision-check.py --mode cluster
    scripts/precision-check.py --planted-faults             # each fault is caught
    scripts/precision-check.py --mode sequential --seed 42  # replay a run
    scripts/precision-check --full      # every mode at full scale, see below
    scripts/precision-check --ci        # every mode at CI scale + planted faults

Full scale (what the wrapper's --full runs):

    scripts/precision-check.py --mode sequential --ops 100000 --observers 1000 --restarts 6
    scripts/precision-check.py --mode concurrent --ops 100000 --observers 1000 --restarts 6
    scripts/with-postgres scripts/precision-check.py --mode cluster --ops 100000 --observers 1000 --restarts 6

It prints `seed: N` first; `--seed N` replays the same choices (the server's
own randomness, `POST /grid/random` and ids, is learned from its answers).

What the model holds
--------------------
* The state of every seed system: the truck (name, donuts, orders, computed
  orderCount), the account's userName, the grid (rows of dots, their two
  flags), posts, client-reported jobs (progress, isComplete) and memory games
  (cards by the lecture's `choose` rules, computed isOver).
* The change log, learned from an "all-seeing" observer that reads every
  resource at start (and so, through inserts, every element made later) and
  polls with an explicit `since`. Every write's changes are predicted by the
  model (path, op, old, new; nothing for no-ops and refused writes; the
  computed orderCount when it moves; tap as two transactions) and compared
  with what the log shows; the seqs come from the log, never guessed.
  Transactions (for `limit` and for stream events) are the model's: each
  request's changes are one transaction, a tap two.
* Per observer: every property key it read and the seq from which it
  counts (the Observation-Cursor of the answer that first read it), and every
  *shape* it read (SPEC §3b, /work/runs/shapes-semantics.md): a read of a
  collection (`/truck/donuts`, `/truck/orders`, `/posts`, `/jobs`, `/games`,
  the two shown in `GET /truck`, a game's `cards`), whole or a page, is one
  shape: the collection, the fields shown (`fields=`; None = all) and the
  window, kept as a range of creation-order indexes (the model knows each
  element's place in creation order, a deleted one keeps its place; the
  server's positions are needed only for `GET /observers/{id}` and are
  learned from the Links). Window of a page: asc from the element after the
  cursor's element to the last one shown, open at the far end when no Link
  came; desc the mirror image; an empty page is open at its far end. A
  shape's reader hears the insert of an element landing in the window, the
  remove of one in it, and a set of a shown field of one in it, or of any
  field of one made after the read (its insert showed every field); a
  card's change counts as a change of its game's field `cards`; computed
  fields (isComplete, isOver) are fields. The grid stays per-property keys:
  a row's insert makes its dots read by readers of `/grid/rows` (SPEC §3a).
  A remove reaches key readers of any property of the element too (and
  readers of a collection inside it: a game's cards). `DELETE
  /observers/{id}/reads` forgets everything, and later polls (replays too)
  no longer deliver what was forgotten. The implicit cursor is the cursor
  last answered to the observer by any poll, with or without `since`.

* Per observer, every *query shape* it read (SPEC §3d, precision/queries.py):
  a filtered or sorted read of a top-level collection (orders by donutId
  and quantity, donuts by dough, glaze and topping, posts by height, jobs
  by isComplete, games by isOver) is the collection, its conditions, its
  sort, the fields shown and the window, a range of sort keys (value,
  creation index) fixed at the read: from just past the `after` element
  (open without `after`) to the last element shown (open without a
  Link); descending the mirror image. The log keeps every version of every
  element, so what a transaction does to a query shape is known for any
  range a poll asks: an element in the shape before the transaction and
  not after is a `remove` (old: as it was, fields shown), the reverse an
  `insert` (new: as it is), in both each `set` of a shown field; each
  carries the canonical query in `query`. Changes that reach the observer
  through plain reads carry no `query`. Each query shape also keeps the
  reader's *copy*: the elements the read showed, with every delivered
  change carrying its query applied.

What each answer is checked for
-------------------------------
* Reads (every resource, with and without `fields=`, with and without an
  observer): body equals the model, `Observation-Cursor` is the newest seq,
  unknown fields are 400. `HEAD` tracks nothing and sends the cursor.
  `If-None-Match` with the tag of an unchanged representation is 304 and,
  as docs/API.md documents, still tracks the read.
* Pages: every collection read with random `limit` (1…4, so pages are
  small and many), `order=asc|desc`, `after` from a pool of cursors the
  Links gave (each remembered with the element that ended its page; also
  `after=0`), and `fields=`; `GET /truck` with `orders.limit/after/order`
  and `donuts.*`. The body must hold the right elements in the right order;
  `Link: <…>; rel="next"` (with `title=` in the truck) must come exactly
  when more follow, name the collection, the same limit, order and fields,
  and an `after` that is a position growing with creation order; the Link
  is followed (up to four hops) and must give the next page. Bad `limit`,
  `after`, `order` (and `orders.limit` …) are 400. Deletes often take the
  newest or oldest element, so inserts and removes land inside and outside
  windows.
* Query reads: random conditions on every queryable field (eq, neq, lt,
  lte, gt, gte, in with quoted items, is.null, not.is.null; several; a
  field repeated for a range; values percent-encoded wholly or in part),
  a random sort either way or none (`order=desc` then), `limit` or none,
  `fields=`; the body is the model's, the Link comes exactly when more
  follow with the same conditions, sort, limit and fields, and is followed
  (its `after` token). Malformed queries (no such field, a field not
  queryable, an unknown operator, a value of the wrong type, a malformed
  `in` list or sort, a repeated sort, `order` with `sort`, a bad `after`
  token) are 400
  problem+json naming the field, and track nothing. Every poll answer is
  compared with the query changes the model predicts (missed, spurious,
  repeated, wrong-value as for other changes), judged per write: an
  element the write sets fields of is said, to each query, one insert (the
  element after the write) or one remove (the element before it) at its
  last change in the write when it comes or goes, each set of a shown field
  when it stays, nothing otherwise (a job completing is one remove for
  `isComplete=eq.false`, one insert for `isComplete=eq.true`); after each
  poll each copy the answer moves must equal the model's fresh read of the
  query over the window at the answer's cursor, or just before the write
  the cursor lies inside (*query-copy*), and at the
  end and after restarts some observers are caught up and their copies
  compared with a fresh read from the server, restricted to the window.
  `GET /observers/{id}` lists each query shape (collection, fields, query).
  Four counts hold the server to the contract where a copy alone would
  not notice: *query-text* (the `query` member is not the canonical text:
  conditions by field name, values written canonically, `in` items quoted
  only where they must be; once per pair of texts), *query-old* (a
  remove's `old` is not the element as it was before the write; once per
  seq and query), *query-noop* (an insert and a remove of one element said
  to one query in one transaction: the copy is left as it was, and the
  insert showed the element half-way through a write), *query-order* (an
  element leaving one page of a query for another page of the same query:
  the insert said before the remove at one seq, so a client keeping one
  copy per query loses it).
  `--no-queries` leaves them out (a server without §3d).
* Writes of every kind, valid, no-op and refused (400/404/412/422): status,
  answer body, and exactly the predicted changes in the log (a refused or
  no-op write commits nothing).
* Polls of every kind: implicit (no `since`), explicit, replays from older
  cursors and from 0 (the range (since, cursor] must give the same answer
  however often it is asked), `limit` (never splitting a transaction),
  `coalesce=true` (one change per path, first old, last new, at the last
  seq; a path back where it started is left out), `Prefer: wait=N`.
  Every answer is compared with the changes the model says the observer
  receives in (since, cursor]: a change it should have had and did not is
  *missed*; one for a path it never read (or forgot) is *spurious*; one at or
  before the cursor it polled from, which it had been told already, is
  *repeated*; a right seq with another path/op/old/new is *wrong-value*;
  seqs not strictly increasing are *out-of-order*. The cursor must cover the
  last change's transaction, not stop short when the answer is under `limit`,
  and not pass the newest seq.
* Long-polls: one parked for an observer must wake promptly (< 1 s) when a
  change it reads commits (else *late-wake*), and must not answer before its
  timeout when the commit is one it does not read (else *early-wake*).
  Displacement: a second poll answers the first at once, empty, with its
  cursor.
* Streams (`Accept: text/event-stream`), started with `since`, with
  `Last-Event-ID` (resuming a previous stream of the observer, across restarts
  too) or at the observer's cursor: one event per transaction that concerns
  the observer, `id` the seq of the event's last change, data equal to what a
  poll answers for that transaction.
* Inspections: `GET /observers/{id}`: `reads` lists every key the model has
  and each shape's collection, every shown field (all fields of elements made
  after the read) of every live element in each window of the top-level
  collections, and nothing outside the keys and the shapes' collections;
  `shapes` lists exactly the model's shapes (collection, fields, from,
  through in positions; a shape read again is kept once); and the model's
  implicit cursor. Unknown and deleted observers are 404; bad
  poll parameters are 400.
* Restarts (`--restarts`), alternately SIGTERM (must exit 0) and kill -9:
  afterwards the whole state read again equals the model (every acknowledged
  write present), every observer's reads are unchanged, and after SIGTERM
  every implicit cursor is exactly the one last answered. After kill -9 the
  documented allowance (docs: an implicit cursor may be up to about a second
  old) is granted precisely: the server's cursor must lie between the cursor
  answered at least 1.5 s before the kill and the last one answered; the model
  then adopts the server's value (a client that leaves out `since` may hear
  up to a second of changes again, which is the documented allowance).

Modes
-----
* `sequential`: one client, one server on a temporary SQLite file.
* `concurrent`: `--writers` writer threads (default 8) and `--readers`
  reader/poller threads (default 8) on one server, the group commit in play;
  each kind gets half of `--ops`. Each writer owns its own objects (donuts,
  its orders, dots, posts, jobs, games), so the model predicts their changes
  exactly whatever the interleaving; shared paths get unique values (truck
  name, userName) or are derived (orderCount). The full log read by the
  all-seeing observer is the oracle for order and seqs: every acknowledged
  write must be in it exactly once with the predicted values, each
  transaction at consecutive seqs; no change may come from nowhere; the log
  replayed through the model must show every `old` as the value before, and
  end in the state the server then serves. Each reader owns its observers
  and records every read (keys and shapes from the answer, from its cursor),
  every page it reads (limit, order, after from its own pool of Links,
  fields; the window is computed from the log's creation order once the run
  is over), every query read (its body and Link checked against the log's
  versions at its cursor, its window the keys then) and every poll; once the run is over, every poll answer is checked against the log
  as in sequential mode, and every long-poll that answered empty before its
  timeout is an early wake. Restarts pause every thread first (no write in
  flight), then check the cursors of every observer as above; kill -9 in the
  middle of writes is left to scripts/crash-test.py.
* `cluster`: three instances on one PostgreSQL database (created by the
  checker at OBSERVABLE_TEST_POSTGRES_ADMIN_URL, which scripts/with-postgres
  exports, or given with --postgres-url), each request sent to one of them at
  random (no stickiness: a poll through A, the next through B), long-polls
  parked on one instance woken by writes through another, and restarts of
  one instance at a time.

`--planted-faults` runs a short sequential run (cluster for the cursor fault
when PostgreSQL is at hand) for each value of OBSERVABLE_PLANTED_FAULT the
server honours (drop-implied-reads, forget-cursor, wake-every-poll,
ignore-shape-fields, narrow-page-window, query-misses-remove: a write that
moves an element out of a query's filter delivers no remove; the faults of
plain reads without query reads, the mix they were tuned with), prints which
checks caught each, and exits 1 if one goes unnoticed.

Output: each failure with the observer, the reads that matter, the request
and the change; then a table of counts. Exit 1 if any count is non-zero.

Streams and the implicit cursor: the documents do not say what a stream
does to the implicit cursor, so after each stream test the checker closes
it, ends it on the server with a poll (a poll ends the observer's stream),
and adopts the cursor `GET /observers/{id}` then shows. (A server learns
that a client closed a stream only when a write to it fails, and may count
the events written meanwhile as answered.)

Not checked (yet): server-advanced jobs (step/intervalMs), retention and
`repair=true` (the checker keeps every change: --retain-changes is raised),
TTL expiry, pages of a game's cards and of the grid, If-Match with a correct
tag on DELETE, tokens and CORS; in concurrent mode, reads lists (inserts race
with inspections), displacement, streams and bodies of reads (the state at a
read's cursor is not kept: a page is checked only to be in creation order past
its cursor, and full when it has a Link; its window comes from the log's
creation order); kill -9 with writes in flight.
"""
