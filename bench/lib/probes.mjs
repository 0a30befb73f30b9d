// W5's two observers of one redis-server while a library renews its leases:
// - a bystander that sends PING after PING (the next as soon as the last one answered) and
//   records when each was sent and how long it took: a script that keeps the server busy shows
//   up as a PING that waited for it;
// - a sampler that reads INFO commandstats every SAMPLE_MS and records the number of script
//   calls (EVALSHA, EVAL, their _RO forms, FCALL) so far: the renewal bursts (ticks) are where
//   that number moves.
import { Redis } from "ioredis";
import { now, sleep } from "./clock.mjs";
import { percentiles } from "./stats.mjs";

export const SAMPLE_MS = 10;
/** Script calls separated by at least this much quiet belong to different bursts. */
export const BURST_GAP_MS = 150;

async function client(port) {
  const c = new Redis({ port, host: "127.0.0.1" });
  await c.ping();
  return c;
}

/** PING in a tight loop until `untilAt`; resolves with [sentAt, latency] pairs (flat). */
async function bystander(port, untilAt) {
  const c = await client(port);
  const pings = [];
  try {
    while (now() < untilAt) {
      const t0 = now();
      await c.ping();
      pings.push(t0, now() - t0);
    }
  } finally {
    c.disconnect();
  }
  return pings;
}

/** INFO commandstats every SAMPLE_MS until `untilAt`; resolves with { t, scripts } samples. */
async function sampler(port, untilAt) {
  const c = await client(port);
  const samples = [];
  try {
    while (now() < untilAt) {
      const info = await c.info("commandstats");
      let scripts = 0;
      for (const m of info.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro|eval_ro|fcall|fcall_ro):calls=(\d+)/gm)) scripts += Number(m[2]);
      samples.push({ t: now(), scripts });
      await sleep(SAMPLE_MS);
    }
  } finally {
    c.disconnect();
  }
  return samples;
}

/**
 * Bursts of script calls: { from, to, calls }. `from` is the previous sample's time (the calls
 * happened after it), `to` the time of the last sample that saw the count move.
 */
export function bursts(samples) {
  const out = [];
  let current;
  for (let i = 1; i < samples.length; i++) {
    const calls = samples[i].scripts - samples[i - 1].scripts;
    if (calls <= 0) continue;
    if (current && samples[i - 1].t - current.to < BURST_GAP_MS) {
      current.to = samples[i].t;
      current.calls += calls;
    } else {
      current = { from: samples[i - 1].t, to: samples[i].t, calls };
      out.push(current);
    }
  }
  return out;
}

/** Watches the server on `port` for `ms`; resolves with the PING figures inside and outside the bursts. */
export async function watch(port, ms) {
  const untilAt = now() + ms;
  const [pings, samples] = await Promise.all([bystander(port, untilAt), sampler(port, untilAt)]);
  const found = bursts(samples);
  const during = [];
  const outside = [];
  let b = 0;
  for (let i = 0; i < pings.length; i += 2) {
    const sent = pings[i];
    const answered = sent + pings[i + 1];
    while (b < found.length && found[b].to < sent) b++;
    // A PING that was waiting at any moment of a burst counts as "during".
    (b < found.length && found[b].from <= answered ? during : outside).push(pings[i + 1]);
  }
  const seconds = ms / 1000;
  const spans = found.map((x) => x.to - x.from);
  return {
    pings: pings.length / 2,
    during: percentiles(during),
    outside: percentiles(outside),
    all: percentiles([...during, ...outside]),
    bursts: found.length,
    burstsPerSec: found.length / seconds,
    scriptCallsPerBurst: found.length ? found.reduce((n, x) => n + x.calls, 0) / found.length : NaN,
    burstSpanP50Ms: percentiles(spans).p50,
    burstSpanMaxMs: percentiles(spans).max,
  };
}
