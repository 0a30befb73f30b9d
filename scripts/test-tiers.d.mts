// Types of scripts/test-tiers.mjs, for the tests that read the tier table.
export interface Tier {
  readonly name: string;
  readonly patterns: readonly string[];
}
export declare const TIERS: readonly Tier[];
export declare const TIER_NAMES: readonly string[];
export declare function tierOf(file: string): string;
