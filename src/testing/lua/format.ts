/** string.format as Lua 5.1 does it: C printf conversions, with Lua's limits on a spec's size. */
import type { Args } from "./args.js";
import { formatFloat } from "./number.js";

const FLAGS = "-+ #0";

interface Spec {
  flags: string;
  width: number;
  precision: number | undefined;
  conversion: string;
}

/** Pads a formatted number or string to the spec's width. `body` has no sign; `sign` is "-", "+", " " or "". */
function pad(spec: Spec, sign: string, prefix: string, body: string, zeroAllowed: boolean): string {
  const left = spec.flags.includes("-");
  const content = sign + prefix + body;
  if (content.length >= spec.width) return content;
  const fill = spec.width - content.length;
  if (left) return content + " ".repeat(fill);
  if (zeroAllowed && spec.flags.includes("0")) return sign + prefix + "0".repeat(fill) + body;
  return " ".repeat(fill) + content;
}

function signOf(negative: boolean, flags: string): string {
  if (negative) return "-";
  if (flags.includes("+")) return "+";
  if (flags.includes(" ")) return " ";
  return "";
}

/** C's (long) / (unsigned long) cast of a double: truncation, then 64-bit wrap-around. */
function toLong(x: number): bigint {
  if (!Number.isFinite(x)) return -(1n << 63n);
  return BigInt.asIntN(64, BigInt(Math.trunc(x)));
}

function integer(spec: Spec, x: number): string {
  const c = spec.conversion;
  const signed = c === "d" || c === "i";
  const value = signed ? toLong(x) : BigInt.asUintN(64, toLong(x));
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  let digits = c === "o" ? magnitude.toString(8) : c === "x" ? magnitude.toString(16) : c === "X" ? magnitude.toString(16).toUpperCase() : magnitude.toString();
  if (spec.precision !== undefined) {
    if (spec.precision === 0 && magnitude === 0n) digits = "";
    digits = digits.padStart(spec.precision, "0");
  }
  let prefix = "";
  if (spec.flags.includes("#")) {
    if (c === "o" && !digits.startsWith("0")) digits = `0${digits}`;
    if ((c === "x" || c === "X") && magnitude !== 0n) prefix = c === "x" ? "0x" : "0X";
  }
  return pad(spec, signed ? signOf(negative, spec.flags) : "", prefix, digits, spec.precision === undefined);
}

function float(spec: Spec, x: number): string {
  const text = formatFloat(Math.abs(x), spec.conversion as "e", spec.precision ?? 6, spec.flags.includes("#"));
  const negative = x < 0 || Object.is(x, -0) || (Number.isNaN(x) && formatFloat(x, "g").startsWith("-"));
  return pad(spec, signOf(negative, spec.flags), "", text, Number.isFinite(x));
}

/** `%q`: a string Lua can read back. */
function quoted(s: string): string {
  let out = '"';
  for (const c of s) {
    if (c === '"' || c === "\\" || c === "\n") out += `\\${c}`;
    else if (c === "\r") out += "\\r";
    else if (c === "\0") out += "\\000";
    else out += c;
  }
  return `${out}"`;
}

export function format(a: Args): string {
  const fmt = a.string(0);
  let out = "";
  let arg = 0;
  for (let i = 0; i < fmt.length; i++) {
    const c = fmt.charAt(i);
    if (c !== "%") { out += c; continue; }
    if (fmt.charAt(++i) === "%") { out += "%"; continue; }
    // A spec: flags, a width of at most two digits, a precision of at most two digits.
    const start = i;
    while (i < fmt.length && FLAGS.includes(fmt.charAt(i))) i++;
    if (i - start > FLAGS.length) throw a.error("invalid format (repeated flags)");
    const flags = fmt.slice(start, i);
    let widthText = "";
    while (/[0-9]/.test(fmt.charAt(i))) widthText += fmt.charAt(i++);
    let precisionText: string | undefined;
    if (fmt.charAt(i) === ".") {
      i++;
      precisionText = "";
      while (/[0-9]/.test(fmt.charAt(i))) precisionText += fmt.charAt(i++);
    }
    if (widthText.length > 2 || (precisionText?.length ?? 0) > 2) throw a.error("invalid format (width or precision too long)");
    const spec: Spec = {
      flags,
      width: widthText === "" ? 0 : Number(widthText),
      precision: precisionText === undefined ? undefined : Number(precisionText || "0"),
      conversion: fmt.charAt(i),
    };
    arg++;
    switch (spec.conversion) {
      case "c": {
        // Lua copies sprintf's buffer up to its first NUL, so %c of 0 adds only the padding before it.
        const text = pad(spec, "", "", String.fromCharCode(Number(BigInt.asUintN(8, toLong(a.number(arg))))), false);
        out += text.split("\0")[0];
        break;
      }
      case "d": case "i": case "o": case "u": case "x": case "X":
        out += integer(spec, a.number(arg));
        break;
      case "e": case "E": case "f": case "g": case "G":
        out += float(spec, a.number(arg));
        break;
      case "q":
        out += quoted(a.string(arg));
        break;
      case "s": {
        const s = a.string(arg);
        // Lua passes a long string without a precision through untouched (no padding either).
        if (spec.precision === undefined && s.length >= 100) { out += s; break; }
        out += pad(spec, "", "", spec.precision === undefined ? s : s.slice(0, spec.precision), false);
        break;
      }
      default:
        throw a.error(`invalid option '%${spec.conversion}' to 'format'`);
    }
  }
  return out;
}
