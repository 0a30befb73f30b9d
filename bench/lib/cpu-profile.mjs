// Reads a V8 .cpuprofile: self time per function, each function put in a group by where its
// code lives. surelock's bundle (dist/index.js) is mapped back to src/*.ts with its source map,
// so its functions are named by their own files; the other groups are ioredis, the other
// packages it loads, Node's own JavaScript (node:*), V8 built-ins, GC, and the bench itself.
import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

const SOCKET_WRITES = new Set(["writeUtf8String", "writeLatin1String", "writeAsciiString", "writeUcs2String", "writeBuffer", "writev"]);

let bundleMap;
function surelockSource(line, column) {
  // The build makes no source map any more (scripts/build.mjs): without one, the bundle's lines
  // (not minified, so its function names still read).
  if (bundleMap === undefined) {
    try {
      bundleMap = new SourceMap(JSON.parse(readFileSync(`${root}dist/index.js.map`, "utf8")));
    } catch {
      bundleMap = null;
    }
  }
  const entry = bundleMap?.findEntry(line, column);
  if (!entry?.originalSource) return { file: "dist/index.js", line: line + 1 };
  return { file: entry.originalSource.replace(/^(\.\.\/)+/, ""), line: entry.originalLine + 1 };
}

/** { group, where } for a profile node's call frame. */
export function place({ url, functionName, lineNumber, columnNumber }) {
  if (!url) {
    if (functionName === "(garbage collector)") return { group: "GC", where: "" };
    if (functionName === "(idle)") return { group: "idle", where: "" };
    if (functionName === "(program)") return { group: "V8 / native (program)", where: "" };
    // Node's stream writes end in these V8-side bindings, which call write(2) on the socket
    // at once when it can: their self time is mostly the kernel's loopback TCP send.
    if (SOCKET_WRITES.has(functionName)) return { group: "socket writes (write(2) on the socket)", where: "" };
    return { group: "V8 built-ins", where: "" };
  }
  if (url.startsWith("node:")) return { group: "node internals", where: `${url}:${lineNumber + 1}` };
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  if (path.startsWith(`${root}dist/`)) {
    const { file, line } = surelockSource(lineNumber, columnNumber);
    return { group: "surelock", where: `${file}:${line}` };
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (pkg) return { group: pkg[1] === "ioredis" ? "ioredis" : `other packages (${pkg[1]})`, where: `${pkg[1]}/${pkg[2]}:${lineNumber + 1}` };
  if (path.startsWith(`${root}bench/`)) return { group: "bench harness", where: `${path.slice(root.length)}:${lineNumber + 1}` };
  return { group: "other", where: `${path}:${lineNumber + 1}` };
}

/**
 * Self time in µs per function and per group. A sample's time is the gap to the next sample
 * (the last one gets the mean gap). Idle time is counted apart from the busy total.
 */
export function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  const { samples, timeDeltas } = profile;
  const meanGap = (profile.endTime - profile.startTime) / Math.max(1, samples.length);
  for (let i = 0; i < samples.length; i++) {
    const gap = i + 1 < timeDeltas.length ? timeDeltas[i + 1] : meanGap;
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + gap);
  }
  const functions = new Map();
  const groups = new Map();
  let busyUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id).callFrame;
    const { group, where } = place(frame);
    if (group === "idle") {
      idleUs += us;
      continue;
    }
    busyUs += us;
    groups.set(group, (groups.get(group) ?? 0) + us);
    const key = `${frame.functionName || "(anonymous)"}\u0000${where}\u0000${group}`;
    functions.set(key, (functions.get(key) ?? 0) + us);
  }
  return {
    busyUs,
    idleUs,
    groups: [...groups].map(([group, us]) => ({ group, us })).sort((a, b) => b.us - a.us),
    functions: [...functions].map(([key, us]) => {
      const [name, where, group] = key.split("\u0000");
      return { name, where, group, us };
    }).sort((a, b) => b.us - a.us),
  };
}
