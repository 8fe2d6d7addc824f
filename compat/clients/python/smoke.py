"""redis-py smoke test: python3 smoke.py PORT.

Connects with redis-py's defaults (Debian's python3-redis), runs a handful of
commands per family, a pipeline and error cases, and exits non-zero on the
first surprise. Run against a real Redis and against redamo by
compat/clients_test.go.
"""
import sys

import redis

checks = 0


def eq(got, want, what):
    global checks
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")
    checks += 1


def raises(fn, exc, text, what):
    global checks
    try:
        fn()
    except exc as e:
        if text not in str(e):
            raise AssertionError(f"{what}: error {e!r} lacks {text!r}")
        checks += 1
        return
    raise AssertionError(f"{what}: no error")


def supports(r, name):
    # Called with a wrong number of arguments, a command the server knows
    # answers with an arity error and does nothing.
    args = ["x"] if name == "multi" else []
    try:
        r.execute_command(name.upper(), *args)
    except redis.ResponseError as e:
        return "unknown command" not in str(e)
    raise AssertionError(f"{name} with a wrong arity did not fail")


def main():
    port = int(sys.argv[1])
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    eq(r.ping(), True, "PING")
    r.flushall()

    # strings and counters
    eq(r.set("s", "hello"), True, "SET")
    eq(r.get("s"), b"hello", "GET")
    eq(r.get("missing"), None, "GET missing")
    eq(r.append("s", " world"), 11, "APPEND")
    eq(r.getrange("s", -5, -1), b"world", "GETRANGE")
    eq(r.set("s", "x", nx=True), None, "SET NX on existing key")
    eq(r.set("lock", "me", px=5000, nx=True), True, "SET PX NX")
    eq(r.set("s", "new", get=True), b"hello world", "SET GET")
    eq(r.incr("n"), 1, "INCR")
    eq(r.incrby("n", 41), 42, "INCRBY")
    eq(r.decrby("n", 2), 40, "DECRBY")
    eq(r.incrbyfloat("f", 2.5), 2.5, "INCRBYFLOAT")
    eq(r.get("f"), b"2.5", "INCRBYFLOAT stored text")
    eq(r.mset({"a": "1", "b": "2"}), True, "MSET")
    eq(r.mget("a", "b", "nope"), [b"1", b"2", None], "MGET")
    eq(r.msetnx({"b": "3", "c": "4"}), False, "MSETNX with an existing key")
    eq(r.getex("a", ex=100), b"1", "GETEX EX")
    eq(r.getdel("a"), b"1", "GETDEL")
    binary = bytes([0, 255, 13, 10, 128])
    r.set(b"\x01\x00\x02", binary)
    eq(r.get(b"\x01\x00\x02"), binary, "binary value round trip")
    eq(r.setrange("sr", 3, "x"), 4, "SETRANGE pads")
    eq(r.get("sr"), b"\x00\x00\x00x", "SETRANGE zero padding")

    # keys and expiry
    eq(r.exists("s", "n", "nope"), 2, "EXISTS")
    eq(r.type("s"), b"string", "TYPE")
    eq(r.expire("s", 100), True, "EXPIRE")
    eq(r.expire("s", 50, gt=True), False, "EXPIRE GT")
    ttl = r.ttl("s")
    eq(99 <= ttl <= 100, True, f"TTL {ttl}")
    eq(r.persist("s"), True, "PERSIST")
    eq(r.ttl("s"), -1, "TTL after PERSIST")
    eq(r.pttl("nope"), -2, "PTTL missing")
    eq(r.rename("s", "s2"), True, "RENAME")
    eq(r.renamenx("s2", "n"), False, "RENAMENX onto an existing key")
    eq(r.copy("s2", "s3"), True, "COPY")
    eq(sorted(r.keys("s[0-9]")), [b"s2", b"s3"], "KEYS")
    eq(sorted(set(r.scan_iter(match="*", count=2))), sorted(r.keys("*")), "SCAN iteration sees every key")
    eq(r.delete("s2", "s3", "nope"), 2, "DEL")
    eq(r.dbsize(), len(r.keys("*")), "DBSIZE")

    # pipeline (no transaction) and its errors
    p = r.pipeline(transaction=False)
    p.set("p", "1").incr("p").get("p").lpop("p")
    res = p.execute(raise_on_error=False)
    eq(res[:3], [True, 2, b"2"], "pipeline replies")
    if supports(r, "lpop"):
        eq(isinstance(res[3], redis.ResponseError), True, "pipeline keeps per-command errors")

    # collections and transactions, when supported
    if supports(r, "hset"):
        eq(r.hset("h", mapping={"f1": "v1", "f2": "v2"}), 2, "HSET")
        eq(r.hgetall("h"), {b"f1": b"v1", b"f2": b"v2"}, "HGETALL")
    if supports(r, "sadd"):
        eq(r.sadd("set", "a", "b", "a"), 2, "SADD")
        eq(r.smembers("set"), {b"a", b"b"}, "SMEMBERS")
    if supports(r, "rpush"):
        eq(r.rpush("l", "a", "b"), 2, "RPUSH")
        eq(r.lrange("l", 0, -1), [b"a", b"b"], "LRANGE")
    if supports(r, "multi"):
        tx = r.pipeline(transaction=True)
        tx.set("m", "1").incr("m")
        eq(tx.execute(), [True, 2], "MULTI/EXEC")

    # errors
    r.set("str", "abc")
    raises(lambda: r.incr("str"), redis.ResponseError, "value is not an integer or out of range", "INCR of a non-integer")
    raises(lambda: r.execute_command("NOSUCHCOMMAND", "x"), redis.ResponseError, "unknown command 'NOSUCHCOMMAND'", "unknown command")
    raises(lambda: r.execute_command("GET"), redis.ResponseError, "wrong number of arguments for 'get' command", "arity")
    raises(lambda: r.execute_command("SET", "k", "v", "EX", "0"), redis.ResponseError, "invalid expire time in 'set' command", "invalid expire")
    if supports(r, "hset"):
        raises(lambda: r.hget("str", "f"), redis.ResponseError, "WRONGTYPE", "wrong type")
    eq(r.get("str"), b"abc", "the connection survives errors")

    info = r.info()
    eq(info["redis_version"].split(".")[0], "7", "INFO redis_version")
    eq(info["loading"], 0, "INFO loading")
    r.close()
    print(f"redis-py {redis.__version__}: {checks} checks passed")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # report and fail
        print(f"FAIL: {e!r}", file=sys.stderr)
        sys.exit(1)
