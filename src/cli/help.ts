/** The `--help` texts. Keep them in step with docs/cli.md. */

const CONNECTION = `Connection:
  --redis URL        redis://[user:password@]host[:port][/db], or rediss:// for TLS; repeat it
                     for quorum (Redlock) mode over independent primaries. Default: $REDIS_URL,
                     else redis://127.0.0.1:6379. A Cluster node's URL uses the whole Cluster.
  --prefix P         key namespace of the locks (default "surelock")
  --key-prefix KP    the application client's own key prefix (ioredis/node-redis keyPrefix),
                     in front of --prefix: --key-prefix app: reads the locks of
                     new Surelock({ redis: new Redis({ keyPrefix: "app:" }) })
  -h, --help         this help`;

export const MAIN_HELP = `surelock: distributed locks on Redis

Usage:
  surelock exec --key K [--shared | --exclusive | --semaphore --permits N] [--ttl 30s]
                [--timeout 10s] [--owner O] -- command [args...]
  surelock inspect K [--json]
  surelock list [PATTERN] [--json]
  surelock release K --force [--kind mutex|rw|semaphore]
  surelock doctor [--json] [--strict] [--counter-retention D]
  surelock leader K [--wait [--timeout 10s] | --follow] [--json]

Commands:
  exec      run a command while holding the lock K (a mutex, a side of a read-write lock, or a
            semaphore's permit); stop it if the lock is lost
  inspect   show who holds K and who waits for it
  list      list the locks held, optionally only keys matching a glob PATTERN
  release   delete a lock whose holder is dead or stuck, and wake its waiters
  doctor    check that a Redis deployment is fit for locks
  leader    show who leads the election K; wait for a leader, or follow every change

${CONNECTION}
  --version          print the version

Durations take a unit: 500ms, 30s, 2m, 1h (a bare 10 is refused; 0 alone is allowed).
Run "surelock COMMAND --help" for the options of a command.`;

export const COMMAND_HELP = {
  exec: `Usage: surelock exec --key K [--shared | --exclusive | --semaphore --permits N] [options]
                     -- command [args...]

Waits for the lock K, runs the command while holding it, releases it when the command exits,
and exits with the command's exit code (128+n if a signal n ended it). The lease is renewed
every ttl/3. If it is lost (renewal refused, or Redis unreachable past its validity) the command
is sent SIGTERM, then SIGKILL after --kill-after, and surelock exits with 76. SIGINT, SIGTERM and
SIGHUP are passed on to the command; Ctrl-Z stops it with surelock. The command sees
SURELOCK_KEY and SURELOCK_FENCING_TOKEN.

Which lock (one of):
  (none)             the mutex K (locks.mutex(K)): one command at a time
  --shared           the read side of the read-write lock K, like flock -s: any number of
                     --shared commands run together, none while an --exclusive one runs
  --exclusive        the write side of the read-write lock K, like flock -x: alone, with no
                     --shared command running. Give it explicitly: without it exec takes the
                     mutex K, which is another lock and does not exclude --shared commands
  --semaphore        one permit of the semaphore K (locks.semaphore(K, { permits: N })): at most
  --permits N        N commands at once; every holder of K must give the same N

Options:
  --key K            the lock to hold (required)
  --owner O          acquire as owner O: whoever holds K as O (a program's acquire({ owner }),
                     another exec --owner O) shares it with the command instead of waiting.
                     --shared takes a read of its own, let in while O holds the write side;
                     --semaphore takes a permit of its own (O names it in inspect)
  --ttl D            lease length (default 30s); a dead holder's lock frees after at most this
  --timeout D        longest wait for the lock (default: wait until interrupted); 0 = one try
  --kill-after D     after a lost lease, time between SIGTERM and SIGKILL (default 5s)
  --fair             accepted for compatibility: every lock serves its waiters in arrival order
  --foreground       keep the command in surelock's process group: it has the terminal (it can
                     open /dev/tty: password prompts, editors) and only it is signalled.
                     Default: a session of its own, so a lost lease stops its children too; it
                     still reads stdin, but has no /dev/tty
  --verbose          log waiting, acquire, renewals and release on stderr

Durations take a unit: 500ms, 30s, 2m, 1h (0 alone is allowed).

${CONNECTION}

Exit codes: the command's own; 2 bad arguments (or --permits other than the semaphore's stored
number); 69 Redis unreachable; 75 --timeout passed; 76 lease lost (command stopped); 126 command
not executable; 127 command not found.

Examples:
  surelock exec --key nightly-report --timeout 0 -- ./make-report.sh
  surelock exec --key gpu --semaphore --permits 4 -- ./train.sh
  surelock exec --key schema --shared -- ./read-report.sh
  surelock exec --key schema --exclusive -- ./migrate.sh`,

  inspect: `Usage: surelock inspect K [--json]

Shows what Redis holds for the key K: the mutex holder (owner, entries, fencing token, time left),
the waiters of a fair mutex, the read-write lock's writer and readers, the semaphore's holders,
the election's leader and candidates, and the countdown latch's count.

Options:
  --json             machine-readable output (one entry per node)

${CONNECTION}`,

  list: `Usage: surelock list [PATTERN] [--json]

Lists the locks held under the prefix, with their kind, owner, fencing token and time left, and
the elections' leaders and the countdown latches.
PATTERN is a Redis glob on the lock's key (* ? [abc] \\x), default *. Uses SCAN, never KEYS.

Options:
  --json             machine-readable output (an array of locks)

${CONNECTION}`,

  release: `Usage: surelock release K --force [--kind mutex|rw|semaphore]

Deletes the lock K and wakes its waiters. Its holder is not told: it keeps working until its
next renewal fails (up to a third of its ttl), so for a moment two processes may hold the lock.
Use it only for a holder that is dead or stuck; without --force nothing is deleted.

Options:
  --force            really delete it
  --kind KIND        mutex (default), rw (a read-write lock: writer and readers) or semaphore

${CONNECTION}`,

  doctor: `Usage: surelock doctor [--json] [--strict] [--counter-retention D]

Checks the deployment: Redis version, Lua scripting, role and replicas (min-replicas-to-write),
persistence (appendonly, appendfsync, save; INFO when CONFIG is unavailable), maxmemory-policy,
Cluster state, round-trip latency, each server's clock against this host's (TIME), and in quorum
mode the number and independence of the nodes, their clocks against each other and the restart
delay a node without appendfsync always needs. Prints ok / warn / fail per check and exits with 1
if any check fails.

Options:
  --json             machine-readable output
  --strict           warnings fail too (exit 1)
  --counter-retention D
                     the counterRetention your Surelock instances use (default 5m): the clock
                     checks judge the servers' clocks against it

${CONNECTION}`,

  leader: `Usage: surelock leader K [--wait [--timeout D] | --follow] [--json]

Shows who leads the election K (locks.election(K) in a program): its owner, the value it
proclaimed, its fencing token and the time left on its lease. Exits with 0, leader or not.

Options:
  --wait             if nobody leads, wait until someone does, print it and exit 0
  --timeout D        with --wait: give up after D and exit 75 (default: wait until interrupted)
  --follow           print the leader now and at every change (another leader, another value,
                     none) until interrupted (SIGINT, SIGTERM: exit 0)
  --json             machine-readable output (with --follow, one object per line)

${CONNECTION}`,
} as const;
