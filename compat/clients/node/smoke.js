// ioredis smoke test: node smoke.js PORT. Connects with ioredis's defaults
// (HELLO 3 handshake, INFO readiness check), runs a handful of commands per
// family, a pipeline and error cases, and exits non-zero on the first
// surprise. Run against a real Redis and against redamo by compat/clients_test.go.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");

const port = Number(process.argv[2]);
let checks = 0;
const eq = (got, want, what) => {
  assert.deepStrictEqual(got, want, what);
  checks++;
};
const rejects = async (p, pattern, what) => {
  await assert.rejects(p, pattern, what);
  checks++;
};

async function supports(redis, name) {
  const info = await redis.call("COMMAND", "INFO", name);
  return Array.isArray(info) && info[0] !== null;
}

async function main() {
  const redis = new Redis({
    host: "127.0.0.1",
    port,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on("error", () => {}); // surfaced through rejected commands instead
  await new Promise((resolve, reject) => {
    redis.once("ready", resolve);
    redis.once("end", () => reject(new Error("connection ended before ready")));
  });
  eq(redis.status, "ready", "ready after the INFO check");
  const clientInfo = await redis.client("INFO");
  eq(/ resp=3/.test(clientInfo), true, "ioredis negotiated RESP3: " + clientInfo);
  await redis.flushall();

  // strings and counters
  eq(await redis.set("s", "hello"), "OK", "SET");
  eq(await redis.get("s"), "hello", "GET");
  eq(await redis.get("missing"), null, "GET missing");
  eq(await redis.append("s", " world"), 11, "APPEND");
  eq(await redis.getrange("s", 0, 4), "hello", "GETRANGE");
  eq(await redis.strlen("s"), 11, "STRLEN");
  eq(await redis.set("s", "x", "NX"), null, "SET NX on existing key");
  eq(await redis.set("lock", "me", "PX", 5000, "NX"), "OK", "SET PX NX");
  eq(await redis.incr("n"), 1, "INCR");
  eq(await redis.incrby("n", 41), 42, "INCRBY");
  eq(await redis.decr("n"), 41, "DECR");
  eq(await redis.incrbyfloat("f", "10.5"), "10.5", "INCRBYFLOAT");
  eq(await redis.incrbyfloat("f", "0.1"), "10.6", "INCRBYFLOAT formatting");
  eq(await redis.mset("a", "1", "b", "2"), "OK", "MSET");
  eq(await redis.mget("a", "b", "nope"), ["1", "2", null], "MGET");
  eq(await redis.getset("a", "9"), "1", "GETSET");
  eq(await redis.getdel("a"), "9", "GETDEL");
  const bin = Buffer.from([0, 255, 13, 10, 128]);
  await redis.set(Buffer.from([1, 0, 2]), bin);
  eq(Buffer.compare(await redis.getBuffer(Buffer.from([1, 0, 2])), bin), 0, "binary value round trip");

  // keys and expiry
  eq(await redis.exists("s", "n", "nope"), 2, "EXISTS");
  eq(await redis.type("s"), "string", "TYPE");
  eq(await redis.expire("s", 100), 1, "EXPIRE");
  const ttl = await redis.ttl("s");
  eq(ttl >= 99 && ttl <= 100, true, "TTL " + ttl);
  eq(await redis.persist("s"), 1, "PERSIST");
  eq(await redis.ttl("s"), -1, "TTL after PERSIST");
  eq(await redis.pttl("nope"), -2, "PTTL missing");
  eq(await redis.rename("s", "s2"), "OK", "RENAME");
  eq(await redis.copy("s2", "s3"), 1, "COPY");
  eq((await redis.keys("s*")).sort(), ["s2", "s3"], "KEYS");
  const scanned = [];
  await new Promise((resolve, reject) => {
    const stream = redis.scanStream({ match: "*", count: 2 });
    stream.on("data", (keys) => scanned.push(...keys));
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  eq([...new Set(scanned)].sort(), (await redis.keys("*")).sort(), "SCAN stream sees every key");
  eq(await redis.del("s2", "s3", "nope"), 2, "DEL");
  eq(await redis.dbsize(), (await redis.keys("*")).length, "DBSIZE");

  // pipeline
  const res = await redis.pipeline().set("p", "1").incr("p").get("p").incr("s").exec();
  eq(res.slice(0, 3), [[null, "OK"], [null, 2], [null, "2"]], "pipeline replies");
  eq(res[3][1], 1, "INCR of a missing key inside a pipeline");

  // collections, when supported
  if (await supports(redis, "hset")) {
    eq(await redis.hset("h", "f1", "v1", "f2", "v2"), 2, "HSET");
    eq(await redis.hgetall("h"), { f1: "v1", f2: "v2" }, "HGETALL (a map over RESP3)");
    eq(await redis.hget("h", "f1"), "v1", "HGET");
  }
  if (await supports(redis, "sadd")) {
    eq(await redis.sadd("set", "a", "b", "a"), 2, "SADD");
    eq((await redis.smembers("set")).sort(), ["a", "b"], "SMEMBERS (a set over RESP3)");
    eq(await redis.sismember("set", "a"), 1, "SISMEMBER");
  }
  if (await supports(redis, "rpush")) {
    eq(await redis.rpush("l", "a", "b"), 2, "RPUSH");
    eq(await redis.lrange("l", 0, -1), ["a", "b"], "LRANGE");
  }
  if (await supports(redis, "multi")) {
    eq(await redis.multi().set("m", "1").incr("m").exec(), [[null, "OK"], [null, 2]], "MULTI/EXEC");
  }

  // errors
  await redis.set("str", "abc");
  await rejects(redis.incr("str"), /^ReplyError: ERR value is not an integer or out of range/, "INCR of a non-integer");
  await rejects(redis.call("NOSUCHCOMMAND", "x"), /ERR unknown command 'NOSUCHCOMMAND'/, "unknown command");
  await rejects(redis.call("GET"), /ERR wrong number of arguments for 'get' command/, "arity");
  await rejects(redis.set("k", "v", "EX", 0), /ERR invalid expire time in 'set' command/, "invalid expire");
  if (await supports(redis, "hset")) {
    await rejects(redis.hget("str", "f"), /^ReplyError: WRONGTYPE/, "wrong type");
  }
  eq(await redis.get("str"), "abc", "the connection survives errors");

  await redis.quit();
  console.log(`ioredis ${require("ioredis/package.json").version}: ${checks} checks passed`);
}

main().catch((err) => {
  console.error("FAIL:", err && err.stack ? err.stack : err);
  process.exit(1);
});
