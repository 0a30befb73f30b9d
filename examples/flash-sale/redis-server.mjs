// A throwaway redis-server for the demo: loopback only, a free port (never 6379), no persistence,
// its own temporary directory. Stopped by pid; where util-linux `setpriv` exists, the kernel also
// kills it if the demo itself dies without cleaning up.

import { spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";

function findExecutable(name, extra) {
  const dirs = [...(process.env.PATH ?? "").split(delimiter).filter(Boolean), ...extra];
  for (const dir of dirs) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return null;
}

/** A port nothing listens on right now (the server binds it a moment later; a clash is retried). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts redis-server and resolves once it accepts connections.
 * @param {{ onSpawn?: (child: import("node:child_process").ChildProcess) => void }} [options]
 *   onSpawn lets the caller track the process for cleanup from the moment it exists.
 */
export async function startRedisServer({ onSpawn } = {}) {
  const binary = findExecutable("redis-server", ["/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"]);
  if (binary === null) {
    throw new Error("redis-server not found: install it (apt-get install redis-server, brew install redis) or set REDIS_URL");
  }
  const setpriv = process.platform === "linux" ? findExecutable("setpriv", ["/usr/bin", "/bin"]) : null;
  let lastError;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    if (port === 6379) continue;
    const dir = mkdtempSync(join(tmpdir(), "surelock-demo-redis-"));
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--dir", dir, "--daemonize", "no", "--loglevel", "notice"];
    const child = setpriv
      ? spawn(setpriv, ["--pdeathsig", "KILL", binary, ...args], { stdio: ["ignore", "pipe", "pipe"] })
      : spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    onSpawn?.(child);
    const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    let log = "";
    const ready = new Promise((resolve) => {
      const onData = (chunk) => {
        log = (log + chunk).slice(-4000);
        if (log.includes("Ready to accept connections")) resolve(true);
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
    });
    const giveUp = new AbortController();
    const outcome = await Promise.race([
      ready,
      exited.then(() => false),
      sleep(10_000, "timeout", { signal: giveUp.signal }).catch(() => "cancelled"),
    ]);
    giveUp.abort();
    if (outcome === true) {
      const version = /v=(\d+\.\d+\.\d+)/.exec(log)?.[1] ?? /Redis version=(\d+\.\d+\.\d+)/.exec(log)?.[1] ?? "?";
      let stopped;
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        pid: child.pid,
        version,
        /** SIGTERM, SIGKILL after 2 s; removes the directory. Idempotent. */
        stop() {
          stopped ??= (async () => {
            if (child.exitCode === null && child.signalCode === null) {
              child.kill("SIGTERM");
              const killer = setTimeout(() => child.kill("SIGKILL"), 2_000);
              await exited;
              clearTimeout(killer);
            }
            rmSync(dir, { recursive: true, force: true });
          })();
          return stopped;
        },
      };
    }
    child.kill("SIGKILL");
    await exited;
    rmSync(dir, { recursive: true, force: true });
    lastError = new Error(`redis-server on port ${port} did not start (${outcome === "timeout" ? "no ready line in 10 s" : "it exited"}):\n${log.trim()}`);
    if (!/already in use|bind/i.test(log)) break;
  }
  throw lastError;
}
