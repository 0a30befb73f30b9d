// The little of redlock's API that test/peers/feature-table.test.ts uses: redlock 4 ships no
// types, and redlock 5 beta's cannot be resolved under NodeNext (its package.json "exports").
declare module "redlock" {
  import type { Redis } from "ioredis";
  interface RedlockOptions { retryCount?: number; retryDelay?: number; retryJitter?: number; driftFactor?: number }
  export interface Lock { readonly resource: string; readonly value: string; unlock(): Promise<void>; extend(ttl: number): Promise<Lock> }
  export default class Redlock {
    constructor(clients: readonly Redis[], options?: RedlockOptions);
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    lock(resource: string, ttl: number): Promise<Lock>;
  }
}

declare module "redlock5" {
  import type { Redis } from "ioredis";
  interface Settings { retryCount?: number; retryDelay?: number; retryJitter?: number; automaticExtensionThreshold?: number }
  export interface Lock { readonly resources: string[]; readonly value: string; release(): Promise<unknown> }
  export type RedlockAbortSignal = AbortSignal & { error?: Error };
  export class ExecutionError extends Error {}
  export class ResourceLockedError extends Error {}
  export default class Redlock {
    constructor(clients: readonly Redis[], settings?: Settings);
    readonly settings: Required<Settings>;
    acquire(resources: string[], duration: number): Promise<Lock>;
    using<T>(resources: string[], duration: number, routine: (signal: RedlockAbortSignal) => Promise<T>): Promise<T>;
  }
}
