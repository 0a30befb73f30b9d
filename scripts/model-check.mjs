// Checks the Promela models of the lock protocol (model/*.pml) with spin, exhaustively.
//
// Every check is one model, a set of #defines (what the clients may do, which assumption is
// broken, which amendment is in), one property, and what must come out: "holds" (a complete
// search finds no violation) or "fails" (spin finds a counterexample, replayed here as a story).
// An expected failure that stops failing is an error too: the contrasts keep their teeth.
//
// Usage: node scripts/model-check.mjs [--only SUBSTRING] [--json] [--quiet] [--list] [--jobs N]
// The checks are independent: they run --jobs at a time (default: one per core), each compiled and
// searched afresh in a directory of its own, and are reported in the order below.
// Needs spin (Debian: apt-get install -y spin) and a C compiler. Exit 0: every check came out as
// expected; 1: some did not; 2: spin or the compiler is missing.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";

const modelDir = new URL("../model/", import.meta.url).pathname;

/** Every amendment the checks found necessary (see model/README.md). */
const AMENDED = {
  FIX_GRANT_REPLY: 1, FIX_GRANT_ORDER: 1, FIX_GIVEN_BACK: 1, FIX_HOLD_TOKEN: 1, FIX_SHORTEN: 1, FIX_REENTRY: 1, FIX_TOMBSTONE: 1,
  FIX_COUNTER_EPOCH: 1,
};
const without = (name) => Object.fromEntries(Object.entries(AMENDED).filter(([key]) => key !== name));

