// A small seeded generator (xorshift32), so a seed picks the same think times, victim and
// fault moment again. The processes' scheduling still varies from run to run.
export function random(seed) {
  let state = (Math.imul(seed | 0, 0x9e3779b1) ^ 0x5bd1e995) >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x100000000;
  };
}
