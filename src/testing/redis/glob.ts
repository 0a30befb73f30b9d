/** Redis's glob-style patterns (KEYS, SCAN MATCH, CONFIG GET): * ? [set] [^set] [a-z] and \x. */
export function globMatch(pattern: string, text: string, noCase = false): boolean {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === "*") source += "[\\s\\S]*";
    else if (c === "?") source += "[\\s\\S]";
    else if (c === "\\" && i + 1 < pattern.length) source += `\\${pattern.charAt(++i)}`.replace(/^\\([\w\s])$/, "$1");
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      const set = pattern.slice(i + 1, end < 0 ? undefined : end);
      source += `[${set.replace(/^\^/, "\u0000").replace(/[\\\]^]/g, "\\$&").replace("\u0000", "^")}]`;
      i = end < 0 ? pattern.length : end;
    } else source += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${source}$`, noCase ? "i" : "").test(text);
}
