/**
 * Lua 5.1 numbers are C doubles, read by strtod and printed by printf. These helpers do the same
 * in JavaScript, digit for digit: printf's rounding works on the double's exact binary value
 * (ties go to the even digit), which Number#toPrecision does not promise.
 */

/** C isspace in the "C" locale. */
export const isCSpace = (c: string): boolean => c === " " || (c >= "\t" && c <= "\r");

function trimC(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isCSpace(s.charAt(a))) a++;
  while (b > a && isCSpace(s.charAt(b - 1))) b--;
  return s.slice(a, b);
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const HEX = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?$/;
const SPECIAL = /^([+-]?)(inf|infinity|nan(\([0-9A-Za-z_]*\))?)$/i;

/** luaO_str2d: a whole string (surrounding spaces allowed) read as a number, or undefined. */
export function str2number(s: string): number | undefined {
  const t = trimC(s);
  if (DECIMAL.test(t)) return Number(t);
  const hex = HEX.exec(t);
  if (hex) {
    const [, sign, int = "", frac = "", exp] = hex;
    if (int === "" && frac === "") return undefined;
    let value = Number(BigInt(`0x${int || "0"}`));
    if (frac !== "") value += Number(BigInt(`0x${frac}`)) / 16 ** frac.length;
    if (exp !== undefined) value *= 2 ** Number(exp);
    return sign === "-" ? -value : value;
  }
  const special = SPECIAL.exec(t);
  if (special) {
    const value = special[2]?.toLowerCase().startsWith("nan") ? NaN : Infinity;
    return special[1] === "-" ? -value : value;
  }
  return undefined;
}

const MAX_ULONG = (1n << 64n) - 1n;

/** tonumber(s, base) for a base other than 10: C's strtoul, whole string, as Lua 5.1 does. */
export function str2numberBase(s: string, base: number): number | undefined {
  let i = 0;
  while (i < s.length && isCSpace(s.charAt(i))) i++;
  let negative = false;
  if (s.charAt(i) === "+" || s.charAt(i) === "-") { negative = s.charAt(i) === "-"; i++; }
  if (base === 16 && s.charAt(i) === "0" && (s.charAt(i + 1) === "x" || s.charAt(i + 1) === "X")) i += 2;
  let n = 0n;
  const start = i;
  for (; i < s.length; i++) {
    const d = parseInt(s.charAt(i), 36);
    if (Number.isNaN(d) || d >= base) break;
    n = n * BigInt(base) + BigInt(d);
    if (n > MAX_ULONG) n = MAX_ULONG + 1n;
  }
  if (i === start) return undefined;
  while (i < s.length && isCSpace(s.charAt(i))) i++;
  if (i !== s.length) return undefined;
  if (n > MAX_ULONG) n = MAX_ULONG;
  if (negative) n = (-n) & MAX_ULONG;
  return Number(n);
}

/** True for a NaN whose sign bit is set (x86 makes 0/0 one; glibc prints it as "-nan"). */
function negativeNaN(x: number): boolean {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return (view.getUint8(0) & 0x80) !== 0;
}

/** The exact decimal value of a finite positive double: 0.<digits> × 10^point. */
interface Decimal {
  digits: string;
  point: number;
}

function exactDecimal(x: number): Decimal {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = (biased === 0 ? 1 : biased) - 1075;
  if (exponent >= 0) {
    const digits = (mantissa << BigInt(exponent)).toString();
    return { digits: digits.replace(/0+$/, ""), point: digits.length };
  }
  // m / 2^k = m × 5^k / 10^k
  const digits = (mantissa * 5n ** BigInt(-exponent)).toString();
  return { digits: digits.replace(/0+$/, ""), point: digits.length + exponent };
}

