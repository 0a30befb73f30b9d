/**
 * How surelock reads an adapter's rejections, restated for the adapter kit, which may not import
 * the library's internals (src/adapters/endpoint.ts holds the originals):
 * test/testing/verify-adapter.test.ts feeds both the same errors and fails if they disagree.
 */

/** The code of a Redis error reply (`ERR`, `NOSCRIPT`, …), also behind a client's "XxxError: " prefix. */
export function errorReplyCode(error: unknown): string | undefined {
  return /^(?:[A-Za-z]+Error: )?([A-Z][A-Z_]+)(?:\s|$)/.exec(messageOf(error))?.[1];
}

/**
 * Whether surelock takes the rejection for an error reply from Redis (a ScriptError, or a
 * transient reply such as READONLY) rather than for a broken connection.
 */
export function isErrorReply(error: unknown): boolean {
  return errorReplyCode(error) !== undefined || (error instanceof Error && /^(ReplyError|ErrorReply|SimpleError|BlobError)$/.test(error.name));
}

/** Whether surelock recognises "the server does not have this script" and falls back to EVAL. */
export function isNoScript(error: unknown): boolean {
  const message = messageOf(error);
  return /\bNOSCRIPT\b/.test(message) || /no matching script/i.test(message) || (error instanceof Error && /noscript/i.test(error.name));
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
