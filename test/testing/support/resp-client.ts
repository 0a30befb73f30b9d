/**
 * A persistent RESP2 connection that keeps every distinction a reply makes (status vs bulk,
 * nested errors, nil) and reads bulk strings as byte strings, so replies of a real server can
 * be compared with MemoryRedis's own, byte for byte.
 */
import net from "node:net";
import { ErrorReply, StatusReply, type Reply } from "../../../src/testing/redis/reply.js";

/** A reply in a form both sides share (and deepStrictEqual can compare). */
export type Wire = string | number | null | { status: string } | { error: string } | Wire[];

export function wireOf(reply: Reply): Wire {
  if (reply instanceof StatusReply) return { status: reply.status };
  if (reply instanceof ErrorReply) return { error: reply.message };
  if (Array.isArray(reply)) return reply.map(wireOf);
  return reply as string | number | null;
}

/** A JavaScript string as the bytes a client sends (UTF-8), one char per byte. */
export const bytes = (s: string): string => Buffer.from(s, "utf8").toString("latin1");

function encode(argv: readonly string[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${argv.length}\r\n`)];
  for (const a of argv) {
    const b = Buffer.from(a, "latin1");
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

function parse(buf: Buffer, pos: number): { value: Wire; pos: number } | undefined {
  const eol = buf.indexOf("\r\n", pos);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[pos] as number);
  const line = buf.toString("latin1", pos + 1, eol);
  const next = eol + 2;
  switch (type) {
    case "+": return { value: { status: line }, pos: next };
    case "-": return { value: { error: line }, pos: next };
    case ":": return { value: Number(line), pos: next };
    case "$": {
      const len = Number(line);
      if (len < 0) return { value: null, pos: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString("latin1", next, next + len), pos: next + len + 2 };
    }
    case "*": {
      const n = Number(line);
      if (n < 0) return { value: null, pos: next };
      const items: Wire[] = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const r = parse(buf, p);
        if (!r) return undefined;
        items.push(r.value);
        p = r.pos;
      }
      return { value: items, pos: p };
    }
    default: throw new Error(`unexpected RESP byte ${JSON.stringify(type)}`);
  }
}

export class RespClient {
  readonly #socket: net.Socket;
  #buffer: Buffer = Buffer.alloc(0);
  readonly #waiting: { resolve: (w: Wire) => void; reject: (e: Error) => void }[] = [];

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on("data", (chunk) => this.#read(chunk));
    socket.on("error", (e) => this.#failAll(e));
    socket.on("close", () => this.#failAll(new Error("connection closed")));
  }

  static connect(port: number): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port }, () => resolve(new RespClient(socket)));
      socket.once("error", reject);
    });
  }

  /** Sends one command (arguments are byte strings) and resolves with its reply. */
  send(argv: readonly string[]): Promise<Wire> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#socket.write(encode(argv));
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  #read(chunk: Buffer): void {
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : chunk;
    for (;;) {
      const r = parse(this.#buffer, 0);
      if (!r) return;
      this.#buffer = this.#buffer.subarray(r.pos);
      this.#waiting.shift()?.resolve(r.value);
    }
  }

  #failAll(error: Error): void {
    for (const w of this.#waiting.splice(0)) w.reject(error);
  }
}
