// Types of nginx.mjs, for TypeScript callers such as test/examples/demo.test.ts.
import type { ChildProcess } from "node:child_process";

/** The nginx binary: `$NGINX`, else the first on PATH or in the usual sbin folders; undefined if none. */
export declare function findNginx(env?: NodeJS.ProcessEnv): string | undefined;

/** Starts nginx, an unprivileged child with its own configuration in a temporary folder, in front of `backends`. */
export declare function startNginx(options: {
  binary: string;
  backends: readonly { id: number; port: number }[];
  /** Concurrent buyers: each instance takes at most its share of them at once. */
  connections: number;
  onSpawn?: (child: ChildProcess) => void;
}): Promise<{ name: string; url: string; close(): Promise<void> }>;
