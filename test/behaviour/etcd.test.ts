// The shared behaviour suite (suite.ts) on etcd, with a server of its own.
import { describe } from "node:test";
import { behaviour } from "./suite.js";
import { etcdWorld } from "./support.js";

describe("behaviour: etcd", () => behaviour(etcdWorld()));
