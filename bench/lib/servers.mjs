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

/** Starts one redis-server and resolves with { port, process, stop() } once it answers PING. */
export async function startRedis() {
  hookExit();
  for (let tries = 0; tries < 5; tries++) {
    const port = await freePort();
    const child = spawn("redis-server", [
      "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--protected-mode", "yes", "--loglevel", "warning",
    ], { stdio: ["ignore", "ignore", "pipe"] });
    started.add(child);
    let exited = false;
    child.on("exit", () => { exited = true; started.delete(child); });
    child.on("error", () => { exited = true; });
    const deadline = now() + 5000;
    while (!exited && now() < deadline) {
      if (await ping(port)) {
        return {
          port,
          process: child,
          stop: () => {
            started.delete(child);
            child.kill("SIGKILL");
          },
        };
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

export function stopAll() {
  killAll();
}
