// One clock for every measurement: CLOCK_MONOTONIC in milliseconds (fractional). On Linux it is
// the same clock in every process of the machine, so timestamps taken in the W3 child processes
// can be merged and compared with each other.
export const now = () => Number(process.hrtime.bigint()) / 1e6;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with `promise`'s value, or with `fallback` after `ms` (the promise keeps running). */
export function within(promise, ms, fallback) {
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve(fallback), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
