// redis-server processes started by the bench itself: loopback only, free ports (never 6379),
// no persistence, killed at the end, on Ctrl-C and when the process exits for any reason.
import { spawn } from "node:child_process";
import { createServer, connect } from "node:net";
import { now, sleep } from "./clock.mjs";

const started = new Set();

function killAll() {
  for (const child of started) {
    try { child.kill("SIGKILL"); } catch { /* already gone */ }
  }
  started.clear();
}

let hooked = false;
function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      killAll();
      process.exit(130);
    });
  }
}

/** A port the kernel says is free right now on 127.0.0.1 (and not Redis's default). */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => (port === 6379 ? resolve(freePort()) : resolve(port)));
    });
  });
}

/** One PING over a raw socket; resolves true on +PONG. */
function ping(port) {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1" });
    let reply = "";
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk.toString();
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
  });
}

/** Starts one redis-server and resolves with { port, process, log, stop() } once it answers PING. */
export async function startRedis() {
  hookExit();
  for (let tries = 0; tries < 5; tries++) {
    const port = await freePort();
    const child = spawn("redis-server", [
      "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--protected-mode", "yes", "--loglevel", "warning",
    ], { stdio: ["ignore", "pipe", "pipe"] });
    started.add(child);
    // The server's last words (it logs warnings only), read as they come so the pipes never fill.
    const log = [];
    const keep = (chunk) => {
      log.push(...chunk.toString().split("\n").filter(Boolean));
      log.splice(0, Math.max(0, log.length - 10));
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    let exited = false;
    child.on("exit", () => { exited = true; started.delete(child); });
    child.on("error", () => { exited = true; });
    const deadline = now() + 5000;
    while (!exited && now() < deadline) {
      if (await ping(port)) {
        const server = {
          port,
          process: child,
          log,
          stopped: false,
          stop: () => {
            server.stopped = true;
            started.delete(child);
            child.kill("SIGKILL");
          },
        };
        return server;
      }
      await sleep(20);
    }
    child.kill("SIGKILL");
    started.delete(child);
  }
  throw new Error("could not start redis-server (is it installed and on PATH?)");
}

/** Kills `child` (e.g. a forked worker) with the servers, whatever way the bench ends. */
export function adopt(child) {
  hookExit();
  started.add(child);
  child.on("exit", () => started.delete(child));
  return child;
}

let stopping = false;

export function stopAll() {
  stopping = true;
  killAll();
}

/**
 * Calls `onDeath(message)` if `server` dies before stopAll(): a bench whose server is gone
 * cannot measure anything (on a shared machine, the usual cause is another process taking all
 * the memory, and redis-server aborting when an allocation fails).
 */
export function watchServer(server, onDeath) {
  server.process.on("exit", (code, signal) => {
    if (stopping || server.stopped) return;
    const last = server.log.length ? ` Its last lines:\n  ${server.log.join("\n  ")}` : "";
    onDeath(`redis-server on port ${server.port} exited (${signal ?? `code ${code}`}) in the middle of the run.${last}`);
  });
}
