/**
 * Redis glob patterns (the syntax of SCAN MATCH and KEYS): `*` any run of characters, `?` one
 * character, `[abc]`, `[^abc]`, `[a-z]` a class, `\x` a literal x. `list` filters on the user's
 * key with the same syntax the server uses, so a pattern means the same thing on both sides.
 */

/** Characters with a meaning in a RegExp (with the u flag, escaping anything else is an error). */
const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|/]/g;

function literal(char: string): string {
  return char.replace(REGEX_SPECIAL, "\\$&");
}

/** The same, inside a character class. */
function classLiteral(char: string): string {
  return char.replace(/[\\\]^-]/g, "\\$&");
}

/** A RegExp matching whole strings against a Redis glob `pattern`. */
export function globToRegExp(pattern: string): RegExp {
  const chars = [...pattern];
  let source = "";
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === "*") {
      source += "[\\s\\S]*";
    } else if (c === "?") {
      source += "[\\s\\S]";
    } else if (c === "\\" && i + 1 < chars.length) {
      source += literal(chars[++i] as string);
    } else if (c === "[") {
      const parsed = parseClass(chars, i + 1);
      if (parsed) {
        source += parsed.source;
        i = parsed.end;
      } else {
        source += literal(c); // unterminated: a plain "["
      }
    } else {
      source += literal(c);
    }
  }
  return new RegExp(`^${source}$`, "u");
}

/** Parses a class starting after "[": its RegExp source and the index of its "]". */
function parseClass(chars: readonly string[], start: number): { source: string; end: number } | undefined {
  let i = start;
  let negate = false;
  if (chars[i] === "^") {
    negate = true;
    i++;
  }
  const parts: string[] = [];
  for (; i < chars.length; i++) {
    let c = chars[i] as string;
    if (c === "]") return { source: parts.length === 0 ? (negate ? "[\\s\\S]" : "[]") : `[${negate ? "^" : ""}${parts.join("")}]`, end: i };
    if (c === "\\" && i + 1 < chars.length) c = chars[++i] as string;
    if (chars[i + 1] === "-" && i + 2 < chars.length && chars[i + 2] !== "]") {
      let to = chars[i + 2] as string;
      i += 2;
      if (to === "\\" && i + 1 < chars.length) to = chars[++i] as string;
      // Redis accepts a reversed range (z-a) as the same range.
      const [lo, hi] = c <= to ? [c, to] : [to, c];
      parts.push(`${classLiteral(lo)}-${classLiteral(hi)}`);
    } else {
      parts.push(classLiteral(c));
    }
  }
  return undefined;
}

/** Escapes `text` so that it matches only itself in a Redis glob. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}
