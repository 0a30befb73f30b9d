// The CLI's pure helpers, in process: durations, Redis globs, URLs and key-name parsing.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseRedisUrl } from "../../src/cli/connection.js";
import { formatDuration, parseDuration } from "../../src/cli/duration.js";
import { escapeGlob, globToRegExp } from "../../src/cli/glob.js";
import { parseName } from "../../src/cli/list.js";
import { KeySpace } from "../../src/keys.js";

void describe("parseDuration", () => {
  const ms = (text: string): number | undefined => {
    const parsed = parseDuration(text);
    return "ms" in parsed ? parsed.ms : undefined;
  };
  const error = (text: string): string => {
    const parsed = parseDuration(text);
    return "error" in parsed ? parsed.error : `parsed as ${parsed.ms} ms`;
  };

  void it("reads ms, s, m and h, and a bare 0", () => {
    assert.equal(ms("500ms"), 500);
    assert.equal(ms("30s"), 30_000);
    assert.equal(ms("2m"), 120_000);
    assert.equal(ms("1h"), 3_600_000);
    assert.equal(ms("0"), 0);
    assert.equal(ms("0s"), 0);
    assert.equal(ms("1.5s"), 1_500);
    assert.equal(ms("1.1s"), 1_100, "no floating-point residue");
  });

  void it("refuses a number without a unit, and suggests the likely one", () => {
    assert.match(error("10"), /needs a unit \(ms, s, m or h\): did you mean 10s\?/);
    assert.match(error("5"), /did you mean 5s\?/);
    assert.match(error("2.5"), /did you mean 2\.5s\?/);
    assert.match(error("30000"), /did you mean 30000ms\?/);
  });

  void it("rejects anything else instead of guessing", () => {
    for (const text of ["", "s", "abc", "-1", "1.5ms", "10 s", "10S", "1e3", "1d", " 5", "3000000000ms", "600h"]) {
      assert.equal(ms(text), undefined, text);
    }
    assert.match(error("1.5ms"), /whole number of milliseconds/);
    assert.match(error("600h"), /at most 596 h 31 min/);
  });

  void it("formatDuration reads like a person would say it", () => {
    assert.equal(formatDuration(850), "850 ms");
    assert.equal(formatDuration(29_840), "29.8 s");
    assert.equal(formatDuration(59_990), "1 min");
    assert.equal(formatDuration(250_000), "4 min 10 s");
    assert.equal(formatDuration(7_500_000), "2 h 5 min");
  });
});

void describe("globToRegExp (Redis glob syntax)", () => {
  const matches = (pattern: string, text: string) => globToRegExp(pattern).test(text);

  void it("* and ? match runs and single characters, anchored at both ends", () => {
    assert.ok(matches("orders:*", "orders:42"));
    assert.ok(matches("*", ""));
    assert.ok(!matches("orders:*", "my-orders:42"));
    assert.ok(matches("a?c", "abc"));
    assert.ok(!matches("a?c", "ac"));
  });

  void it("classes take ranges, negation and escapes; a reversed range is the same range", () => {
    assert.ok(matches("[dp]*", "doc"));
    assert.ok(matches("[^a-c]x", "dx"));
    assert.ok(!matches("[^a-c]x", "bx"));
    assert.ok(matches("[z-a]", "m"));
    assert.ok(matches("[a\\]]", "]"));
    assert.ok(matches("[-]", "-"));
  });

  void it("a backslash escapes, and RegExp syntax in a pattern is literal", () => {
    assert.ok(matches("a\\*b", "a*b"));
    assert.ok(!matches("a\\*b", "axb"));
    assert.ok(matches("(x)|y.+{2}", "(x)|y.+{2}"));
    assert.ok(matches("a[", "a["), "an unterminated class is a plain [");
    assert.ok(matches("no-such-*", "no-such-key"));
  });

  void it("escapeGlob makes a text match only itself", () => {
    const text = "we*ird?[x]\\";
    assert.ok(globToRegExp(escapeGlob(text)).test(text));
    assert.ok(!globToRegExp(escapeGlob(text)).test("weXird?[x]\\"));
  });
});

void describe("parseName", () => {
  const keys = new KeySpace("app");

  void it("recognises where every kind keeps its holds and gives back the user key", () => {
    for (const [key, space, name] of [
      ["orders:42", "mutex", keys.exclusive("orders:42").lock],
      ["doc", "rw", keys.shared("doc", "rw").holders],
      ["pdf", "sem", keys.shared("pdf", "sem").holders],
      ["odd}:lock{", "mutex", keys.exclusive("odd}:lock{").lock],
      ["jobs", "election", keys.exclusive("jobs", "election").lock],
      ["batch:7", "latch", keys.latch("batch:7").state],
      ["election:{x}", "mutex", keys.exclusive("election:{x}").lock],
    ] as const) {
      assert.deepEqual(parseName(keys, name), { key, space });
    }
  });

  void it("ignores queues, tickets, states, guards, other prefixes and foreign keys", () => {
    for (const name of [
      keys.exclusive("k").queue, keys.exclusive("k").tickets, keys.shared("k", "rw").state, keys.shared("k", "sem").entries,
      keys.guard("res"), new KeySpace("app:sub").exclusive("k").lock, new KeySpace("other").exclusive("k").lock, "app:plain", "app:{}:lock",
    ]) {
      assert.equal(parseName(keys, name), undefined, name);
    }
  });
});

void describe("parseRedisUrl", () => {
  void it("reads host, port, credentials, database and TLS, and hides the password in its display form", () => {
    const a = parseRedisUrl("rediss://user:s%40cret@cache.example:6380/2");
    assert.equal(a?.host, "cache.example");
    assert.equal(a?.port, 6380);
    assert.deepEqual(a?.options, { username: "user", password: "s@cret", db: 2, tls: { servername: "cache.example" } });
    assert.equal(a?.display, "rediss://user:***@cache.example:6380/2");
    assert.equal(parseRedisUrl("redis://127.0.0.1")?.port, 6379);
    assert.equal(parseRedisUrl("redis://[::1]:7000")?.host, "::1");
  });

  void it("rejects what is not a redis:// or rediss:// URL", () => {
    for (const text of ["", "localhost:6379", "http://127.0.0.1:6379", "redis://", "redis://h/x"]) {
      assert.equal(parseRedisUrl(text), undefined, text);
    }
  });
});
