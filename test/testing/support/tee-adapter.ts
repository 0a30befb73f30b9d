/**
 * A RedisAdapter that sends every call through a Differential: the command runs on the real
 * server and on MemoryRedis, the two must agree, and surelock gets the real reply (shaped as
 * ioredis shapes it). Calls are serialized, so each one is one comparable step. Wake-ups come
 * from the real server; the in-memory servers get matching subscriptions so PUBLISH counts agree.
 */
import { Redis } from "ioredis";
import { IoredisAdapter } from "../../../src/adapters/ioredis.js";
import type { RedisAdapter, RedisArg, RedisSubscriber } from "../../../src/adapters/types.js";
import type { Differential } from "./differential.js";
import { bytes, type Wire } from "./resp-client.js";

const text = (s: string): string => Buffer.from(s, "latin1").toString("utf8");

function toJs(w: Wire): unknown {
  if (typeof w === "string") return text(w);
  if (Array.isArray(w)) return w.map(toJs);
  if (w !== null && typeof w === "object") return "status" in w ? w.status : new Error(text(w.error));
  return w;
}

export class TeeAdapter implements RedisAdapter {
  readonly name = "tee";
  readonly cluster = false;
  readonly #d: Differential;
  #tail: Promise<unknown> = Promise.resolve();
  /** Steps that failed to agree (surelock swallows some errors, so they are kept here too). */
  readonly disagreements: Error[] = [];
  readonly #clients: Redis[] = [];

  constructor(d: Differential) {
    this.#d = d;
  }

  /** Runs `fn` after every call queued before it. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(fn, fn);
    this.#tail = run.catch(() => {});
    return run;
  }

  evalsha(sha: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.command(["EVALSHA", sha, keys.length, ...keys, ...args]);
  }

  eval(script: string, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    return this.command(["EVAL", script, keys.length, ...keys, ...args]);
  }

  command(args: readonly RedisArg[]): Promise<unknown> {
    // surelock asks a server's version once; two different servers describe themselves differently.
    if (String(args[0]).toUpperCase() === "INFO") return Promise.resolve(`# Server\r\nredis_version:${this.#d.version}\r\n`);
    return this.#serial(async () => {
      let outcome;
      try {
        outcome = await this.#d.step(args.map((a) => bytes(String(a))), "surelock");
      } catch (error) {
        this.disagreements.push(error as Error);
        throw error;
      }
      const reply = toJs(outcome.real);
      if (reply instanceof Error) throw reply;
      return reply;
    });
  }

  async createSubscriber(): Promise<RedisSubscriber> {
    const client = new Redis({ port: this.#d.server.port, host: "127.0.0.1", lazyConnect: false });
    this.#clients.push(client);
    const real = await new IoredisAdapter(client).createSubscriber();
    return {
      subscribe: (channel) => this.#serial(async () => {
        await real.subscribe(channel);
        this.#d.listenInMemory(bytes(channel), true);
      }),
      unsubscribe: (channel) => this.#serial(async () => {
        await real.unsubscribe(channel);
        this.#d.listenInMemory(bytes(channel), false);
      }),
      onMessage: (handler) => real.onMessage(handler),
      onReconnect: (handler) => real.onReconnect(handler),
      close: () => real.close(),
    };
  }

  close(): void {
    for (const c of this.#clients) c.disconnect();
  }
}
