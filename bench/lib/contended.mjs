// The contended loop shared by W2 (10 workers in this process) and W3 (5 workers in each of 4
// child processes): every worker takes the one lock, runs the critical section, releases, and
// asks again, until the window closes. Every section is recorded with the clock of clock.mjs:
// when its worker started waiting, when it got the lock, when it called release.
import { now, sleep, within } from "./clock.mjs";

// `onWindowEnd`, if given, runs when the window closes (WQ reads the nodes' counters there); what
// it resolves with comes back as `windowEndValue`.
export async function runContended({ adapter, key, workerIds, startAt, windowEnd, critical, tailMs = 15_000, onWindowEnd }) {
  const sections = [];
  const waiting = new Map();
  let stopped = false;
  let acquireErrors = 0;
  let releaseErrors = 0;
  let criticalErrors = 0;
  let lastError;

  if (startAt > now()) await sleep(startAt - now());
  let atWindowEnd;
  const stopTimer = setTimeout(() => {
    stopped = true;
    atWindowEnd = onWindowEnd?.();
  }, Math.max(0, windowEnd - now()));

  const worker = async (w) => {
    let waitStart = now();
    while (!stopped) {
      waiting.set(w, waitStart);
      let release;
      try {
        release = await adapter.lock(key);
      } catch (error) {
        // e.g. redlock's default: 10 retries, then it gives up. The worker keeps wanting the
        // lock, so its wait goes on (waitStart stays); the error is counted.
        if (!stopped) acquireErrors++;
        lastError = error;
        continue;
      }
      waiting.delete(w);
      const section = { w, waitStart, acquiredAt: now(), releaseAt: 0 };
      sections.push(section);
      try {
        if (critical) await critical();
      } catch (error) {
        criticalErrors++;
        lastError = error;
      }
      section.releaseAt = now();
      try {
        await release();
      } catch (error) {
        releaseErrors++;
        lastError = error;
      }
      waitStart = now();
    }
    waiting.delete(w);
  };

  const all = Promise.all(workerIds.map((w) => worker(w)));
  // After the window each waiting worker still takes the lock once (so the waits that were
  // running at the end are measured); bounded, in case a library leaves someone hanging.
  const finished = await within(all.then(() => true), Math.max(0, windowEnd - now()) + tailMs, false);
  clearTimeout(stopTimer);
  stopped = true;
  return {
    windowEndValue: await atWindowEnd,
    sections,
    openWaits: [...waiting.values()],
    acquireErrors,
    releaseErrors,
    criticalErrors,
    tailTimedOut: !finished,
    lastError: lastError ? String(lastError.message ?? lastError).split("\n")[0] : undefined,
  };
}
