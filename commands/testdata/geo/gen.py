#!/usr/bin/env python3
"""Records GEO golden replies from a throwaway redis-server 7.0.15.

    redis-server --port 6399 --save '' --daemonize yes
    python3 gen.py 6399 > golden.txt

Each output line is: protocol, TAB, the command as a JSON array of
strings, TAB, the raw reply as a JSON string.
Lines starting with '#' are comments; "point" lines list the GEOADD input
(member lon lat) the commands run against, "zadd" lines raw scores (member
score) added to the key "weird".
"""
import json, random, socket, sys

port = int(sys.argv[1])
sock = socket.create_connection(("127.0.0.1", port))
buf = b""

def read_line():
    global buf
    while b"\r\n" not in buf:
        buf += sock.recv(65536)
    i = buf.index(b"\r\n")
    line, buf = buf[:i + 2], buf[i + 2:]
    return line

def read_exact(n):
    global buf
    while len(buf) < n:
        buf += sock.recv(65536)
    out, buf = buf[:n], buf[n:]
    return out

def read_reply():
    line = read_line()
    t = line[:1]
    if t in b"+-:,_#(":
        return line
    if t in b"$=":
        n = int(line[1:-2])
        return line if n < 0 else line + read_exact(n + 2)
    if t in b"*~>%":
        n = int(line[1:-2])
        if t == b"%":
            n *= 2
        out = line
        for _ in range(max(n, 0)):
            out += read_reply()
        return out
    raise ValueError(line)

def call(*args):
    msg = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        msg += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(msg)
    return read_reply()

proto = 2
def rec(*args):
    r = call(*args)
    print("%d\t%s\t%s" % (proto, json.dumps([str(a) for a in args]), json.dumps(r.decode("latin-1"))))

rnd = random.Random(7015)
call("FLUSHALL")
pts = []
edges = [(0, 0), (180, 0), (-180, 0), (180, 85.05112878), (-180, -85.05112878),
         (179.9999, 10), (-179.9999, 10), (0, 85.05112878), (0, -85.05112878),
         (13.361389, 38.115556), (15.087269, 37.502669), (13.361389, 38.115557),
         (2.3522, 48.8566), (2.3523, 48.8566), (2.3522, 48.8567), (-0.1276, 51.5072),
         (139.6917, 35.6895), (-74.006, 40.7128), (151.2093, -33.8688), (-70.6693, -33.4489),
         (179.5, -16.5), (-179.5, -16.5), (0.000001, 0.000001), (-0.000001, -0.000001),
         (45, 66.5), (45, 80.5), (45, -80.5), (10, 10), (10, 10)]
for i, (lon, lat) in enumerate(edges):
    pts.append(("e%d" % i, repr(float(lon)), repr(float(lat))))
for i in range(300):
    if i % 3 == 0:  # clustered around a few centres
        c = edges[rnd.randrange(9, 20)]
        lon = c[0] + rnd.uniform(-2, 2)
        lat = max(-85, min(85, c[1] + rnd.uniform(-2, 2)))
    else:
        lon = rnd.uniform(-180, 180)
        lat = rnd.uniform(-85.05112878, 85.05112878)
    pts.append(("p%d" % i, "%.6f" % lon, "%.6f" % lat))
# duplicates of a position under other names (equal distances)
for i in range(6):
    pts.append(("d%d" % i, "2.3522", "48.8566"))
for m, lon, lat in pts:
    print("point\t%s %s %s" % (m, lon, lat))
    call("GEOADD", "pts", lon, lat, m)
weird = [("w1", "-5"), ("w2", "1e300"), ("w3", "inf"), ("w4", "-inf"), ("w5", "4503599627370496"),
         ("w6", "4503599627370495"), ("w7", "0"), ("w8", "1.5"), ("w9", "18446744073709551616")]
for m, s in weird:
    print("zadd\t%s %s" % (m, s))
    call("ZADD", "weird", s, m)

members = [p[0] for p in pts]
for m in members:
    rec("ZSCORE", "pts", m)
