/** Reading a server's settings: INFO's fields, and CONFIG GET where it is allowed. */
import type { Redis } from "ioredis";
import { messageOf } from "./check.js";

/**
 * CONFIG GET of the settings we check, one at a time (older servers take one pattern per call).
 * `refused` says why CONFIG gave nothing (renamed away, or denied by an ACL), when it did not.
 */
export async function readConfig(server: Redis): Promise<{ config: Map<string, string>; refused: string | undefined }> {
  const names = ["appendonly", "appendfsync", "save", "maxmemory-policy", "maxmemory", "min-replicas-to-write"];
  const config = new Map<string, string>();
  let refused: string | undefined;
  const why = (error: unknown): string => {
    const message = messageOf(error);
    if (/NOPERM/.test(message)) return "denied by an ACL";
    if (/unknown command/i.test(message)) return "renamed or disabled";
    return `failed: ${message}`;
  };
  const replies = await Promise.all(names.map((n) => server.config("GET", n).catch((error: unknown) => {
    refused ??= why(error);
    return [] as unknown;
  })));
  for (const reply of replies) {
    const flat = Array.isArray(reply) ? (reply as unknown[]).map(String) : [];
    for (let i = 0; i + 1 < flat.length; i += 2) config.set(flat[i] as string, flat[i + 1] as string);
  }
  return { config, refused };
}

/** INFO's `field:value` lines as a map (section headers skipped). */
export function parseInfo(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0 && !line.startsWith("#")) map.set(line.slice(0, i), line.slice(i + 1));
  }
  return map;
}
