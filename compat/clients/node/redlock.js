// node-redlock check: node redlock.js PORT [PORT...]
//
// Runs redlock (npm, pinned in package-lock.json) with ioredis, unchanged,
// against the servers on 127.0.0.1:PORT (a real Redis, or redamo instances
// sharing one table). Every Redlock instance is given ONE client, as
// README's "Locks and Redlock" recommends: several redamo instances on one
// table are one lock service, not independent Redlock nodes. Workers are
// spread over the ports.
//
// Checks, failing with exit status 1 on the first surprise:
//   - acquire / extend (the key's PTTL grows) / release;
//   - mutual exclusion: workers change a counter inside the lock by GET,
//     sleep 1 ms, SET; no update is lost and no two workers are ever inside
//     at once;
//   - releasing a lock held by another value, or an expired one, rejects
//     with ExecutionError, each attempt voted against by a
//     ResourceLockedError; the owner's lock is untouched;
//   - a lock whose holder vanished (never released) frees after its TTL.
// On redamo (INFO redamo has store rows) it also measures the DynamoDB
// requests per acquire / extend / release on the first port.
//
// Prints one JSON summary line on stdout; the Go test
// (integration/redlock_test.go) checks it again.
//
// Environment: REDLOCK_ACQUISITIONS (default 90), REDLOCK_WORKERS_PER_PORT
// (default 2).
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");
const redlockModule = require("redlock");
const Redlock = redlockModule.default;
const { ExecutionError, ResourceLockedError, Lock } = redlockModule;

const ports = process.argv.slice(2).map(Number);
if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p <= 0)) {
  console.error("usage: node redlock.js PORT [PORT...]");
  process.exit(2);
}
const acquisitions = Number(process.env.REDLOCK_ACQUISITIONS || 90);
const workersPerPort = Number(process.env.REDLOCK_WORKERS_PER_PORT || 2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const opened = [];

function client(port) {
  const c = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1 });
  c.on("error", () => {}); // surfaced through rejected commands
  opened.push(c);
  return c;
}

// A Redlock given one client (one address), retrying often enough for a
// few workers to share one lock without waiting seconds.
function redlock(c, settings) {
  return new Redlock([c], { retryCount: 200, retryDelay: 20, retryJitter: 15, ...settings });
}

// expectExecutionError checks that p rejects the way redlock reports a
// quorum voting against: ExecutionError, each attempt's vote lost to a
// ResourceLockedError.
async function expectExecutionError(p, attempts, what) {
  let err;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof ExecutionError, `${what}: want ExecutionError, got ${err}`);
  assert.equal(err.message, "The operation was unable to achieve a quorum during its retry window.", what);
  assert.equal(err.attempts.length, attempts, `${what}: attempts`);
  const reasons = [];
  for (const a of err.attempts) {
    const stats = await a;
    assert.equal(stats.votesFor.size, 0, `${what}: votes for`);
    for (const e of stats.votesAgainst.values()) {
      assert.ok(e instanceof ResourceLockedError, `${what}: want ResourceLockedError, got ${e}`);
      reasons.push(e.message);
    }
  }
  assert.deepEqual(reasons, Array(attempts).fill("The operation was applied to: 0 of the 1 requested resources."), what);
  return { name: err.name, message: err.message, attempts: err.attempts.length, reason: reasons[0] };
}

