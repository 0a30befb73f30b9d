// The shared behaviour suite (suite.ts) on redis, with a server of its own.
import { describe } from "node:test";
import { behaviour } from "./suite.js";
import { redisWorld } from "./support.js";

describe("behaviour: redis", () => behaviour(redisWorld()));
