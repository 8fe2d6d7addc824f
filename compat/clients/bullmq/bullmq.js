// BullMQ, unchanged, over redamo (integration/bullmq_test.go): one
// producer and a QueueEvents listener on the first address, a worker on
// each of the first two. Usage: node bullmq.js PORT_A PORT_B QUEUE_NAME
//
// Jobs: plain ones, delayed ones, ones that fail twice and then succeed
// (exponential backoff), and ones that always fail (they end failed). The
// last line of output is a JSON summary the Go test checks.
const { Queue, Worker, QueueEvents } = require('bullmq');

const [portA, portB] = process.argv.slice(2, 4).map(Number);
const name = process.argv[4] || 'jobs';
const conn = port => ({ host: '127.0.0.1', port, maxRetriesPerRequest: null });

const PLAIN = 60, DELAYED = 10, RETRIED = 5, FAILING = 2;
const sleep = ms => new Promise(r => setTimeout(r, ms));

(async () => {
  const queue = new Queue(name, { connection: conn(portA) });
  const events = new QueueEvents(name, { connection: conn(portA) });
  await events.waitUntilReady();
  const seen = { completed: new Set(), failed: new Set() };
  events.on('completed', ({ jobId }) => seen.completed.add(jobId));
  events.on('failed', ({ jobId }) => seen.failed.add(jobId));

  // runs[jobId] = [{ worker, attempt, at }] for every time a job ran.
  const runs = {};
  const errors = [];
  const processor = tag => async job => {
    (runs[job.id] = runs[job.id] || []).push({ worker: tag, attempt: job.attemptsMade, at: Date.now() });
    await sleep(5);
    switch (job.data.kind) {
      case 'retried':
        if (job.attemptsMade < 2) throw new Error('not yet');
        break;
      case 'failing':
        throw new Error('always');
    }
    return job.data.n * 2;
  };
  const workers = [
    new Worker(name, processor('A'), { connection: conn(portA), concurrency: 3 }),
    new Worker(name, processor('B'), { connection: conn(portB), concurrency: 3 }),
  ];
  for (const w of workers) w.on('error', e => errors.push(e.message));

  const added = {};
  const add = async (kind, n, opts) => {
    const at = Date.now();
    const job = await queue.add(kind, { kind, n }, opts);
    added[job.id] = { kind, n, at, delay: (opts && opts.delay) || 0 };
  };
  for (let n = 0; n < PLAIN; n++) await add('plain', n);
  for (let n = 0; n < DELAYED; n++) await add('delayed', n, { delay: 300 + 50 * n });
  for (let n = 0; n < RETRIED; n++) await add('retried', n, { attempts: 3, backoff: { type: 'exponential', delay: 100 } });
  for (let n = 0; n < FAILING; n++) await add('failing', n, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });

  const want = PLAIN + DELAYED + RETRIED;
  const t0 = Date.now();
  let counts;
  for (;;) {
    counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed');
    if (counts.completed >= want && counts.failed >= FAILING) break;
    if (Date.now() - t0 > 120000) break;
    await sleep(100);
  }
  // Let the events of the last jobs arrive.
  for (let i = 0; i < 50 && (seen.completed.size < want || seen.failed.size < FAILING); i++) await sleep(100);

  const jobs = [];
  for (const id of Object.keys(added)) {
    const job = await queue.getJob(id);
    const state = await job.getState();
    const rs = runs[id] || [];
    jobs.push({
      id, kind: added[id].kind, state, attemptsMade: job.attemptsMade, returnvalue: job.returnvalue,
      runs: rs.length, workers: [...new Set(rs.map(r => r.worker))],
      firstRunAfterAddMs: rs.length ? rs[0].at - added[id].at : -1, delay: added[id].delay,
      gapsMs: rs.slice(1).map((r, i) => r.at - rs[i].at),
    });
  }
  for (const w of workers) await w.close();
  await events.close();
  await queue.close();
  console.log(JSON.stringify({
    bullmq: require('bullmq/package.json').version, ioredis: require('ioredis/package.json').version,
    ms: Date.now() - t0, counts, events: { completed: seen.completed.size, failed: seen.failed.size },
    errors, jobs,
  }));
})().catch(e => { console.error(e); process.exit(1); });
