/** Stream commands, the simple part: XADD (auto or explicit id, NOMKSTREAM, exact MAXLEN), XLEN, XRANGE. */
import { command, type CommandContext, type CommandSpec } from "../command.js";
import type { Stream, StreamEntry } from "../keyspace.js";
import { parseInteger } from "../parse.js";
import { ERR, fail, type Reply } from "../reply.js";

const INVALID_ID = "ERR Invalid stream ID specified as stream command argument";
const MAX_SEQ = 2 ** 64 - 1;

interface Id {
  ms: number;
  seq: number | undefined;
}

function parseId(text: string, allowAutoSeq: boolean): Id {
  const m = /^(\d+)(?:-(\d+|\*))?$/.exec(text);
  if (!m) fail(INVALID_ID);
  const [, ms, seq] = m as RegExpExecArray;
  if (seq === "*" && !allowAutoSeq) fail(INVALID_ID);
  return { ms: Number(ms), seq: seq === undefined || seq === "*" ? undefined : Number(seq) };
}

const less = (a: { ms: number; seq: number }, b: { ms: number; seq: number }): boolean => a.ms < b.ms || (a.ms === b.ms && a.seq < b.seq);
const idText = (e: { ms: number; seq: number }): string => `${e.ms}-${e.seq}`;

function xadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1] as string;
  let i = 2;
  let noMakeStream = false;
  let maxLen: number | undefined;
  for (;;) {
    const opt = (argv[i] as string).toUpperCase();
    if (opt === "NOMKSTREAM") { noMakeStream = true; i++; continue; }
    if (opt === "MAXLEN") {
      let value = argv[i + 1];
      if (value === "=") { i++; value = argv[i + 1]; }
      if (value === "~") fail("ERR MemoryRedis supports only exact trimming (MAXLEN n or MAXLEN = n)");
      if (value === undefined) fail(ERR.syntax);
      maxLen = parseInteger(value as string);
      if (maxLen < 0) fail("ERR The MAXLEN argument must be >= 0.");
      i += 2;
      continue;
    }
    break;
  }
  const idArg = argv[i] as string;
  const fields = argv.slice(i + 1);
  if (fields.length === 0 || fields.length % 2 !== 0) fail("ERR wrong number of arguments for 'xadd' command");
  const requested = idArg === "*" ? undefined : parseId(idArg, true);
  const existing = ctx.ks.get(key, "stream");
  if (!existing && noMakeStream) return null;
  const stream: Stream = existing?.data ?? { entries: [], last: { ms: 0, seq: 0 } };
  let id: { ms: number; seq: number };
  if (!requested) {
    const now = ctx.now();
    id = now > stream.last.ms ? { ms: now, seq: 0 } : { ms: stream.last.ms, seq: stream.last.seq + 1 };
    if (id.seq > MAX_SEQ) fail("ERR The stream has exhausted the last possible ID, unable to add more items");
  } else {
    const seq = requested.seq ?? (requested.ms === stream.last.ms ? stream.last.seq + 1 : 0);
    id = { ms: requested.ms, seq };
    if (id.ms === 0 && id.seq === 0) fail("ERR The ID specified in XADD must be greater than 0-0");
    if (!less(stream.last, id)) fail("ERR The ID specified in XADD is equal or smaller than the target stream top item");
  }
  if (!existing) ctx.ks.put(key, { type: "stream", data: stream });
  stream.entries.push({ ...id, fields });
  stream.last = id;
  if (maxLen !== undefined && stream.entries.length > maxLen) stream.entries.splice(0, stream.entries.length - maxLen);
  return idText(id);
}

function bound(text: string, start: boolean): { ms: number; seq: number } {
  if (text === "-") return { ms: 0, seq: 0 };
  if (text === "+") return { ms: Number.MAX_SAFE_INTEGER, seq: MAX_SEQ };
  const exclusive = text.startsWith("(");
  const id = parseId(exclusive ? text.slice(1) : text, false);
  const full = { ms: id.ms, seq: id.seq ?? (start ? 0 : MAX_SEQ) };
  if (!exclusive) return full;
  return start ? { ms: full.ms, seq: full.seq + 1 } : { ms: full.ms, seq: full.seq - 1 };
}

export const streamCommands: CommandSpec[] = [
  command("xadd", -5, xadd, ["write"]),
  command("xlen", 2, (ctx, [, key]) => ctx.ks.get(key as string, "stream")?.data.entries.length ?? 0),
  command("xrange", -4, (ctx, argv) => {
    const [, key, startText, endText] = argv as [string, string, string, string];
    let count = Infinity;
    if (argv.length === 6 && (argv[4] as string).toUpperCase() === "COUNT") count = Math.max(0, parseInteger(argv[5] as string));
    else if (argv.length !== 4) fail(ERR.syntax);
    const start = bound(startText, true);
    const end = bound(endText, false);
    const s = ctx.ks.get(key, "stream");
    if (!s) return [];
    const out: Reply[] = [];
    for (const e of s.data.entries as StreamEntry[]) {
      if (out.length >= count) break;
      if (less(e, start) || less(end, e)) continue;
      out.push([idText(e), [...e.fields]]);
    }
    return out;
  }),
];
