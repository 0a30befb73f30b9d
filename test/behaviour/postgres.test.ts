// The shared behaviour suite (suite.ts) on postgres, with a server of its own.
import { describe } from "node:test";
import { behaviour } from "./suite.js";
import { postgresWorld } from "./support.js";

describe("behaviour: postgres", () => behaviour(postgresWorld()));
