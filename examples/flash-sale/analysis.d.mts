// Types of analysis.mjs.
export interface Belief { start: number; end: number }
export declare function countDoubleHolders(beliefs: readonly Belief[]): number;
export declare function overlapSegments(beliefs: readonly Belief[]): { start: number; end: number; holders: number }[];
