/**
 * verifyAdapter, the adapter test kit of surelock/testing: the shipped adapters pass it on real
 * servers (standalone, with a replica, Cluster), MemoryRedis passes it, and adapters broken on
 * purpose, one promise of the contract at a time, fail it with that promise's check named.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Cluster, Redis } from "ioredis";
import { createClient, createCluster } from "redis";
import { isNoScript as endpointIsNoScript, toSurelockError } from "../../src/adapters/endpoint.js";
import { IoredisAdapter } from "../../src/adapters/ioredis.js";
import type { IoredisLike } from "../../src/adapters/ioredis-like.js";
import { NodeRedisAdapter } from "../../src/adapters/node-redis.js";
import type { NodeRedisClusterLike, NodeRedisLike } from "../../src/adapters/node-redis-like.js";
import { NodeRedisClusterAdapter } from "../../src/adapters/node-redis-cluster.js";
import { InvalidArgumentError, ScriptError, type AcknowledgedReply, type RedisAdapter, type RedisArg, type RedisSubscriber, type ReplicaWait } from "../../src/index.js";
import { isErrorReply, isNoScript } from "../../src/adapter-kit/error-replies.js";
import {
  AdapterVerificationError, MemoryRedis, verifyAdapter, type AdapterCheckName, type AdapterReport, type VerifyAdapterOptions,
} from "../../src/testing/index.js";
import { eventually } from "../helpers/fixtures.js";
import { startCluster, startStandalone, type ClusterSet, type RedisServer } from "../helpers/redis-topology.js";

const statusOf = (report: AdapterReport, check: AdapterCheckName): string | undefined => report.checks.find((c) => c.check === check)?.status;
const named = (report: AdapterReport, status: string): AdapterCheckName[] => report.checks.filter((c) => c.status === status).map((c) => c.check);

/** Every check passed, except those named in `skipped`, which were skipped. */
function assertPassed(report: AdapterReport, skipped: readonly AdapterCheckName[]): void {
  assert.equal(report.ok, true);
  assert.deepEqual(named(report, "failed"), []);
  assert.deepEqual(named(report, "skipped"), skipped, JSON.stringify(report.checks.filter((c) => c.status === "skipped")));
  assert.equal(report.checks.length, 17);
}

/** The checks verifyAdapter failed (it must reject with AdapterVerificationError). */
async function failures(adapter: RedisAdapter, options?: VerifyAdapterOptions): Promise<AdapterCheckName[]> {
  try {
    await verifyAdapter(adapter, options);
  } catch (error) {
    assert.ok(error instanceof AdapterVerificationError, String(error));
    assert.equal(error.code, "ERR_SURELOCK_ADAPTER_VERIFICATION");
    assert.equal(error.report.ok, false);
    assert.deepEqual(error.failures, error.report.checks.filter((c) => c.status === "failed"));
    for (const f of error.failures) assert.ok(error.message.includes(`${f.check}: `), `the message names ${f.check}`);
    return error.failures.map((f) => f.check);
  }
  assert.fail("verifyAdapter resolved for a broken adapter");
}