export const CHECKS = [
  // The new protocol with the amendments: everything must hold.
  {
    name: "new/reentry-and-release-replays", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, REENTRIES: 1, DROPS: 1 },
    covers: "2 clients: acquire, nested re-entry, releases, queue and grant; one connection drop (commands resent)",
    witness: [["W_NONFINAL_REPLAY", "W_SECOND_HOLD"], ["W_FINAL_REPLAY", "W_SECOND_HOLD"]],
  },
  {
    name: "new/renewal-and-extend-race", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, RENEWALS: 2, EXTENDS: 1, RENEWALS1: 0, EXTENDS1: 0 },
    covers: "2 clients: client 0 renews twice and extends to a longer ttl, racing; client 1 competes",
    witness: [["W_RACE", "W_SECOND_HOLD"]],
  },
  {
    name: "new/one-client-everything", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, NC: 1, REENTRIES: 1, RENEWALS: 2, EXTENDS: 1, DROPS: 1 },
    covers: "1 client: re-entry, 2 renewals, extend to a longer ttl, a drop (soundness of belief)",
    witness: [["W_RACE", "W_REENTRY_REPLAY"]],
  },
  {
    name: "new/one-client-shorter-extend", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, NC: 1, EXT: 2, REENTRIES: 1, RENEWALS: 2, EXTENDS: 1, WRITES: 1, DROPS: 2 },
    covers: "1 client: re-entry, 2 renewals, extend to a shorter ttl, a fenced write, 2 drops",
    witness: [["W_RACE", "W_REENTRY_REPLAY", "W_WRITE_REPLAY"]],
  },
  {
    name: "new/grant-handoff", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, RETRIES: 2, RETRIES1: 0 },
    covers: "2 clients: the release grants to the queued one, which refreshes, attempts again, hears of the grant late or never",
    witness: [["W_GRANT_TAKEN"]],
  },
  {
    name: "new/grant-whose-hold-expired", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, ACQS1: 2, RETRIES: 1, RETRIES1: 0 },
    covers: "2 clients, client 1 acquires twice: a grant expires before its waiter hears of it, the waiter queues again",
    witness: [["W_REQUEUED", "W_THIRD_HOLD"]],
  },
  {
    name: "new/grant-after-counter-restart", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, REFRESH_STANDS: 1, H: 5, ACQS1: 2, RETRIES: 1, RETRIES1: 1 },
    covers: "2 clients, client 1 acquires twice: a grant lapses unused with its hash, the waiter stands again behind client 1 on a lock with no hash, the announcement comes last",
    witness: [["W_REQUEUED", "W_QUEUED_NO_HASH", "W_THIRD_HOLD"]],
  },
  {
    name: "new/grant-ticket-lease-above-ttl", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, L: 5, RETRIES: 2, RETRIES1: 0 },
    covers: "as grant-handoff, with a ticket lease longer than the ttl (a ttl below 60 ms)",
    witness: [["W_GRANT_TAKEN"]],
  },
  {
    name: "new/three-clients", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, NC: 3 },
    covers: "3 clients: a queue of two, grants handed down the queue, lapsed tickets pruned",
    witness: [["W_GRANT_TAKEN", "W_THIRD_HOLD"]],
  },
  {
    name: "new/fenced-writes-replayed", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, WRITES: 2, DROPS: 1 },
    covers: "2 clients: 2 fenced writes each, arriving late (a paused holder) and replayed after a drop",
    witness: [["W_FINAL_REPLAY", "W_STALE_REFUSED", "W_WRITE_REPLAY"]],
  },
  {
    name: "new/clock-within-drift", model: "new-protocol.pml", property: "all", expect: "holds",
    defines: { ...AMENDED, SKEW: 1, RENEWALS: 1, RENEWALS1: 0 },
    covers: "2 clients whose clocks lose up to the drift margin (1 tick) against the server's",
    witness: [["W_SKEWED", "W_SECOND_HOLD"]],
  },
  // The new protocol as docs/protocol.md words it: each amendment is needed.
  {
    name: "new-as-written/release-replay-after-successor-expired", model: "new-protocol.pml", property: "replay", expect: "fails",
    defines: { ...without("FIX_TOMBSTONE"), DROPS: 1 },
    covers: "a final release's replay finds the hash gone (it expired with the granted successor's hold): \"lost\"",
  },
  {
    name: "new-as-written/extend-to-shorter-ttl", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...without("FIX_SHORTEN"), EXT: 2, RENEWALS: 1, EXTENDS: 1, RENEWALS1: 0, EXTENDS1: 0 },
    covers: "extend(shorter ttl) shortens the PTTL when it runs; the client keeps its longer validity until the reply",
  },
  {
    name: "new-as-written/attempt-meets-its-grant", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...without("FIX_GRANT_REPLY"), ACQS1: 2, RETRIES: 2, RETRIES1: 0 },
    covers: "a waiter's attempt that finds its ticket granted answers \"acquired\": validity counted with the full ttl",
  },
  {
    name: "new-as-written/stale-grant-counted-from-later-queued", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...without("FIX_GRANT_ORDER"), ACQS1: 2, RETRIES: 1, RETRIES1: 0 },
    covers: "a grant announced late is counted from a \"queued\" reply that ran after the grant's hold expired",
  },
  {
    name: "new-as-written/queued-with-counter-zero", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...without("FIX_COUNTER_EPOCH"), REFRESH_STANDS: 1, H: 5, ACQS1: 2, RETRIES: 1, RETRIES1: 1 },
    covers: "an attempt or refresh made while the lock had no hash answers counter 0, read as \"before\" a grant that expired unused (issue 24)",
  },
  {
    name: "new-as-written/grant-given-back-then-taken", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...without("FIX_GIVEN_BACK"), ACQS1: 2, RETRIES: 2, RETRIES1: 0 },
    covers: "a waiter gives back a grant it cannot count yet, then takes it when its refresh reports it",
  },
  {
    name: "new-as-written/ticket-reused-as-hold-id", model: "new-protocol.pml", property: "sound", expect: "fails",
    defines: { ...without("FIX_HOLD_TOKEN"), RETRIES: 2, RETRIES1: 0 },
    covers: "a grant expires unnoticed, the waiter founds a fresh hold with the same id; giving the grant back frees it",
  },
  {
    name: "new-as-written/reentry-confirms-validity", model: "new-protocol.pml", property: "sound", expect: "fails",
    defines: { ...without("FIX_REENTRY"), NC: 1, REENTRIES: 1, RENEWALS: 2, EXTENDS: 1, DROPS: 1 },
    covers: "a re-entry's replay changes nothing; an older renewal's replay after it shortens the PTTL",
  },
  // Assumptions broken: lease exclusion may fail (fenced exclusion still holds).
  {
    name: "new/clock-beyond-drift", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...AMENDED, SKEW: 2 },
    covers: "a client clock that loses 2 ticks against the server's (drift margin 1)",
  },
  {
    name: "new/clock-beyond-drift-fenced", model: "new-protocol.pml", property: "fenced", expect: "holds",
    defines: { ...AMENDED, SKEW: 2, WRITES: 1 },
    covers: "the same clocks: the guard still refuses the stale holder's writes, and applies each write once",
    witness: [["W_SKEWED", "W_STALE_REFUSED"]],
  },
  {
    name: "new/commands-out-of-order", model: "new-protocol.pml", property: "exclusion", expect: "fails",
    defines: { ...AMENDED, NONFIFO: 1, RENEWALS: 1, EXTENDS: 1, RENEWALS1: 0, EXTENDS1: 0 },
    covers: "Redis runs a connection's commands out of order (not FIFO), and replies come back out of order",
  },
  {
    name: "new/replay-after-retention", model: "new-protocol.pml", property: "replay", expect: "fails",
    defines: { ...AMENDED, NC: 1, RET: 1, DROPS: 1 },
    covers: "a release replayed after the counter retention (here 1 tick) answers \"lost\"",
  },
  // Quorum mode's waiting line (quorum-line.pml): 3 nodes, a holder and 2 waiters, every arrival
  // order of every vote; progress is a liveness check (acceptance cycles under weak fairness).
  {
    name: "quorum-line/exclusion", model: "quorum-line.pml", property: "exclusion", expect: "holds", defines: {},
    covers: "3 nodes, a holder releasing node by node, 2 waiters whose votes arrive in every order: never two holders",
    witness: [["W_LATE_VOTE", "W_STEP_ASIDE", "W_ALL_SERVED"]],
  },
  {
    name: "quorum-line/no-ghost-ticket", model: "quorum-line.pml", property: "noghost", expect: "holds", defines: {},
    covers: "as quorum-line/exclusion: a waiter that won has no ticket on any node once its votes are treated",
    witness: [["W_WINNER_LEFT", "W_ALL_SERVED"]],
  },
  {
    name: "quorum-line/progress", model: "quorum-line.pml", property: "progress", expect: "holds", liveness: true, defines: {},
    covers: "as quorum-line/exclusion: every waiter is served (no livelock, no stuck line) under weak fairness",
    witness: [["W_STEP_ASIDE", "W_ALL_SERVED"]],
  },
  {
    name: "quorum-line/progress-one-node-down", model: "quorum-line.pml", property: "progress", expect: "holds", liveness: true, defines: { DOWN: 1 },
    covers: "as quorum-line/progress with one of the 3 nodes down from the start (a majority up)",
    witness: [["W_LATE_VOTE", "W_ALL_SERVED"]],
  },
  {
    name: "quorum-line-old/ghost-ticket", model: "quorum-line.pml", property: "noghost", expect: "fails", defines: { OLD: 1 },
    covers: "the old rule (a busy vote before the decision stays, late votes given back whole, arrival order): a winner's ticket stays in line",
  },
  {
    name: "quorum-line-old/livelock", model: "quorum-line.pml", property: "progress", expect: "fails", liveness: true, defines: { OLD: 1 },
    covers: "the old rule: waiters sent to the back of lines that disagree can go on losing forever",
  },
  {
    name: "quorum-line-arrival-order/livelock", model: "quorum-line.pml", property: "progress", expect: "fails", liveness: true, defines: { ARRIVAL: 1 },
    covers: "the new rule with lines in arrival order: two waiters whose tickets stand in different orders on different nodes can lose forever",
  },
  // Multi-key holds (multi-key.pml): keys a and b, a multiLock of [a, b] and one joining it by
  // owner, a mutex of a joining it by owner (its watchdog keeps a alive), a mutex of b competing.
  // A multi-key hold's validity is its shortest key's PTTL (acquire-multi.lua's answer()).
  {
    name: "multi-key/join-by-owner", model: "multi-key.pml", property: "all", expect: "holds",
    defines: { H: 7, TA: 6 },
    covers: "a multiLock joins its owner's hold of [a, b] after a mutex of a joined it and renewed a; b expires first and goes to another client",
    witness: [["W_MULTI_JOINED", "W_MUTEX_JOINED", "W_KEY_OUTLIVES", "W_SHORT_EXPIRED", "W_SPLIT_TAKEN"]],
  },
  {
    name: "multi-key/multi-renewals", model: "multi-key.pml", property: "all", expect: "holds",
    defines: { H: 5, TA: 4, RENEWALS: 1 },
    covers: "as join-by-owner, and each multiLock (founder and joiner) renews once, lengthening the shorter key",
    witness: [["W_MULTI_JOINED", "W_MULTI_RENEWED", "W_SHORT_EXPIRED", "W_SPLIT_TAKEN"]],
  },
  {
    name: "multi-key/releases", model: "multi-key.pml", property: "all", expect: "holds",
    defines: { H: 5, TA: 4, RELEASES: 1 },
    covers: "as join-by-owner, and every holder may release: a multiLock's release frees b while the joined mutex keeps a, and b is taken",
    witness: [["W_MUTEX_JOINED", "W_PART_RELEASED", "W_SPLIT_TAKEN"]],
  },
  {
    name: "multi-key-old/first-key-pttl", model: "multi-key.pml", property: "exclusion", expect: "fails",
    defines: { H: 7, TA: 6, FIRST_KEY: 1 },
    covers: "the old answer (the first key's PTTL): a multiLock joined by owner trusts a's long life; b expires and another client takes it (issue 24)",
  },
  // The old protocol (src/scripts/*.lua, lease.ts, watchdog.ts): the known bugs.
  {
    name: "old/nested-release-replayed", model: "old-protocol.pml", property: "exclusion", expect: "fails",
    defines: { REENTRIES: 1, DROPS: 1, RETRIES: 2 },
    covers: "a re-entered lock's nested release, resent after a drop, decrements twice and frees the lock",
  },
  {
    name: "old/extend-racing-renewal", model: "old-protocol.pml", property: "exclusion", expect: "fails",
    defines: { RENEWALS: 2, EXTENDS: 1, RENEWALS1: 0, EXTENDS1: 0, RETRIES: 2 },
    covers: "a renewal sent before extend's reply is confirmed with the extended (current) ttl, not the one it sent",
  },
  {
    name: "old/final-release-replayed", model: "old-protocol.pml", property: "replay", expect: "fails",
    defines: { NC: 1, DROPS: 1 },
    covers: "a release resent after a drop finds the hash deleted: a successful release answered \"lost\"",
  },
  {
    name: "old/guard-write-replayed", model: "old-protocol.pml", property: "fenced", expect: "fails",
    defines: { NC: 1, WRITES: 1, DROPS: 1 },
    covers: "a fenced write resent after a drop is applied twice",
  },
  {
    name: "old/without-replays-or-extend", model: "old-protocol.pml", property: "all", expect: "holds",
    defines: { REENTRIES: 1, RENEWALS: 2, RETRIES: 2, RENEWALS1: 0, REENTRIES1: 0 },
    covers: "control: with no drop and no extend the old protocol keeps its promises",
    witness: [["W_SECOND_HOLD"]],
  },
];

