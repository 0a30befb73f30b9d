/**
 * Every script, bound once in the module of the protocol it belongs to, gathered under one name:
 * `scripts.acquire.call(keys, args)` makes the call an endpoint sends. The stores build their calls
 * through the family modules; the guard, the operators' reads and the script tests use this table.
 */
import { coordinationScripts } from "./coordination.js";
import { exclusiveScripts } from "./exclusive.js";
import { holdScripts } from "./holds.js";
import { keepaliveScripts } from "./keepalive.js";
import { multiScripts } from "./multi.js";
import { operatorScripts } from "./operator.js";
import { sharedScripts } from "./shared.js";

export const scripts = {
  ...exclusiveScripts,
  ...sharedScripts,
  ...multiScripts,
  ...holdScripts,
  ...keepaliveScripts,
  ...coordinationScripts,
  ...operatorScripts,
} as const;
