/** Reading command arguments the way Redis does (string2ll, strtod) and printing doubles. */
import { ERR, fail } from "./reply.js";

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** Redis's string2ll: an optional '-', digits without leading zeros, within 64 bits. */
export function parseInt64(s: string, message: string = ERR.notInteger): bigint {
  if (!/^(0|-?[1-9][0-9]*)$/.test(s)) fail(message);
  const n = BigInt(s);
  if (n < INT64_MIN || n > INT64_MAX) fail(message);
  return n;
}

/** A 64-bit integer argument as a number (counts, offsets, ttls). */
export const parseInteger = (s: string, message?: string): number => Number(parseInt64(s, message));

export const inInt64 = (n: bigint): boolean => n >= INT64_MIN && n <= INT64_MAX;

/** Redis's string2d: all of the text must be a number for strtod, no leading space, not NaN. */
export function parseDouble(s: string, message: string = ERR.notFloat): number {
  const value = strtodWhole(s);
  if (value === undefined || Number.isNaN(value)) fail(message);
  return value as number;
}

function strtodWhole(s: string): number | undefined {
  if (s === "" || /^\s/.test(s)) return undefined;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  const special = /^([+-]?)(inf|infinity)$/i.exec(s);
  if (special) return special[1] === "-" ? -Infinity : Infinity;
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]+)$/.exec(s);
  if (hex) return (hex[1] === "-" ? -1 : 1) * Number(BigInt(`0x${hex[2]}`));
  return undefined;
}

/** A score range bound: "(x" is exclusive. */
export interface Bound {
  readonly value: number;
  readonly exclusive: boolean;
}

export function parseBound(s: string): Bound {
  const exclusive = s.startsWith("(");
  const value = strtodWhole(exclusive ? s.slice(1) : s);
  if (value === undefined || Number.isNaN(value)) fail(ERR.minMaxNotFloat);
  return { value: value as number, exclusive };
}

/** How a server of `version` prints a double in a reply (ZSCORE, WITHSCORES, Lua numbers sent to commands). */
export function formatDouble(d: number, shortest: boolean): string {
  if (d === Infinity) return "inf";
  if (d === -Infinity) return "-inf";
  if (!shortest) return printG17(d);
  // 7.2 and later print the shortest text that reads back as the same double.
  if (Object.is(d, -0)) return "-0";
  const text = String(d);
  return text.includes("e") ? text.replace(/e([+-])(\d)$/, "e$10$2") : text;
}

/** C's printf("%.17g", d): what Redis before 7.2 prints. */
function printG17(d: number): string {
  if (Number.isNaN(d)) return "nan";
  if (d === 0) return Object.is(d, -0) ? "-0" : "0";
  const [digits = "", exp = "0"] = d.toExponential(16).split("e");
  const e = Number(exp);
  const trim = (s: string): string => (s.includes(".") ? s.replace(/\.?0+$/, "") : s);
  if (e < -4 || e >= 17) return `${trim(digits)}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  return trim(d.toFixed(16 - e));
}