const INSTALL_HINT = "spin (the model checker) is not installed. On Debian or Ubuntu: apt-get install -y spin " +
  "(also needs gcc: apt-get install -y gcc). .ci/run installs it when missing.";

/** Runs a command to its end: { status, stdout, stderr, error }. */
function tool(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    child.on("error", (error) => resolve({ status: null, stdout, stderr, error }));
    child.on("close", (status) => resolve({ status, stdout, stderr, error: undefined }));
  });
}

/** Which tools are missing, as a message; undefined when spin and a C compiler are there. */
export function missingTools() {
  const spin = spawnSync("spin", ["-V"], { encoding: "utf8" });
  if (spin.error || spin.status !== 0) return INSTALL_HINT;
  const cc = spawnSync("gcc", ["--version"], { encoding: "utf8" });
  if (cc.error || cc.status !== 0) return "gcc is not installed (spin's verifier is C): apt-get install -y gcc";
  return undefined;
}

const number = (text, pattern) => {
  const match = pattern.exec(text);
  return match ? Number(match[1]) : undefined;
};

/** Replays a counterexample: the printf lines of the model, in order, and the final state of interest. */
async function story(dir, check, defineArgs) {
  const replay = await tool("spin", ["-t", "-g", ...defineArgs, check.model], { cwd: dir });
  const lines = replay.stdout.split("\n");
  const steps = lines.map((line) => line.trim()).filter((line) => /^t=\d+ /.test(line));
  // With -g spin prints the globals after every step; the last value of each is the final state.
  const last = new Map();
  for (const line of lines) {
    const match = /^\s+([\w.[\]]+) = (-?\d+)$/.exec(line);
    if (match) last.set(match[1], Number(match[2]));
  }
  const clients = Number(check.defines.NC ?? 2);
  const state = [];
  if (check.model === "quorum-line.pml") {
    steps.push(...lines.map((line) => line.trim()).filter((line) => /^q: /.test(line)));
    state.push(`served ${last.get("served")}, holders ${last.get("holders")}, ghost ${last.get("ghost")}; ` +
      `locks ${[0, 1, 2].map((i) => last.get(`lock[${i}]`)).join(",")}; lines ${[0, 1, 2].map((i) => last.get(`qlen[${i}]`)).join(",")}`);
    const error = /^spin: (\S+):(\d+), Error: (.*)$/m.exec(replay.stdout + replay.stderr);
    const violation = error ? { file: error[1], line: Number(error[2]), message: error[3] } : undefined;
    // A liveness counterexample is a cycle (a livelock, or a stuck state stuttering), not an error line.
    return { steps, state, violation, cycle: /START OF CYCLE/.test(replay.stdout) };
  }
  if (check.model === "multi-key.pml") {
    for (const [k, key] of ["a", "b"].entries()) {
      const field = (name) => last.get(`ky[${k}].${name}`) ?? 0;
      state.push(`t=${last.get("now")}: key ${key} ` +
        (field("hid") ? `held by hold ${field("hid")} (token ${field("htok")}, expires at ${field("hexp")})` : "free"));
    }
    for (let i = 0; i < 4; i++) {
      const field = (name) => last.get(`cl[${i}].${name}`) ?? 0;
      state.push(`c${i}: ` + (field("ph") === 2 && !field("lost")
        ? `holds hold ${field("hold")} (tokens ${field("tok0")} ${field("tok1")}), valid until ${field("vu")}`
        : "holds nothing"));
    }
    const error = /^spin: (\S+):(\d+), Error: (.*)$/m.exec(replay.stdout + replay.stderr);
    return { steps, state, violation: error ? { file: error[1], line: Number(error[2]), message: error[3] } : undefined };
  }
  state.push(`t=${last.get("now")}: Redis hold ${last.get("hid") || "none"}` +
    (last.get("hid") ? ` (token ${last.get("htok")}, expires at ${last.get("hexp")})` : ""));
  for (let i = 0; i < clients; i++) {
    const field = (name) => last.get(`cl[${i}].${name}`) ?? 0;
    const inHand = field("ent1") === 2 || field("ent2") === 2;
    const clock = (last.get("now") ?? 0) + Number(check.defines.SKEW ?? 0) - field("lag");
    state.push(`c${i}: ` + (inHand
      ? `holds hold ${field("hold")} (token ${field("tok")}), valid until ${field("vu")} on its clock, which reads ${clock}`
      : "no entry in hand"));
  }
  const flags = ["bad_fence", "bad_once", "bad_free", "bad_lost"].filter((flag) => last.get(flag) === 1);
  if (flags.length > 0) state.push(`ghost flags raised: ${flags.join(", ")}`);
  // Where the trail ends: in the never claim (the property) or at an assert of the model itself.
  const error = /^spin: (\S+):(\d+), Error: (.*)$/m.exec(replay.stdout + replay.stderr);
  const violation = error ? { file: error[1], line: Number(error[2]), message: error[3] } : undefined;
  return { steps, state, violation };
}

