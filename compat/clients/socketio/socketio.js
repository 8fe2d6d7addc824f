// socket.io's Redis adapter, unchanged, over two redamo instances
// (integration/socketio_test.go). Usage: node socketio.js PORT_A PORT_B
//
// For each adapter (the classic one: PUBLISH, PSUBSCRIBE, SUBSCRIBE and
// PUBSUB NUMSUB; the sharded one: SPUBLISH, SSUBSCRIBE and PUBSUB
// SHARDNUMSUB) it starts two socket.io servers, server 1 with its adapter's
// ioredis clients on PORT_A and server 2 on PORT_B, connects client a to
// server 1 and clients b (in room "r") and c to server 2, then does from
// server 1 what reaches server 2 only through redamo: io.emit, a room emit,
// fetchSockets (a request answered on the response channel), serverSideEmit
// with and without an acknowledgement, socketsJoin on a remote socket and a
// broadcast whose acknowledgements come back from server 2's clients.
//
// The last line of output is a JSON summary the Go test checks; a step
// that fails or times out is listed in its adapter's errors.
const http = require('http');
const { Server } = require('socket.io');
const ioc = require('socket.io-client');
const Redis = require('ioredis');
const { createAdapter, createShardedAdapter } = require('@socket.io/redis-adapter');

const [portA, portB] = process.argv.slice(2, 4).map(Number);
const STEP_MS = 20000;
const sleep = ms => new Promise(r => setTimeout(r, ms));

// within rejects when p has not settled after STEP_MS: a missing message
// must fail the step, not hang the run.
const within = (what, p) => Promise.race([
  p,
  new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_MS} ms`)), STEP_MS)),
]);

// received collects the events a client gets, and resolves waiters once an
// event has arrived.
function recorder(socket) {
  const got = [];
  const waiters = [];
  socket.onAny((event, ...args) => {
    got.push({ event, args: args.filter(a => typeof a !== 'function') });
    const ack = args.find(a => typeof a === 'function');
    if (ack) ack(`ack from ${socket.io.opts.query.name}`);
    for (const w of waiters.splice(0)) w();
  });
  const waitFor = event => within(`event ${event}`, new Promise(resolve => {
    const check = () => (got.some(g => g.event === event) ? resolve() : waiters.push(check));
    check();
  }));
  return { got, waitFor, events: () => got.map(g => g.event) };
}

async function runAdapter(kind) {
  const result = { steps: {}, errors: [] };
  const redis = [];
  const servers = [];
  const clients = [];
  const make = kind === 'sharded' ? createShardedAdapter : createAdapter;
  try {
    for (const port of [portA, portB]) {
      const pub = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: null });
      const sub = pub.duplicate();
      for (const c of [pub, sub]) c.on('error', e => result.errors.push(`redis ${port}: ${e.message}`));
      redis.push(pub, sub);
      const httpServer = http.createServer();
      const io = new Server(httpServer, { adapter: make(pub, sub) });
      await new Promise(r => httpServer.listen(0, '127.0.0.1', r));
      servers.push({ io, httpServer, port: httpServer.address().port });
    }
    const [s1, s2] = servers;
    s2.io.on('connection', socket => {
      if (socket.handshake.query.name === 'b') socket.join('r');
    });
    const serverEvents = [];
    s2.io.on('plain', (...args) => serverEvents.push({ event: 'plain', args }));
    s2.io.on('ask', (arg, cb) => cb(`server 2 got ${arg}`));

    // Each server counts the others through PUBSUB NUMSUB (SHARDNUMSUB) on
    // its request channel: both must see both before a broadcast can reach
    // the other's clients (subscriptions cross instances over redamo's bus).
    const t0 = Date.now();
    for (;;) {
      const counts = await within('serverCount', Promise.all(servers.map(s => s.io.of('/').adapter.serverCount())));
      if (counts.every(n => n === 2)) break;
      if (Date.now() - t0 > STEP_MS) throw new Error(`serverCount stayed ${JSON.stringify(counts)}`);
      await sleep(50);
    }
    result.steps.serverCount = 2;

    const connect = (server, name) => {
      const socket = ioc(`http://127.0.0.1:${server.port}`, { transports: ['websocket'], query: { name }, reconnection: false });
      clients.push(socket);
      const rec = recorder(socket);
      return within(`client ${name} connect`, new Promise((resolve, reject) => {
        socket.on('connect', () => resolve(rec));
        socket.on('connect_error', reject);
      }));
    };
    const a = await connect(s1, 'a');
    const b = await connect(s2, 'b');
    const c = await connect(s2, 'c');

    const step = async (name, fn) => {
      try {
        result.steps[name] = await fn();
      } catch (e) {
        result.errors.push(`${name}: ${e.message}`);
      }
    };
    await step('emit', async () => {
      s1.io.emit('hello', 1);
      await Promise.all([a, b, c].map(r => r.waitFor('hello')));
      return [a, b, c].map(r => r.got.find(g => g.event === 'hello').args);
    });
    await step('roomEmit', async () => {
      s1.io.to('r').emit('room', 2);
      await b.waitFor('room');
      // c is not in r: a broadcast sent after the room emit, once c has
      // it, shows what c was sent in between.
      s1.io.emit('fence', 3);
      await c.waitFor('fence');
      return { b: b.got.find(g => g.event === 'room').args, c: c.events() };
    });
    await step('fetchSockets', async () => {
      const all = await within('fetchSockets', s1.io.fetchSockets());
      const inRoom = await within('fetchSockets in r', s1.io.in('r').fetchSockets());
      const name = s => s.handshake.query.name;
      return { all: all.map(name).sort(), inRoom: inRoom.map(name), rooms: inRoom.map(s => [...s.rooms].includes('r')) };
    });
    await step('serverSideEmit', async () => {
      s1.io.serverSideEmit('plain', 'x');
      const t = Date.now();
      while (serverEvents.length === 0) {
        if (Date.now() - t > STEP_MS) throw new Error('server 2 never got it');
        await sleep(20);
      }
      const replies = await within('serverSideEmitWithAck', s1.io.serverSideEmitWithAck('ask', 'y'));
      return { received: serverEvents[0].args, replies };
    });
    await step('socketsJoin', async () => {
      s1.io.in('r').socketsJoin('r2');
      const t = Date.now();
      for (;;) {
        const inR2 = await within('fetchSockets in r2', s1.io.in('r2').fetchSockets());
        if (inR2.length > 0) return inR2.map(s => s.handshake.query.name);
        if (Date.now() - t > STEP_MS) throw new Error('b never joined r2');
        await sleep(20);
      }
    });
    await step('emitWithAck', async () => {
      const acks = await within('emitWithAck', s1.io.timeout(STEP_MS).emitWithAck('question', 4));
      return acks.sort();
    });
  } catch (e) {
    result.errors.push(e.message);
  } finally {
    for (const s of clients) s.close();
    for (const s of servers) {
      s.io.close();
    }
    for (const r of redis) r.disconnect();
  }
  return result;
}

(async () => {
  const version = name => require(`${name}/package.json`).version;
  const summary = {
    socketio: version('socket.io'),
    client: version('socket.io-client'),
    adapter: version('@socket.io/redis-adapter'),
    ioredis: version('ioredis'),
    adapters: {},
  };
  for (const kind of ['classic', 'sharded']) summary.adapters[kind] = await runAdapter(kind);
  console.log(JSON.stringify(summary));
  process.exit(0);
})().catch(e => {
  console.error(e);
  process.exit(1);
});
