// Child processes for W3 and W5: forked, killed with the bench whatever happens.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { adopt } from "./servers.mjs";

export function forkChild(script, execArgv = []) {
  const child = fork(fileURLToPath(new URL(`../children/${script}`, import.meta.url)), [], {
    execArgv,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  adopt(child);
  const inbox = [];
  const waiters = [];
  child.on("message", (message) => {
    const i = waiters.findIndex((w) => w.type === message.type);
    if (i === -1) inbox.push(message);
    else waiters.splice(i, 1)[0].resolve(message);
  });
  child.on("exit", (code) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`${script} exited (${code}) before sending "${w.type}"`));
  });
  return {
    child,
    send: (message) => child.send(message),
    /** The next message of `type`, or a rejection after `ms`. */
    next(type, ms) {
      const i = inbox.findIndex((m) => m.type === type);
      if (i !== -1) return Promise.resolve(inbox.splice(i, 1)[0]);
      if (child.exitCode !== null) return Promise.reject(new Error(`${script} already exited (${child.exitCode})`));
      return new Promise((resolve, reject) => {
        const waiter = { type, resolve, reject };
        waiters.push(waiter);
        const timer = setTimeout(() => {
          const j = waiters.indexOf(waiter);
          if (j !== -1) waiters.splice(j, 1);
          reject(new Error(`${script}: no "${type}" within ${ms} ms`));
        }, ms);
        const settle = (fn) => (value) => { clearTimeout(timer); fn(value); };
        waiter.resolve = settle(resolve);
        waiter.reject = settle(reject);
      });
    },
    kill() {
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}