// mutualExclusion spreads workers over the ports, each with its own client
// and Redlock, and runs `acquisitions` locked read-sleep-write increments.
async function mutualExclusion() {
  const key = "redlock:mutex";
  const counterKey = "redlock:counter";
  let budget = acquisitions;
  let done = 0;
  let inside = 0;
  let overlaps = 0;
  let failedAcquires = 0;
  const deadline = Date.now() + 120000;
  const worker = async (port) => {
    const c = client(port);
    const rl = redlock(c);
    while (budget > 0) {
      budget--;
      let lock;
      for (;;) {
        try {
          lock = await rl.acquire([key], 10000);
          break;
        } catch (e) {
          if (!(e instanceof ExecutionError)) throw e;
          failedAcquires++;
          if (Date.now() > deadline) throw new Error(`no lock after ${failedAcquires} failed acquires: ${e}`);
        }
      }
      inside++;
      if (inside > 1) overlaps++;
      const v = Number((await c.get(counterKey)) ?? 0);
      await sleep(1);
      await c.set(counterKey, String(v + 1));
      inside--;
      const released = await rl.release(lock);
      assert.ok(released.attempts.length >= 1);
      done++;
    }
  };
  const start = Date.now();
  const ws = [];
  for (const port of ports) for (let i = 0; i < workersPerPort; i++) ws.push(worker(port));
  await Promise.all(ws);
  const ms = Date.now() - start;
  const counter = Number(await opened[0].get(counterKey));
  assert.equal(overlaps, 0, "two workers inside the lock at once");
  assert.equal(counter, done, "lost updates: the counter differs from the acquisitions");
  assert.equal(done, acquisitions);
  for (const port of ports) {
    assert.equal(Number(await client(port).get(counterKey)), done, `counter through port ${port}`);
  }
  return { workers: ws.length, acquisitions: done, counter, overlaps, failedAcquires, ms };
}

async function extend() {
  const c = client(ports[0]);
  const other = client(ports[ports.length - 1]);
  const rl = redlock(c);
  const lock = await rl.acquire(["redlock:extend"], 2000);
  await sleep(700);
  const pttlBefore = await other.pttl("redlock:extend");
  assert.ok(pttlBefore > 0 && pttlBefore <= 1300, `PTTL before extend ${pttlBefore}`);
  const extended = await lock.extend(3000);
  const pttlAfter = await other.pttl("redlock:extend");
  assert.ok(pttlAfter > 2000 && pttlAfter <= 3000, `PTTL after extend ${pttlAfter}`);
  assert.equal(extended.value, lock.value);
  assert.ok(extended.expiration > Date.now() + 2000, "the new lock's expiration moved");
  assert.equal(lock.expiration, 0, "extend invalidates the old Lock object");
  assert.equal(await other.get("redlock:extend"), lock.value, "the owner's value is kept");
  // The invalidated Lock object cannot be extended again (client side).
  let err;
  await lock.extend(1000).catch((e) => (err = e));
  assert.ok(err instanceof ExecutionError && err.message === "Cannot extend an already-expired lock.", `${err}`);
  await extended.release();
  assert.equal(await other.exists("redlock:extend"), 0, "released");
  return { pttlBefore, pttlAfter };
}

async function foreignAndExpiredRelease() {
  const owner = redlock(client(ports[0]));
  const otherClient = client(ports[ports.length - 1]);
  const other = redlock(otherClient);
  const lock = await owner.acquire(["redlock:foreign"], 5000);
  // Another owner's value on the same resource, through another address.
  const fake = new Lock(other, ["redlock:foreign"], "not-the-owner", [], Date.now() + 5000);
  const foreign = await expectExecutionError(
    other.release(fake, { retryCount: 1, retryDelay: 10, retryJitter: 0 }),
    2,
    "release of a foreign lock",
  );
  assert.equal(await otherClient.get("redlock:foreign"), lock.value, "the owner's lock is untouched");
  const pttl = await otherClient.pttl("redlock:foreign");
  assert.ok(pttl > 3000, `the owner's expiry is untouched: ${pttl}`);
  // Extending someone else's lock fails the same way (release zeroed the
  // first fake Lock's expiration: a fresh one).
  const fake2 = new Lock(other, ["redlock:foreign"], "not-the-owner", [], Date.now() + 5000);
  const foreignExtend = await expectExecutionError(
    other.extend(fake2, 5000, { retryCount: 0 }),
    1,
    "extend of a foreign lock",
  );
  await lock.release();
  assert.equal(await otherClient.exists("redlock:foreign"), 0, "the owner released");

  const short = await owner.acquire(["redlock:expired"], 300);
  await sleep(500);
  assert.equal(await otherClient.exists("redlock:expired"), 0, "expired");
  const expired = await expectExecutionError(
    owner.release(short, { retryCount: 0 }),
    1,
    "release of an expired lock",
  );
  return { foreign, foreignExtend, expired };
}