for p in (2, 3):
    proto = p
    call("HELLO", p)
    for i in range(0, len(members), 25):
        rec("GEOPOS", "pts", *members[i:i + 25], "nosuch")
    rec("GEOPOS", "weird", *[w[0] for w in weird])
    rec("GEOPOS", "nokey", "a")
    rec("GEOSEARCH", "pts", "FROMLONLAT", "2.35", "48.85", "BYRADIUS", "50", "km", "WITHCOORD", "WITHDIST", "WITHHASH", "ASC")
    rec("GEODIST", "nokey", "a", "b")
    rec("GEODIST", "pts", "e0", "nosuch")
proto = 2
call("HELLO", 2)
for i in range(0, len(members), 25):
    rec("GEOHASH", "pts", *members[i:i + 25], "nosuch")
rec("GEOHASH", "weird", *[w[0] for w in weird])
units = ["m", "km", "mi", "ft", "KM"]
for i in range(400):
    a, b = rnd.choice(members), rnd.choice(members)
    rec("GEODIST", "pts", a, b, units[i % 5])
for a, b in [("e0", "e1"), ("e1", "e2"), ("e3", "e4"), ("e7", "e8"), ("e9", "e11"), ("e27", "e28"), ("e20", "e21")]:
    rec("GEODIST", "pts", a, b)
rec("GEODIST", "weird", "w1", "w2", "km")

radii = [("0", "m"), ("1", "m"), ("500", "m"), ("10", "km"), ("150", "km"), ("700", "km"),
         ("3000", "km"), ("5000", "mi"), ("20000", "km"), ("100000", "ft")]
centres = [(m, lon, lat) for m, lon, lat in pts[:30]] + [pts[rnd.randrange(len(pts))] for _ in range(30)]
opts = ["WITHCOORD", "WITHDIST", "WITHHASH", "ASC"]
for j, (m, lon, lat) in enumerate(centres):
    r, u = radii[j % len(radii)]
    rec("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYRADIUS", r, u, *opts)
    rec("GEOSEARCH", "pts", "FROMMEMBER", m, "BYRADIUS", r, u, *opts)
    w, h, u2 = [("1", "1", "km"), ("400", "100", "km"), ("100", "400", "km"), ("5000", "2000", "km"),
                ("30000", "30000", "km"), ("0", "0", "m"), ("50", "50", "mi")][j % 7]
    rec("GEOSEARCH", "pts", "FROMLONLAT", lon, lat, "BYBOX", w, h, u2, *opts)
    rec("GEOSEARCH", "pts", "FROMMEMBER", m, "BYBOX", w, h, u2, "WITHDIST", "DESC")
    # scan order (no sort), COUNT (partial sort), ANY
    rec("GEOSEARCH", "pts", "FROMMEMBER", m, "BYRADIUS", "3000", "km")
    rec("GEOSEARCH", "pts", "FROMMEMBER", m, "BYRADIUS", "3000", "km", "COUNT", str(1 + j % 9), "WITHDIST")
    rec("GEOSEARCH", "pts", "FROMMEMBER", m, "BYRADIUS", "8000", "km", "COUNT", str(1 + j % 13), "ANY", "WITHDIST")
    rec("GEOSEARCH", "pts", "FROMMEMBER", m, "BYRADIUS", "8000", "km", "COUNT", str(2 + j % 5), "ANY", "DESC", "WITHDIST")
    rec("GEORADIUS", "pts", lon, lat, r, u, "WITHDIST", "COUNT", "7", "DESC")
    rec("GEORADIUSBYMEMBER_RO", "pts", m, r, u, "WITHHASH", "ASC")
