// docs/migrating/from-redis-semaphore.md: redis-semaphore and surelock, pair by pair, each
// program run against a real redis-server (see ./page.ts).
import { describe } from "node:test";
import { testGuide } from "./page.js";

describe("docs/migrating/from-redis-semaphore.md", () => testGuide("docs/migrating/from-redis-semaphore.md"));
