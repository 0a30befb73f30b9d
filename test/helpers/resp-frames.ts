/**
 * RESP framing for a proxy: cuts a byte stream into whole values (one command from a client, one
 * reply from a server) without decoding bulk payloads, and decodes a command frame's arguments
 * when a fault needs them. RESP2 plus the RESP3 types, so a HELLO 3 client does not confuse it.
 */

const CR = 13;

/** Index just past the value that starts at `pos`, or -1 if the bytes so far end inside it. */
export function frameEnd(buf: Buffer, pos: number): number {
  if (pos >= buf.length) return -1;
  const eol = buf.indexOf("\r\n", pos, "latin1");
  if (eol === -1) return -1;
  const next = eol + 2;
  const type = String.fromCharCode(buf[pos] as number);
  switch (type) {
    case "+": case "-": case ":": case ",": case "#": case "_": case "(":
      return next;
    case "$": case "!": case "=": {
      const len = lengthOf(buf, pos, eol);
      if (len < 0) return next; // null bulk string
      const end = next + len + 2;
      return end <= buf.length ? end : -1;
    }
    case "*": case "~": case ">": case "%": case "|": {
      const n = lengthOf(buf, pos, eol);
      if (n < 0) return next; // null array
      const items = type === "%" || type === "|" ? n * 2 : n;
      let p = next;
      for (let i = 0; i < items; i++) {
        p = frameEnd(buf, p);
        if (p === -1) return -1;
      }
      return p;
    }
    default:
      // An inline command ("PING\r\n"): a whole line. Replies never look like this.
      return next;
  }
}

function lengthOf(buf: Buffer, pos: number, eol: number): number {
  const text = buf.toString("latin1", pos + 1, eol);
  const n = Number(text);
  if (!Number.isInteger(n)) throw new Error(`RESP: bad length ${JSON.stringify(text)}`);
  return n;
}

/** Accumulates chunks and hands out whole frames, in order. */
export class RespFrames {
  #buf: Buffer = Buffer.alloc(0);

  /** Frames completed by `chunk`; the rest stays buffered. Throws on a malformed stream. */
  push(chunk: Buffer): Buffer[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const frames: Buffer[] = [];
    let start = 0;
    for (;;) {
      const end = frameEnd(this.#buf, start);
      if (end === -1) break;
      frames.push(this.#buf.subarray(start, end));
      start = end;
    }
    this.#buf = this.#buf.subarray(start);
    return frames;
  }

  /** Bytes of an incomplete frame still waiting for the rest. */
  get pending(): Buffer {
    return this.#buf;
  }
}

/**
 * The arguments of a command frame (an array of bulk strings, or an inline line), as strings.
 * `limit` stops after that many arguments: a fault needs the name, the script and a key or two.
 */
export function commandArgs(frame: Buffer, limit = Infinity): string[] {
  if (frame[0] !== 0x2a /* '*' */) {
    const line = frame.toString("utf8").replace(/\r\n$/, "");
    return line.split(" ").filter(Boolean).slice(0, limit);
  }
  const eol = frame.indexOf("\r\n", 0, "latin1");
  const n = lengthOf(frame, 0, eol);
  const args: string[] = [];
  let p = eol + 2;
  for (let i = 0; i < n && i < limit; i++) {
    if (frame[p] !== 0x24 /* '$' */) throw new Error("RESP: a command argument is not a bulk string");
    const lineEnd = frame.indexOf("\r\n", p, "latin1");
    const len = lengthOf(frame, p, lineEnd);
    const start = lineEnd + 2;
    args.push(frame.toString("utf8", start, start + len));
    p = start + len + 2;
    if (frame[p - 2] !== CR) throw new Error("RESP: bulk string not terminated");
  }
  return args;
}

/** Encodes a command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly (string | number)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const b = Buffer.from(String(arg));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}