rec("GEOSEARCH", "pts", "FROMLONLAT", "2.3522", "48.8566", "BYRADIUS", "1", "km", "COUNT", "3", "WITHDIST")
rec("GEOSEARCH", "pts", "FROMLONLAT", "2.3522", "48.8566", "BYRADIUS", "1", "km", "COUNT", "5", "DESC")
rec("GEOSEARCH", "pts", "FROMLONLAT", "2.3522", "48.8566", "BYBOX", "2", "2", "km")
rec("GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "km")

# errors (and the order of checks)
call("SET", "str", "v")
bad = [
    ["GEOADD", "g", "1", "2"], ["GEOADD", "g", "nx", "xx", "1", "2", "m"], ["GEOADD", "g", "ch", "ch", "ch"],
    ["GEOADD", "g", "200", "100", "m"], ["GEOADD", "g", "1", "86", "m"], ["GEOADD", "g", "abc", "1", "m"],
    ["GEOADD", "g", "1", "nan", "m"], ["GEOADD", "g", "inf", "1", "m"], ["GEOADD", "g", "-inf", "1", "m"],
    ["GEOADD", "g", "1e400", "1", "m"], ["GEOADD", "g", "1e-400", "1", "m"], ["GEOADD", "g", " 1", "1", "m"],
    ["GEOADD", "g", "0x10", "1", "m"], ["GEOADD", "g", "-180.0000001", "0", "m"], ["GEOADD", "g", "1", "2", "m", "3"],
    ["GEOADD", "g", "gt", "1", "2", "m"], ["GEOADD", "str", "1", "200", "m"],
    ["GEODIST", "pts", "e0", "e1", "parsec"], ["GEODIST", "pts", "e0", "e1", "km", "x"], ["GEODIST", "nokey", "a", "b", "bad"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2"], ["GEOSEARCH", "pts", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "x", "km"], ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "-1", "km"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "yd"], ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYBOX", "x", "1", "km"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYBOX", "1", "x", "km"], ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYBOX", "1", "-1", "km"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYBOX", "-1", "x", "km"], ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYBOX", "1", "1", "yd"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
    ["GEOSEARCH", "pts", "FROMMEMBER", "e0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "pts", "FROMMEMBER", "nosuch", "BYRADIUS", "x", "km"], ["GEOSEARCH", "nokey", "FROMMEMBER", "nosuch", "BYRADIUS", "x", "km"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "COUNT", "0"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "COUNT", "x"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "ANY"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STORE", "x"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STOREDIST"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "COUNT"],
    ["GEOSEARCH", "pts", "ANY", "FROMLONLAT", "1", "2"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "200", "2", "BYRADIUS", "1", "km"],
    ["geosearch", "pts", "WITHDIST"], ["GeoSearch", "pts", "FROMLONLAT", "1", "2", "WITHDIST"],
    ["GEOSEARCHSTORE", "dst", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "WITHDIST"],
    ["GEOSEARCHSTORE", "dst", "pts", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STORE", "x"],
    ["GEOSEARCHSTORE", "dst", "pts", "BYRADIUS", "1", "km", "STOREDIST"],
    ["GEORADIUS", "pts", "1", "2", "1", "km", "STORE", "x", "WITHHASH"],
    ["GEORADIUS", "pts", "1", "2", "1", "km", "FROMLONLAT", "1", "2"],
    ["GEORADIUS", "pts", "1", "2", "x", "km"], ["GEORADIUS", "pts", "1", "2", "1", "xx"], ["GEORADIUS", "pts", "x", "2", "1", "km"],
    ["GEORADIUS", "nokey", "x", "2", "1", "km"], ["GEORADIUS", "pts", "1", "2", "1", "km", "ANY", "COUNT", "-3"],
    ["GEORADIUS_RO", "pts", "1", "2", "1", "km", "STORE", "x"],
    ["GEORADIUSBYMEMBER", "pts", "nosuch", "x", "km"], ["GEORADIUSBYMEMBER", "pts", "e0", "x", "km"],
    ["GEORADIUSBYMEMBER", "nokey", "nosuch", "x", "km"], ["GEORADIUSBYMEMBER", "nokey", "nosuch", "x", "km", "bogus"],
    ["GEORADIUSBYMEMBER", "nokey", "nosuch", "x", "km", "STORE", "d", "WITHDIST"],
    ["GEORADIUSBYMEMBER_RO", "pts", "e0", "1", "km", "STOREDIST", "x"],
]
for b in bad:
    rec(*b)
