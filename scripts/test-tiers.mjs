// Which tier each test file belongs to. A file's tier is the first whose patterns match its path
// (a pattern ending in "/" is a folder, any other a file); what matches none is `redis`.
//
//   unit         pure functions and rules: no server, no double
//   memory       the library on surelock/testing's in-memory Redis (the double, its virtual clock)
//   redis        the library on one real redis-server the test starts
//   deployments  Sentinel, Cluster, quorum mode, PostgreSQL, etcd: several real servers
//   package      the built package as users get it: npm pack, test runners, README, docs, migration guides
//   soak         long runs: torture, the protocol models, examples, peers side by side
//
// `npm run test:fast` runs unit and memory; `npm test` runs every tier.
export const TIERS = [
  {
    name: "soak",
    patterns: ["test/torture/regressions.test.ts", "test/torture/torture.test.ts", "test/model/", "test/examples/", "test/peers/"],
  },
  {
    name: "deployments",
    patterns: ["test/deployments/", "test/quorum/", "test/multi/quorum", "test/election/quorum", "test/postgres/", "test/etcd/",
      // The shared behaviour suite on PostgreSQL and on a 3-member etcd cluster (its Redis run is of the redis tier).
      "test/behaviour/postgres.test.ts", "test/behaviour/etcd.test.ts"],
  },
  {
    name: "package",
    patterns: ["test/package.test.ts", "test/runners/", "test/readme.test.ts", "test/docs/", "test/migration/", "test/api-report.test.ts"],
  },
  {
    name: "memory",
    patterns: [
      "test/fast/", "test/testing/adapter.test.ts", "test/testing/boundary.test.ts", "test/testing/commands.test.ts",
      "test/testing/coordination.test.ts", "test/testing/ioredis-mock.test.ts", "test/testing/ioredis-shape.test.ts",
      "test/testing/surelock.test.ts",
    ],
  },
  {
    name: "unit",
    patterns: [
      "test/deadline.test.ts", "test/errors.test.ts", "test/layers.test.ts", "test/quorum/votes.test.ts", "test/torture/checkers.test.ts",
      "test/torture/reproduced-by.test.ts", "test/protocol/attempts.test.ts", "test/protocol/encoding.test.ts",
      "test/cli/clock-offset.test.ts", "test/cli/helpers.test.ts", "test/tiers.test.ts",
    ],
  },
];

export const TIER_NAMES = [...TIERS.map((t) => t.name), "redis"];

/** The tier of a test file (a path relative to the repository, with / separators). */
export function tierOf(file) {
  const path = file.split("\\").join("/");
  // Unit and memory patterns name single files that sit in folders of other tiers (test/quorum/votes).
  for (const name of ["unit", "memory", "soak", "deployments", "package"]) {
    const tier = TIERS.find((t) => t.name === name);
    if (tier.patterns.some((p) => (p.endsWith("/") ? path.startsWith(p) : path === p || path.startsWith(p)))) return name;
  }
  return "redis";
}