describe("verifyAdapter: the shipped adapters on a real server", () => {
  let server: RedisServer;
  const closers: (() => unknown)[] = [];
  before(async () => { server = await startStandalone(); });
  after(async () => {
    for (const close of closers.splice(0)) await close();
    await server.stop();
  });

  const ioredis = (keyPrefix?: string): IoredisAdapter => {
    const client = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1, ...(keyPrefix ? { keyPrefix } : {}) });
    client.on("error", () => {});
    closers.push(() => client.disconnect());
    return new IoredisAdapter(client as unknown as IoredisLike);
  };
  const nodeRedis = async (keyPrefix?: string): Promise<NodeRedisAdapter> => {
    const client = createClient({ socket: { host: server.host, port: server.port }, ...(keyPrefix ? { keyPrefix } : {}) });
    client.on("error", () => {});
    await client.connect();
    closers.push(() => client.destroy());
    return new NodeRedisAdapter(client as unknown as NodeRedisLike);
  };

  for (const prefix of [undefined, "app:"]) {
    const title = prefix ? ` with keyPrefix ${prefix}` : "";
    it(`ioredis${title}: every check passes (the subscriber's connection cut with CLIENT KILL)`, async () => {
      const report = await verifyAdapter(ioredis(prefix));
      assertPassed(report, ["cluster-routing"]);
      assert.equal(report.keyPrefix, prefix ?? "");
      assert.match(report.checks.find((c) => c.check === "reconnect")?.detail ?? "", /onReconnect\(\) was called/);
    });

    it(`node-redis${title}: every check passes`, async () => {
      const report = await verifyAdapter(await nodeRedis(prefix));
      assertPassed(report, ["cluster-routing"]);
      assert.equal(report.keyPrefix, prefix ?? "");
    });
  }

  it("leaves no key of its own behind, and surelock's keys all expire", async () => {
    await server.command("FLUSHALL");
    await verifyAdapter(ioredis(), { namespace: "kit-clean" });
    assert.deepEqual(await server.command("KEYS", "kit-clean:*"), [], "the checks' own keys are deleted");
    const left = (await server.command("KEYS", "*")) as string[];
    for (const key of left) {
      assert.ok(key.startsWith("kit-clean-"), `${key} is surelock's, under the run's prefix`);
      assert.ok(Number(await server.command("PTTL", key)) > 0, `${key} expires`);
    }
  });

  it("with a replica: commandThenWait's WAIT counts it (options.replicas)", async () => {
    const replica = await startStandalone();
    try {
      await replica.command("REPLICAOF", server.host, server.port);
      await eventually(async () => (await server.info("replication")).connected_slaves === "1", 10_000, "the replica to connect");
      for (const adapter of [ioredis(), await nodeRedis()]) {
        const report = await verifyAdapter(adapter, { replicas: 1 });
        assertPassed(report, ["cluster-routing"]);
        assert.match(report.checks.find((c) => c.check === "replica-wait")?.detail ?? "", /WAIT's count \(1 of 1 asked/);
      }
      // A replica the deployment does not have is a failure of the WAIT count.
      assert.deepEqual(await failures(ioredis(), { replicas: 2, skip: ["surelock"] }), ["replica-wait"]);
    } finally {
      await replica.stop();
    }
  });

  it("the node-redis adapter as it was before command(args, key) applied the prefix: key-prefix and surelock fail", async () => {
    const fixed = await nodeRedis("nr:");
    // command() sent as given (a standalone server needs no routing key): it reads the unprefixed key.
    const unfixed = wrap(fixed, { command: (args) => fixed.command(args) });
    assert.deepEqual(await failures(unfixed), ["key-prefix", "surelock"]);
  });
});

