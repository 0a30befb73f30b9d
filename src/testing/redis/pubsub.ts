/** Pub/sub on the in-memory server: who listens on each channel, plain and sharded, and delivery. */

/** Who receives published messages: the adapter's subscriber connections. */
export interface MessageSink {
  deliver(channel: string, message: string): void;
}

/** The receivers of every channel; PUBLISH and SPUBLISH have separate channel spaces, as in Redis. */
export class PubSub {
  readonly #channels = new Map<string, Set<MessageSink>>();
  readonly #shardChannels = new Map<string, Set<MessageSink>>();

  /** Adds `sink` to the receivers of `channel` (sharded: SPUBLISH's). */
  subscribe(sink: MessageSink, channel: string, sharded: boolean): void {
    const map = sharded ? this.#shardChannels : this.#channels;
    let sinks = map.get(channel);
    if (!sinks) map.set(channel, (sinks = new Set()));
    sinks.add(sink);
  }

  /** Removes `sink` from the receivers of `channel`. */
  unsubscribe(sink: MessageSink, channel: string, sharded: boolean): void {
    const map = sharded ? this.#shardChannels : this.#channels;
    const sinks = map.get(channel);
    sinks?.delete(sink);
    if (sinks?.size === 0) map.delete(channel);
  }

  /** Delivers `message` to every receiver of `channel` at once; answers how many there were. */
  publish(channel: string, message: string, sharded: boolean): number {
    const sinks = (sharded ? this.#shardChannels : this.#channels).get(channel);
    if (!sinks) return 0;
    for (const sink of sinks) sink.deliver(channel, message);
    return sinks.size;
  }
}
