/** Redis's glob-style patterns (KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE): * ? [set] [^set] [a-z] and \x. */

export function globMatch(pattern: string, text: string, noCase = false): boolean {
  const p = noCase ? pattern.toLowerCase() : pattern;
  const t = noCase ? text.toLowerCase() : text;
  return matchFrom(p, 0, t, 0);
}

function matchFrom(p: string, pi: number, t: string, ti: number): boolean {
  while (pi < p.length) {
    const c = p.charAt(pi);
    if (c === "*") {
      while (p.charAt(pi + 1) === "*") pi++;
      if (pi + 1 === p.length) return true;
      for (let k = ti; k <= t.length; k++) if (matchFrom(p, pi + 1, t, k)) return true;
      return false;
    }
    if (ti >= t.length) return false;
    if (c === "?") { pi++; ti++; continue; }
    if (c === "[") {
      const ch = t.charAt(ti);
      pi++;
      const negate = p.charAt(pi) === "^";
      if (negate) pi++;
      let found = false;
      // A set runs to the next `]` (or the end of the pattern).
      while (pi < p.length && p.charAt(pi) !== "]") {
        if (p.charAt(pi) === "\\" && pi + 1 < p.length) {
          pi++;
          if (p.charAt(pi) === ch) found = true;
        } else if (p.charAt(pi + 1) === "-" && pi + 2 < p.length) {
          let lo = p.charAt(pi);
          let hi = p.charAt(pi + 2);
          if (lo > hi) [lo, hi] = [hi, lo];
          if (ch >= lo && ch <= hi) found = true;
          pi += 2;
        } else if (p.charAt(pi) === ch) {
          found = true;
        }
        pi++;
      }
      pi++;
      if (found === negate) return false;
      ti++;
      continue;
    }
    if (c === "\\" && pi + 1 < p.length) pi++;
    if (p.charAt(pi) !== t.charAt(ti)) return false;
    pi++;
    ti++;
  }
  return ti === t.length;
}
