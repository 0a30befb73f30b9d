// docs/migrating/from-redlock.md: redlock 4, redlock 5 beta, @sesamecare-oss/redlock and
// surelock, pair by pair, each program run against a real redis-server (see ./page.ts).
import { describe } from "node:test";
import { testGuide } from "./page.js";

describe("docs/migrating/from-redlock.md", () => testGuide("docs/migrating/from-redlock.md"));
