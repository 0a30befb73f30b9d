// W4's simulated network: one TCP proxy per redis-server, each byte held back `delayMs` in each
// direction, in order. It runs in a process of its own so that its CPU is not charged to the
// client being measured. Asked with { type: "start", targets: [port...], delayMs }, it answers
// { type: "ports", ports: [port...] } (one listening port per target, on 127.0.0.1).
import { connect, createServer } from "node:net";

/** Copies `from` to `to`, each chunk `delayMs` late; timers of equal delay fire in order. */
function delayed(from, to, delayMs) {
  from.on("data", (chunk) => {
    setTimeout(() => { if (!to.destroyed) to.write(chunk); }, delayMs);
  });
  from.on("end", () => setTimeout(() => to.end(), delayMs));
}

function proxy(target, delayMs) {
  const server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect({ port: target, host: "127.0.0.1", noDelay: true });
    delayed(client, upstream, delayMs);
    delayed(upstream, client, delayMs);
    const close = () => { client.destroy(); upstream.destroy(); };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  });
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server.address().port));
  });
}

process.on("message", async (message) => {
  if (message.type !== "start") return;
  const ports = await Promise.all(message.targets.map((t) => proxy(t, message.delayMs)));
  process.send({ type: "ports", ports });
});
// Gone with the bench: its IPC channel closes when the parent exits.
process.on("disconnect", () => process.exit(0));
