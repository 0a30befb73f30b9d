/**
 * surelock/testing: an in-memory Redis that runs surelock's own Lua scripts, for fast and
 * deterministic tests of code that takes locks. Not imported by the library itself.
 */
export { MemoryRedis } from "./memory-adapter.js";
export type { MemoryRedisOptions } from "./memory-adapter.js";
export type { IoredisArg, IoredisCommands } from "./ioredis-shape.js";
export { MemoryRedisServer } from "./memory-redis.js";
export type { MemoryRedisServerOptions, Clock } from "./memory-redis.js";
export { VirtualClock, VirtualTimer } from "./virtual-clock.js";
export type { TimerSource } from "./virtual-clock.js";
export { Gate, MemoryConnectionError, MemoryReplyError } from "./faults.js";
export type { Fault, Interceptor, CommandCall } from "./faults.js";
// The adapter kit's home is surelock/adapter-kit; it stays here too, for code written before it moved.
export { verifyAdapter, AdapterVerificationError } from "../adapter-kit/index.js";
export type { VerifyAdapterOptions, AdapterReport, AdapterCheckResult, AdapterCheckName } from "../adapter-kit/index.js";
