// A small round-robin HTTP load balancer in front of the shop instances, the way a real one
// behaves: it health-checks every instance (GET /health, short timeout) and sends new requests
// only to the ones that answer, so a paused or dead instance drops out of rotation; a request
// whose connection is refused is tried on the next instance; anything else is a 502.

import http from "node:http";

const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]);

/**
 * @param {{ backends: { id: number, port: number }[], healthEveryMs?: number, healthTimeoutMs?: number }} options
 * @returns {Promise<{ url: string, backends: { id: number, port: number, up: boolean }[], close(): Promise<void> }>}
 */
export async function startBalancer({ backends, healthEveryMs = 25, healthTimeoutMs = 100 }) {
  const pool = backends.map((b) => ({ ...b, up: true }));
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const healthAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let next = 0;
  let closed = false;

  const pick = (exclude) => {
    // When no instance looks healthy, try them all rather than fail everything ("panic mode").
    const panic = !pool.some((b) => b.up && !exclude.has(b));
    for (let i = 0; i < pool.length; i++) {
      const b = pool[(next + i) % pool.length];
      if ((b.up || panic) && !exclude.has(b)) {
        next = (next + i + 1) % pool.length;
        return b;
      }
    }
    return undefined;
  };

  const forward = (req, res, body, tried) => {
    const backend = pick(tried);
    if (backend === undefined) {
      res.writeHead(502, { "content-type": "text/plain" }).end("no instance accepted the connection\n");
      return;
    }
    tried.add(backend);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !HOP_BY_HOP.has(name)));
    const upstream = http.request(
      { host: "127.0.0.1", port: backend.port, method: req.method, path: req.url, headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, Object.fromEntries(
          Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.has(name))));
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => {
      if (error.code === "ECONNREFUSED" && !res.headersSent) {
        backend.up = false; // nothing listens there: the request never reached it, try the next one
        forward(req, res, body, tried);
      } else if (!res.headersSent) {
        res.writeHead(502, { "content-type": "text/plain" }).end(`instance ${backend.id}: ${error.code ?? error.message}\n`);
      } else {
        res.destroy();
      }
    });
    upstream.end(body);
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => forward(req, res, Buffer.concat(chunks), new Set()));
  });

  // One health check at a time per instance; the next one starts when the last one is answered.
  const timers = new Set();
  const check = (backend) => {
    if (closed) return;
    const probe = http.get({ host: "127.0.0.1", port: backend.port, path: "/health", agent: healthAgent, timeout: healthTimeoutMs }, (answer) => {
      answer.resume();
      answer.on("end", () => done(answer.statusCode === 200));
    });
    probe.on("timeout", () => probe.destroy(new Error("health check timed out")));
    probe.on("error", () => done(false));
    let finished = false;
    function done(healthy) {
      if (finished) return;
      finished = true;
      backend.up = healthy;
      const timer = setTimeout(() => { timers.delete(timer); check(backend); }, healthEveryMs);
      timers.add(timer);
    }
  };
  pool.forEach(check);

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    backends: pool,
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(() => resolve()));
      agent.destroy();
      healthAgent.destroy();
    },
  };
}
