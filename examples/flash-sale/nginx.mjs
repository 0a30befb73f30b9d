// nginx in front of the shop instances, when the machine has it: an unprivileged child of the
// orchestrator (no daemon, no master process, no root), with its own configuration, logs and
// temporary files in a fresh directory, on a free loopback port, stopped by its pid. Round robin
// over the instances, at most a fair share of the buyers' connections on each; a connection that is
// refused or times out is tried on the next instance, which then sits out a second (nginx's
// passive health checks).

import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { freePort } from "./redis-server.mjs";

/** The nginx binary: `$NGINX`, else the first on PATH or in the usual sbin folders; undefined if none. */
export function findNginx(env = process.env) {
  const candidates = env.NGINX
    ? [env.NGINX]
    : [...(env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, "nginx")),
      "/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"];
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there
    }
  }
  return undefined;
}

function configFor(dir, port, backends, maxConns) {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client-body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream shop {
${backends.map((b) => `    server 127.0.0.1:${b.port} max_fails=1 fail_timeout=1s max_conns=${maxConns};`).join("\n")}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://shop;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 200ms;
      proxy_read_timeout 10s;
      proxy_next_upstream error timeout;
    }
  }
}
`;
}

/** Resolves once something accepts connections on `port`, rejects if `exited` settles first or after `ms`. */
async function listening(port, exited, ms) {
  const deadline = performance.now() + ms;
  let gone = false;
  exited.then(() => { gone = true; });
  while (!gone && performance.now() < deadline) {
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => { socket.destroy(); resolve(true); });
      socket.once("error", () => resolve(false));
    });
    if (ok) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/**
 * Starts nginx in front of `backends`; the same shape as startBalancer's answer.
 * @param {{ binary: string, backends: { id: number, port: number }[], connections: number, onSpawn?: (child: import("node:child_process").ChildProcess) => void }} options
 * @returns {Promise<{ name: string, url: string, close(): Promise<void> }>}
 */
export async function startNginx({ binary, backends, connections, onSpawn }) {
  // nginx (open source) has no active health checks: a paused instance would collect every buyer's
  // request in turn until all of them waited on it. A cap per instance, with room for all the
  // buyers in the instances together, leaves the others their share: once the paused one has its
  // cap of stuck requests, nginx sends the rest elsewhere.
  const maxConns = Math.ceil(connections / backends.length);
  const version = /nginx\/([\d.]+)/.exec(versionOf(binary))?.[1] ?? "?";
  for (let attempt = 1; ; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), "flash-sale-nginx-"));
    const port = await freePort();
    writeFileSync(join(dir, "nginx.conf"), configFor(dir, port, backends, maxConns));
    const child = spawn(binary, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], { stdio: "ignore" });
    onSpawn?.(child);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.once("error", () => {});
    if (await listening(port, exited, 5_000)) {
      return {
        name: `nginx ${version}`,
        url: `http://127.0.0.1:${port}`,
        async close() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGQUIT");
          const timer = setTimeout(() => child.kill("SIGKILL"), 2_000);
          await exited;
          clearTimeout(timer);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    child.kill("SIGKILL");
    await exited;
    let log = "";
    try {
      log = readFileSync(join(dir, "error.log"), "utf8").trim().split("\n").slice(-3).join("\n");
    } catch {
      // no log
    }
    rmSync(dir, { recursive: true, force: true });
    // Another process took the port between the probe and nginx's bind: once more, elsewhere.
    if (attempt >= 3 || !/Address already in use/.test(log)) throw new Error(`nginx (${binary}) did not start: ${log || "no error log"}`);
  }
}

/** `nginx -v` (printed on stderr), e.g. "nginx version: nginx/1.22.1". */
function versionOf(binary) {
  const r = spawnSync(binary, ["-v"], { encoding: "utf8", timeout: 5_000 });
  return `${r.stdout ?? ""}${r.stderr ?? ""}`;
}
