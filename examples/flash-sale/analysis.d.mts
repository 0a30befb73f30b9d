// Types of analysis.mjs.
export interface Interval { start: number; end: number }
export declare function countDoubleHolders(holds: readonly Interval[]): number;
export declare function overlapSegments(holds: readonly Interval[]): { start: number; end: number; holders: number }[];