/** Keeps the first `keep` digits (keep may be <= 0), rounding half to even on the exact rest. */
function roundDecimal(d: Decimal, keep: number): Decimal {
  if (keep >= d.digits.length) return d;
  if (keep < 0) return { digits: "", point: d.point };
  const kept = d.digits.slice(0, keep);
  const first = d.digits.charAt(keep);
  const exactHalf = first === "5" && d.digits.length === keep + 1;
  const last = keep > 0 ? Number(d.digits.charAt(keep - 1)) : 0;
  const up = first > "5" || (first === "5" && (!exactHalf || last % 2 === 1));
  if (!up) return { digits: kept.replace(/0+$/, ""), point: d.point };
  // Add one at the last kept position, carrying.
  const chars = kept.split("");
  let i = chars.length - 1;
  while (i >= 0 && chars[i] === "9") { chars[i] = "0"; i--; }
  if (i < 0) return { digits: "1", point: d.point + 1 };
  chars[i] = String(Number(chars[i]) + 1);
  return { digits: chars.join("").replace(/0+$/, ""), point: d.point };
}

function padDigits(digits: string, from: number, count: number): string {
  let out = "";
  for (let i = from; i < from + count; i++) out += i >= 0 && i < digits.length ? digits.charAt(i) : "0";
  return out;
}

function expSuffix(exp: number, upper: boolean): string {
  const abs = Math.abs(exp);
  return `${upper ? "E" : "e"}${exp < 0 ? "-" : "+"}${abs < 10 ? "0" : ""}${abs}`;
}

/** %.<precision>f of a finite non-negative double. */
function fixed(x: number, precision: number, alt: boolean): string {
  if (x === 0) return precision > 0 || alt ? `0${".".padEnd(precision + 1, "0")}` : "0";
  const exact = exactDecimal(x);
  const r = roundDecimal(exact, exact.point + precision);
  const intPart = r.point > 0 ? padDigits(r.digits, 0, r.point) : "0";
  const fracPart = padDigits(r.digits, r.point, precision);
  return precision > 0 || alt ? `${intPart}.${fracPart}` : intPart;
}

/** %.<precision>e of a finite non-negative double. */
function scientific(x: number, precision: number, upper: boolean, alt: boolean): string {
  if (x === 0) return `0${precision > 0 || alt ? ".".padEnd(precision + 1, "0") : ""}${expSuffix(0, upper)}`;
  const r = roundDecimal(exactDecimal(x), precision + 1);
  const mantissa = padDigits(r.digits, 0, precision + 1);
  const dot = precision > 0 || alt ? "." : "";
  return `${mantissa.charAt(0)}${dot}${mantissa.slice(1)}${expSuffix(r.point - 1, upper)}`;
}

/** %.<precision>g of a finite non-negative double. */
function general(x: number, precision: number, upper: boolean, alt: boolean): string {
  const p = precision === 0 ? 1 : precision;
  const exp = x === 0 ? 0 : roundDecimal(exactDecimal(x), p).point - 1;
  let out = exp < -4 || exp >= p ? scientific(x, p - 1, upper, alt) : fixed(x, p - 1 - exp, alt);
  if (!alt) {
    // Without '#', %g drops trailing zeros of the fraction (and a bare dot).
    const e = out.search(/[eE]/);
    const body = e < 0 ? out : out.slice(0, e);
    const tail = e < 0 ? "" : out.slice(e);
    out = (body.includes(".") ? body.replace(/\.?0+$/, "") : body) + tail;
  }
  return out;
}

/** printf's %e %f %g (and upper-case forms) of any double, without width or flags. */
export function formatFloat(x: number, conversion: "e" | "E" | "f" | "F" | "g" | "G", precision = 6, alt = false): string {
  const upper = conversion === "E" || conversion === "G" || conversion === "F";
  if (Number.isNaN(x)) return `${negativeNaN(x) ? "-" : ""}${upper ? "NAN" : "nan"}`;
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  const a = Math.abs(x);
  if (a === Infinity) return `${sign}${upper ? "INF" : "inf"}`;
  switch (conversion) {
    case "f": case "F": return sign + fixed(a, precision, alt);
    case "e": case "E": return sign + scientific(a, precision, upper, alt);
    default: return sign + general(a, precision, upper, alt);
  }
}

/** How Lua 5.1 turns a number into a string (tostring, `..`): printf "%.14g". */
export function number2string(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e14 && !Object.is(x, -0)) return String(x);
  return formatFloat(x, "g", 14);
}