// The checks share the machine with the rest of the test suite, whose fault tests are sensitive
// to starvation: the compiler and the verifier run at a lower priority.
const niced = (command, args) => ["nice", ["-n", "10", command, ...args]];

/**
 * Compiles the model with spin and gcc in dir; returns the path of the verifier. A search
 * expected to stop early (a counterexample, a witness) is not worth optimised code.
 */
async function build(dir, check, defineArgs, optimise, safety) {
  const generate = await tool("spin", ["-a", ...defineArgs, check.model], { cwd: dir });
  if (generate.status !== 0) throw new Error(`spin -a failed:\n${generate.stdout}${generate.stderr}`);
  // Safety properties only; a memory cap so that a check that grew too big stops ("search not
  // completed", which counts as not holding) instead of swapping.
  // A liveness check (quorum-line.pml's progress) looks for acceptance cycles: no -DSAFETY.
  // -O1: -O2 takes twice as long to compile and gains less than that on the largest searches.
  const flags = [optimise ? "-O1" : "-O0", ...(safety ? ["-DSAFETY"] : []), "-DMEMLIM=2048", "-w", "-o", "pan", "pan.c"];
  const compile = await tool(...niced("gcc", flags), { cwd: dir });
  if (compile.status !== 0) throw new Error(`gcc failed:\n${compile.stderr}`);
  return join(dir, "pan");
}