async function vanishedHolder() {
  const holderClient = client(ports[0]);
  const holder = redlock(holderClient);
  const contender = redlock(client(ports[ports.length - 1]), { retryDelay: 25, retryJitter: 10 });
  const lock = await holder.acquire(["redlock:vanish"], 500);
  const acquiredAt = Date.now();
  // The holder vanishes: it never releases, and its connection goes away.
  holderClient.disconnect();
  let heldWhileAlive = null;
  if (Date.now() - acquiredAt < 300) {
    await expectExecutionError(contender.acquire(["redlock:vanish"], 5000, { retryCount: 0 }), 1, "lock still held");
    heldWhileAlive = true;
  }
  const next = await contender.acquire(["redlock:vanish"], 5000);
  const waitedMs = Date.now() - acquiredAt;
  assert.notEqual(next.value, lock.value);
  assert.ok(waitedMs >= 400, `a 500 ms lock was taken over after ${waitedMs} ms`);
  await next.release();
  return { ttlMs: 500, waitedMs, heldWhileAlive };
}

// storeRequests reads INFO redamo's per-command store rows:
// "store_cmd_evalsha@GetItem" -> requests.
async function storeRequests(c) {
  const info = await c.info("redamo");
  const rows = {};
  for (const line of info.split("\n")) {
    const m = /^store_cmd_([^:]+):requests=(\d+),/.exec(line.trim());
    if (m) rows[m[1]] = Number(m[2]);
  }
  return rows;
}

async function commandCalls(c) {
  const info = await c.info("commandstats");
  const calls = {};
  for (const line of info.split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+),/.exec(line.trim());
    if (m) calls[m[1]] = Number(m[2]);
  }
  return calls;
}

function delta(after, before, n) {
  const per = {};
  let total = 0;
  for (const [k, v] of Object.entries(after)) {
    if (k === "info") continue;
    const d = v - (before[k] || 0);
    if (d > 0) {
      per[k] = d / n;
      total += d;
    }
  }
  return { total: total / n, per };
}

// requestsPerOperation measures acquire, extend and release, each n times,
// sequentially on the first port (the other workers are done).
async function requestsPerOperation() {
  const c = client(ports[0]);
  if (Object.keys(await storeRequests(c)).length === 0) return null; // not redamo
  const rl = redlock(c, { retryCount: 0 });
  const n = 10;
  const keys = Array.from({ length: n }, (_, i) => `redlock:measure:${i}`);
  // Warm up: every script known to this instance already (no NOSCRIPT).
  await (await (await rl.acquire(["redlock:measure:warm"], 5000)).extend(5000)).release();
  const snap = async () => ({ store: await storeRequests(c), calls: await commandCalls(c) });
  const s0 = await snap();
  const locks = [];
  for (const k of keys) locks.push(await rl.acquire([k], 10000));
  const s1 = await snap();
  const extended = [];
  for (const l of locks) extended.push(await l.extend(10000));
  const s2 = await snap();
  for (const l of extended) await l.release();
  const s3 = await snap();
  const op = (a, b) => ({ requests: delta(b.store, a.store, n), commands: delta(b.calls, a.calls, n).per });
  return { n, acquire: op(s0, s1), extend: op(s1, s2), release: op(s2, s3) };
}

// installedVersion reads node_modules/NAME/package.json (redlock's
// "exports" does not expose it to require).
function installedVersion(name) {
  const file = require("node:path").join(__dirname, "node_modules", name, "package.json");
  return JSON.parse(require("node:fs").readFileSync(file, "utf8")).version;
}

async function main() {
  const summary = {
    redlock: installedVersion("redlock"),
    ioredis: installedVersion("ioredis"),
    ports: ports.length,
  };
  // Keys of an earlier run would skew the counter.
  const keys = await client(ports[0]).keys("redlock:*");
  if (keys.length > 0) await client(ports[0]).del(...keys);
  summary.mutex = await mutualExclusion();
  summary.extend = await extend();
  summary.errors = await foreignAndExpiredRelease();
  summary.vanished = await vanishedHolder();
  summary.requests = await requestsPerOperation();
  console.log(JSON.stringify(summary));
}

main()
  .then(
    () => 0,
    (err) => {
      console.error(err && err.stack ? err.stack : err);
      return 1;
    },
  )
  .then((code) => {
    for (const c of opened) c.disconnect();
    process.exit(code);
  });