describe("verifyAdapter: the shipped Cluster adapters", () => {
  let cluster: ClusterSet;
  const closers: (() => unknown)[] = [];
  before(async () => { cluster = await startCluster({ primaries: 3 }); });
  after(async () => {
    for (const close of closers.splice(0)) await close();
    await cluster.stop();
  });
  // Cuts every pub/sub connection of the test's own Cluster (nothing else subscribes there).
  const dropSubscribers = async (): Promise<void> => {
    await Promise.all(cluster.primaries.map((p) => p.command("CLIENT", "KILL", "TYPE", "pubsub")));
  };

  it("ioredis Cluster: every check passes, the sharded subscriber's channels announced with \"*\" after a cut", async () => {
    const client = new Cluster(cluster.startupNodes(), { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on("error", () => {});
    closers.push(() => client.disconnect());
    const report = await verifyAdapter(new IoredisAdapter(client as unknown as IoredisLike), { dropSubscribers });
    assertPassed(report, []);
    assert.match(report.checks.find((c) => c.check === "reconnect")?.detail ?? "", /"\*" message came on every channel/);
  });

  it("node-redis Cluster: every check passes", async () => {
    const client = createCluster({ rootNodes: cluster.startupNodes().map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    client.on("error", () => {});
    await client.connect();
    closers.push(() => client.destroy());
    const report = await verifyAdapter(new NodeRedisClusterAdapter(client as unknown as NodeRedisClusterLike), { dropSubscribers });
    assertPassed(report, []);
  });
});

describe("verifyAdapter: MemoryRedis", () => {
  it("passes; without a way to cut its subscribers (no CLIENT LIST) the reconnect check is skipped, and says why", async () => {
    const report = await verifyAdapter(new MemoryRedis());
    assertPassed(report, ["cluster-routing", "reconnect", "replica-wait"]);
    assert.match(report.checks.find((c) => c.check === "reconnect")?.detail ?? "", /CLIENT LIST failed.*dropSubscribers/);
    assert.match(report.checks.find((c) => c.check === "replica-wait")?.detail ?? "", /no commandThenWait/);
  });

  it("passes the reconnect check with options.dropSubscribers", async () => {
    const redis = new MemoryRedis();
    const report = await verifyAdapter(redis, { dropSubscribers: () => redis.dropSubscribers() });
    assertPassed(report, ["cluster-routing", "replica-wait"]);
    assert.equal(statusOf(report, "reconnect"), "passed");
  });

  it("options.skip and dropSubscribers: false skip checks, and say so", async () => {
    const report = await verifyAdapter(new MemoryRedis(), { skip: ["surelock", "concurrency"], dropSubscribers: false });
    assertPassed(report, ["concurrency", "cluster-routing", "reconnect", "replica-wait", "surelock"]);
    assert.equal(report.checks.find((c) => c.check === "surelock")?.detail, "options.skip");
  });
});

// ---------------------------------------------------------------------------------------------
// Broken adapters

interface Overrides {
  name?: unknown;
  cluster?: unknown;
  evalsha?: RedisAdapter["evalsha"];
  eval?: RedisAdapter["eval"];
  command?: RedisAdapter["command"];
  createSubscriber?: RedisAdapter["createSubscriber"] | undefined;
  commandThenWait?: RedisAdapter["commandThenWait"];
  /** Replaces every reply of evalsha, eval and command. */
  reply?: (value: unknown) => unknown;
  /** Replaces every rejection of evalsha, eval and command. */
  rejection?: (error: unknown) => Promise<unknown>;
}

/** `base` with some members replaced: one broken promise of the contract at a time. */
function wrap(base: RedisAdapter, o: Overrides): RedisAdapter {
  const settle = (p: Promise<unknown>): Promise<unknown> => {
    const replied = o.reply ? p.then(o.reply) : p;
    return o.rejection ? replied.catch(o.rejection) : replied;
  };
  const adapter = {
    name: "name" in o ? o.name : base.name,
    cluster: "cluster" in o ? o.cluster : base.cluster,
    evalsha: (sha: string, keys: readonly string[], args: readonly RedisArg[]) => settle((o.evalsha ?? base.evalsha.bind(base))(sha, keys, args)),
    eval: (script: string, keys: readonly string[], args: readonly RedisArg[]) => settle((o.eval ?? base.eval.bind(base))(script, keys, args)),
    command: (args: readonly RedisArg[], key?: string) => settle((o.command ?? base.command.bind(base))(args, key)),
    createSubscriber: "createSubscriber" in o ? o.createSubscriber : () => base.createSubscriber(),
    ...(o.commandThenWait ? { commandThenWait: o.commandThenWait } : {}),
  };
  return adapter as RedisAdapter;
}

/** A subscriber with some members replaced. */
function wrapSubscriber(base: RedisSubscriber, o: Partial<RedisSubscriber>): RedisSubscriber {
  return {
    subscribe: o.subscribe ?? ((c) => base.subscribe(c)),
    unsubscribe: o.unsubscribe ?? ((c) => base.unsubscribe(c)),
    onMessage: o.onMessage ?? ((h) => base.onMessage(h)),
    onReconnect: o.onReconnect ?? ((h) => base.onReconnect(h)),
    close: o.close ?? (() => base.close()),
  };
}

/** A client-side key prefix done by an adapter (as ioredis' keyPrefix), with `broken` parts of it left out. */
function prefixing(base: MemoryRedis, prefix: string, broken: "first-key-only" | "command" | "channels"): RedisAdapter {
  const keysOf = (keys: readonly string[]): string[] => keys.map((k, i) => (broken === "first-key-only" && i > 0 ? k : prefix + k));
  return wrap(base, {
    evalsha: (sha, keys, args) => base.evalsha(sha, keysOf(keys), args),
    eval: (script, keys, args) => base.eval(script, keysOf(keys), args),
    command: (args, key) => base.command(broken === "command" || key === undefined || args[1] !== key ? args : [args[0] as RedisArg, prefix + key, ...args.slice(2)]),
    createSubscriber: async () => {
      const s = await base.createSubscriber();
      return wrapSubscriber(s, {
        subscribe: (c) => s.subscribe(prefix + c),
        unsubscribe: (c) => s.unsubscribe(prefix + c),
        // "channels": the prefix is not taken off the channels of delivered messages.
        onMessage: (h) => s.onMessage((c, m) => h(broken === "channels" ? c : c.slice(prefix.length), m)),
      });
    },
  });
}

/** WAIT through command() after the write, as a commandThenWait would do it on one connection. */
const thenWait = (base: RedisAdapter, acknowledged: (n: unknown) => unknown) =>
  async (args: readonly RedisArg[], _key: string | undefined, wait: ReplicaWait): Promise<AcknowledgedReply> => {
    const reply = await base.command(args);
    return { reply, acknowledged: acknowledged(await base.command(["WAIT", wait.replicas, wait.timeoutMs])) as number };
  };

describe("verifyAdapter: adapters broken on purpose fail the check of the promise they break", () => {
  const fast = { timeoutMs: 300 };
  const cases: { title: string; make: (base: MemoryRedis) => RedisAdapter; options?: VerifyAdapterOptions; failed: AdapterCheckName[] }[] = [
    {
      title: "integer replies handed over as strings: arguments, reply-types, and everything that counts subscribers or parses a script's reply",
      make: (base) => {
        return wrap(base, { reply: function strings(v: unknown): unknown { return typeof v === "number" ? String(v) : Array.isArray(v) ? v.map(strings) : v; } });
      },
      failed: ["arguments", "reply-types", "subscribe", "unsubscribe", "reconnect", "close", "surelock"],
    },
    {
      title: "numbers sent in exponent notation: arguments, and surelock (its deadlines are large numbers)",
      make: (base) => {
        const text = (args: readonly RedisArg[]): RedisArg[] => args.map((a) => (typeof a === "number" && Math.abs(a) > 1e6 ? a.toExponential() : a));
        return wrap(base, { eval: (s, k, a) => base.eval(s, k, text(a)), evalsha: (s, k, a) => base.evalsha(s, k, text(a)) });
      },
      failed: ["arguments", "surelock"],
    },
    {
      title: "error replies rewrapped without their code: error-replies, noscript, and surelock (no fallback to EVAL)",
      make: (base) => wrap(base, { rejection: (e) => Promise.reject(new Error(`command failed (${String(e).length} chars)`)) }),
      failed: ["error-replies", "noscript", "surelock"],
    },
    {
      title: "error replies resolved as Error objects instead of rejected: error-replies, noscript, surelock",
      make: (base) => wrap(base, { rejection: async (e) => e }),
      failed: ["error-replies", "noscript", "surelock"],
    },
    {
      title: "eval rewrites the script (so EVALSHA of its SHA1 never finds it): evalsha, and concurrency (which runs it by EVALSHA)",
      make: (base) => {
        return wrap(base, { eval: (script, keys, args) => base.eval(`${script}\n`, keys, args) });
      },
      failed: ["evalsha", "concurrency"],
    },
    {
      title: "evalsha never answers: noscript, evalsha, concurrency and surelock fail at the step deadline instead of hanging",
      make: (base) => wrap(base, { evalsha: () => new Promise(() => {}) }),
      options: fast,
      failed: ["noscript", "evalsha", "concurrency", "surelock"],
    },
    {
      title: "one pending reply slot shared by every call (replies cross when calls overlap): concurrency",
      make: (base) => {
        let last: ((v: unknown) => void) | undefined;
        return wrap(base, {
          command: (args) => new Promise((resolve, reject) => {
            last = resolve;
            base.command(args).then((v) => last?.(v), reject);
          }),
        });
      },
      options: { ...fast, skip: ["surelock"] },
      failed: ["concurrency"],
    },
    {
      title: "a key prefix on the first of the KEYS only: key-prefix",
      make: (base) => prefixing(base, "app:", "first-key-only"),
      failed: ["key-prefix"],
    },
    {
      title: "a key prefix on script KEYS but not on command(args, key): key-prefix and surelock (the guard's highest token)",
      make: (base) => prefixing(base, "app:", "command"),
      failed: ["key-prefix", "surelock"],
    },
    {
      title: "a key prefix left on delivered channel names: subscribe, unsubscribe and reconnect (which wait for messages on their channels)",
      make: (base) => prefixing(base, "app:", "channels"),
      options: fast,
      failed: ["subscribe", "unsubscribe", "reconnect"],
    },
    {
      title: "subscribe() resolving before the server confirmed: subscribe",
      make: (base) => {
        return wrap(base, {
          createSubscriber: async () => {
            const s = await base.createSubscriber();
            return wrapSubscriber(s, { subscribe: async (c) => { s.subscribe(c).catch(() => {}); } });
          },
        });
      },
      failed: ["subscribe"],
    },
    {
      title: "a reconnect announced by nobody (no onReconnect, no \"*\"): reconnect",
      make: (base) => {
        return wrap(base, { createSubscriber: async () => wrapSubscriber(await base.createSubscriber(), { onReconnect: () => {} }) });
      },
      failed: ["reconnect"],
    },
    {
      title: "channels not subscribed again after a reconnect: reconnect",
      make: (base) => {
        return wrap(base, {
          createSubscriber: async () => {
            const s = await base.createSubscriber();
            const channels = new Set<string>();
            return wrapSubscriber(s, {
              subscribe: (c) => { channels.add(c); return s.subscribe(c); },
              // The connection came back without its subscriptions.
              onReconnect: (h) => s.onReconnect(() => { void Promise.all([...channels].map((c) => s.unsubscribe(c))).then(h); }),
            });
          },
        });
      },
      options: fast,
      failed: ["reconnect"],
    },
    {
      title: "cluster: true on a standalone server: cluster-flag, and the sharded wake-ups it implies reach nobody (surelock's waiter too)",
      make: (base) => wrap(base, { cluster: true }),
      options: fast,
      failed: ["cluster-flag", "subscribe", "unsubscribe", "reconnect", "surelock"],
    },
    {
      title: "commandThenWait answering WAIT's count as a string: replica-wait",
      make: (base) => {
        return wrap(base, { commandThenWait: thenWait(base, String) });
      },
      failed: ["replica-wait"],
    },
    {
      title: "no createSubscriber: shape fails and nothing else runs",
      make: (base) => wrap(base, { createSubscriber: undefined }),
      failed: ["shape"],
    },
  ];

  for (const c of cases) {
    it(c.title, async () => {
      const base = new MemoryRedis();
      // The reconnect check cuts the subscribers of the MemoryRedis underneath.
      const options: VerifyAdapterOptions = { dropSubscribers: () => base.dropSubscribers(), ...c.options };
      assert.deepEqual(await failures(c.make(base), options), c.failed);
    });
  }

  it("the report says what went wrong, in the check's detail", async () => {
    try {
      await verifyAdapter(prefixing(new MemoryRedis(), "app:", "command"), { skip: ["surelock"] });
      assert.fail("resolved");
    } catch (error) {
      assert.ok(error instanceof AdapterVerificationError);
      assert.match(error.failures[0]?.detail ?? "", /command\(\["HGET", key, "f"\], key\) answered null/);
    }
  });
});

describe("verifyAdapter: arguments", () => {
  it("rejects with InvalidArgumentError naming the argument, before any I/O", async () => {
    const redis = new MemoryRedis();
    let calls = 0;
    redis.intercept(() => { calls++; return undefined; });
    const bad: [unknown, unknown, string][] = [
      [null, undefined, "adapter"],
      ["redis://localhost", undefined, "adapter"],
      [redis, "fast", "options"],
      [redis, { timeout: 5 }, "options.timeout"],
      [redis, { timeoutMs: 0 }, "options.timeoutMs"],
      [redis, { timeoutMs: 1.5 }, "options.timeoutMs"],
      [redis, { namespace: "{x}" }, "options.namespace"],
      [redis, { namespace: "" }, "options.namespace"],
      [redis, { namespace: "\ud800" }, "options.namespace"],
      [redis, { replicas: -1 }, "options.replicas"],
      [redis, { dropSubscribers: true }, "options.dropSubscribers"],
      [redis, { skip: ["nonsense"] }, "options.skip"],
    ];
    for (const [adapter, options, argument] of bad) {
      await assert.rejects(verifyAdapter(adapter as RedisAdapter, options as VerifyAdapterOptions), (e: unknown) =>
        e instanceof InvalidArgumentError && e.argument === argument && e.value === (argument === "adapter" ? adapter : argument === "options" ? options : (options as Record<string, unknown>)[argument.slice("options.".length)]));
    }
    assert.equal(calls, 0, "nothing was sent");
  });
});

describe("the kit reads rejections as surelock's endpoint does", () => {
  it("NOSCRIPT and error-reply recognition agree with src/adapters/endpoint.ts on every shape clients give", () => {
    const named = (name: string, message: string): Error => Object.assign(new Error(message), { name });
    const samples: unknown[] = [
      new Error("NOSCRIPT No matching script. Please use EVAL."),
      named("ReplyError", "NOSCRIPT No matching script. Please use EVAL."),
      new Error("NoScriptError: No matching script"),
      named("NoScriptError", "script missing"),
      new Error("ERR wrong number of arguments for 'echo' command"),
      named("ReplyError", "WRONGTYPE Operation against a key holding the wrong kind of value"),
      named("SimpleError", "oops"),
      named("ErrorReply", "something"),
      new Error("SLCHECK an error reply"),
      new Error("ReplyError: READONLY You can't write against a read only replica."),
      new Error("Connection is closed."),
      new Error("read ECONNRESET"),
      new Error("command failed"),
      "NOSCRIPT as a string",
      42,
    ];
    for (const sample of samples) {
      assert.equal(isNoScript(sample), endpointIsNoScript(sample), `isNoScript(${String(sample)})`);
      const asSurelock = toSurelockError(sample, "test");
      // The endpoint's error-reply branch: ScriptError, or a transient reply's ConnectionError whose message names the reply.
      const endpointSaysReply = asSurelock instanceof ScriptError || /^test failed: (?:[A-Za-z]+Error: )?[A-Z][A-Z_]+(?:\s|$)/.test(asSurelock.message);
      assert.equal(isErrorReply(sample), endpointSaysReply, `isErrorReply(${String(sample)})`);
    }
  });
});