async function verify(pan, dir, property, liveness = false) {
  // Liveness: acceptance cycles (-a) under weak fairness (-f), so a waiter that never gets a step is not a livelock.
  // A hash table of 2^22 slots (32 MB) instead of the default 2^24: the largest search stores about
  // 5 million states, which chain a little longer, while clearing the 128 MB table cost every run
  // half a CPU second. The search stays exhaustive (no bitstate): the table only chains states.
  const run = await tool(...niced(pan, ["-m100000", "-w22", ...(liveness ? ["-a", "-f"] : []), "-N", property]), { cwd: dir });
  return run.stdout + run.stderr;
}

/**
 * A check that holds could hold because its runs never reach what it is about. For each of its
 * witness sets, the events (core.pml) must all happen in some run: spin must refute "they never
 * all happen" (the events' bits are distinct, so + is their union).
 */
async function witness(dir, check, defineArgs, events) {
  // "They never all happen" is a safety property, whatever the check's own property is.
  const pan = await build(dir, check, [...defineArgs, `-DWITNESS=${events.join("+")}`], false, true);
  const out = await verify(pan, dir, "witness");
  return { events, reached: (number(out, /errors: (\d+)/) ?? 0) > 0 };
}

/** Runs one check in a directory of its own; returns what came out. */
export async function runCheck(check) {
  const dir = mkdtempSync(join(tmpdir(), "surelock-model-"));
  const startedAt = performance.now();
  try {
    for (const file of readdirSync(modelDir).filter((f) => f.endsWith(".pml"))) {
      copyFileSync(join(modelDir, file), join(dir, file));
    }
    const defineArgs = Object.entries(check.defines).map(([key, value]) => `-D${key}=${value}`);
    const pan = await build(dir, check, defineArgs, check.expect === "holds", check.liveness !== true);
    const out = await verify(pan, dir, check.property, check.liveness === true);
    const errors = number(out, /errors: (\d+)/);
    if (errors === undefined) throw new Error(`pan gave no verdict:\n${out}`);
    const complete = !/Search not completed|reached -DMEMLIM bound|max search depth too small/.test(out);
    const result = {
      name: check.name,
      model: check.model,
      property: check.property,
      defines: check.defines,
      covers: check.covers,
      expect: check.expect,
      outcome: errors > 0 ? "fails" : complete ? "holds" : "incomplete",
      problem: undefined,
      states: number(out, /(\d+) states, stored/),
      transitions: number(out, /(\d+) transitions/),
      depth: number(out, /depth reached (\d+)/),
      stateVectorBytes: number(out, /State-vector (\d+) byte/),
      panSeconds: number(out, /elapsed time ([\d.e+]+) seconds/),
      seconds: 0,
      counterexample: undefined,
      witness: undefined,
    };
    if (errors > 0) {
      result.counterexample = await story(dir, check, defineArgs);
      // Only the claim's violation is the property failing; an assert of the model failing
      // means the model (or a check's parameters) is wrong, which never counts as expected.
      const where = result.counterexample.violation;
      if (where?.file !== "_spin_nvr.tmp" && !(check.liveness && result.counterexample.cycle)) {
        result.outcome = "model-error";
        result.problem = where ? `${where.file}:${where.line}: ${where.message}` : "no violation found in the trail";
      }
    }
    if (check.witness) {
      result.witness = [];
      for (const events of check.witness) result.witness.push(await witness(dir, check, defineArgs, events));
    }
    result.seconds = Math.round((performance.now() - startedAt) / 10) / 100;
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The check came out as it must: its outcome, and for a check that holds, its witness reached. */
export function asExpected(result) {
  return result.outcome === result.expect && (result.witness ?? []).every((w) => w.reached);
}

/**
 * Runs the checks `jobs` at a time; returns a promise of each one's result, in the order given.
 * The checks that must hold start first: a complete search takes longest, and one started last
 * would run alone.
 */
function runChecks(checks, jobs) {
  const queue = [...checks.filter((c) => c.expect === "holds"), ...checks.filter((c) => c.expect !== "holds")];
  const settle = new Map(checks.map((check) => {
    let resolve;
    const result = new Promise((r) => (resolve = r));
    return [check, { result, resolve }];
  }));
  const worker = async () => {
    for (let check = queue.shift(); check !== undefined; check = queue.shift()) {
      const running = runCheck(check);
      settle.get(check).resolve(running);
      await running.catch(() => undefined);
    }
  };
  for (let i = 0; i < Math.min(jobs, checks.length); i++) void worker();
  return checks.map((check) => settle.get(check).result);
}

async function main() {
  const args = process.argv.slice(2);
  const json = args.includes("--json");
  const quiet = args.includes("--quiet");
  const onlyAt = args.indexOf("--only");
  const only = onlyAt >= 0 ? args[onlyAt + 1] : undefined;
  const jobsAt = args.indexOf("--jobs");
  const jobs = jobsAt >= 0 ? Number(args[jobsAt + 1]) : availableParallelism();
  if (!Number.isInteger(jobs) || jobs < 1) {
    console.error(`--jobs: ${args[jobsAt + 1]} is not a positive whole number`);
    return 2;
  }
  const checks = CHECKS.filter((check) => only === undefined || check.name.includes(only));
  if (args.includes("--list")) {
    for (const check of checks) console.log(`${check.name}: ${check.property} ${check.expect} — ${check.covers}`);
    return 0;
  }
  const missing = missingTools();
  if (missing) {
    console.error(missing);
    return 2;
  }
  if (checks.length === 0) {
    console.error(`no check matches ${only}`);
    return 1;
  }
  const running = runChecks(checks, jobs);
  const results = [];
  for (const [i, check] of checks.entries()) {
    const result = await running[i];
    results.push(result);
    if (json) continue;
    const ok = asExpected(result);
    const verdict = { fails: "fails", holds: "holds", incomplete: "search incomplete", "model-error": "model error" }[result.outcome];
    console.log(`${ok ? "ok  " : "FAIL"} ${check.name}: ${check.property} ${verdict}` +
      `${ok ? (check.expect === "fails" ? " (as expected)" : "") : `, expected ${check.expect}`}` +
      ` — ${result.states} states, depth ${result.depth}, ${result.seconds} s` +
      (result.witness ?? []).map((w) => `; ${w.reached ? "reaches" : "NEVER REACHES"} ${w.events.join(" + ")}`).join(""));
    if (result.problem) console.log(`       ${result.problem}`);
    if (result.counterexample && !quiet) {
      for (const step of result.counterexample.steps) console.log(`       ${step}`);
      for (const line of result.counterexample.state) console.log(`       => ${line}`);
    }
  }
  const failed = results.filter((result) => !asExpected(result)).length;
  if (json) console.log(JSON.stringify(results, null, 2));
  else console.log(`model: ${results.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) process.exitCode = await main();
