/**
 * surelock/adapter-kit: checks a `RedisAdapter` (the contract surelock talks to Redis through)
 * against a live server, for whoever writes one. Not imported by the library itself.
 */
export { verifyAdapter, AdapterVerificationError } from "./verify-adapter.js";
export type { VerifyAdapterOptions, AdapterReport, AdapterCheckResult, AdapterCheckName } from "./verify-adapter.js";
