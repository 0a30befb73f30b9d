/*
 * core.pml: what both protocol models share. One mutex key on one Redis, NC clients, an integer
 * clock, one connection per client (FIFO, replies that can be lost and commands that ioredis then
 * resends), the clients' local views, the ghost variables the properties read.
 *
 * A protocol file (new-protocol.pml, old-protocol.pml) includes this first, then defines the
 * server's state, its scripts (inline run_script), the client's reply handling (inline on_reply)
 * and the Client process, then includes world.pml (network, clock, properties).
 *
 * Every parameter below can be set from the command line (spin -a -DNAME=value ...);
 * scripts/model-check.mjs lists the combinations that are checked.
 */

/* ---- size of the world ------------------------------------------------------------------ */
#ifndef NC
#define NC 2            /* clients (processes that want the lock); 2 or 3 */
#endif
#ifndef H
#define H 9             /* horizon: the server clock stops here (bounds the state space) */
#endif
#define T0 1            /* the clocks start at 1: 0 means "no instant" in the client's fields */

/* ---- the protocol's durations, in ticks ------------------------------------------------- */
#ifndef TTL
#define TTL 4           /* lock ttl */
#endif
#ifndef EXT
#define EXT 6           /* the ttl an explicit extend(ttl) asks for (longer or shorter than TTL) */
#endif
#ifndef L
#define L 3             /* ticket lease: ttl capped to 60 ms .. 3 s, here shorter than TTL */
#endif
#ifndef D
#define D 1             /* drift margin subtracted from every validity */
#endif
#ifndef RET
#define RET 0           /* counter retention: a released hash keeps c and b this long;
                           0: longer than the horizon (it never runs out in a run) */
#endif
#define FOREVER 255     /* an expiry instant beyond the horizon */
#define RETAINED (RET == 0 -> FOREVER : now + RET)

/* ---- assumptions (break them to see the properties fail) --------------------------------- */
#ifndef SKEW
#define SKEW 0          /* how many ticks a client's clock may fall behind the server's in a run;
                           within the drift margin when SKEW <= D (rates within 1 %) */
#endif
/* NONFIFO: Redis may run a connection's commands in any order, and replies come back in any
   order (breaks "requests on one connection are applied in the order they were sent"). */

/* ---- how much each client may do in one run (0 switches an operation off) ---------------- */
#ifndef ACQS
#define ACQS 1          /* fresh acquisitions per client */
#endif
#ifndef REENTRIES
#define REENTRIES 0     /* nested re-entries per client */
#endif
#ifndef RENEWALS
#define RENEWALS 0      /* watchdog renewals per client */
#endif
#ifndef EXTENDS
#define EXTENDS 0       /* explicit extend(EXT) per client */
#endif
#ifndef RETRIES
#define RETRIES 0       /* a waiter's further attempts and ticket refreshes */
#endif
#ifndef WRITES
#define WRITES 0        /* fenced writes through the guard per client */
#endif
#ifndef DROPS
#define DROPS 0         /* connection drops in the whole run: replies lost, commands resent */
#endif

/* The budgets above are client 0's, the subject of a check; the other clients, which compete
   for the lock, have the budgets named with a 1 (by default the same). */
#ifndef REENTRIES1
#define REENTRIES1 REENTRIES
#endif
#ifndef RENEWALS1
#define RENEWALS1 RENEWALS
#endif
#ifndef EXTENDS1
#define EXTENDS1 EXTENDS
#endif
#ifndef RETRIES1
#define RETRIES1 RETRIES
#endif
#ifndef WRITES1
#define WRITES1 WRITES
#endif
#define BUDGET(x, i) ((i) == 0 -> x : x##1)

#define MAXPEND 3       /* commands in flight per connection */

/* ---- commands and replies ----------------------------------------------------------------- */
mtype = {
  NONE,
  /* commands (one Lua script each) */
  ATTEMPT, REENTER, RENEW, EXTEND, RELEASE, REFRESH, WRITE,
  /* replies */
  ACQUIRED, REENTERED, QUEUED, BUSY, NOTHELD, HELD, GONE, TAKEN, DECREMENTED, RELEASED,
  GRANTED, APPLIED, REFUSED
};

/* One command on a connection: what was sent, and (once Redis ran it) its reply. */
typedef Cmd {
  mtype op;
  byte h;        /* hold id (the founding entry's id) */
  byte e;        /* entry id (acquire, re-entry, release); writer id (write) */
  byte tok;      /* fencing token (release, renew, extend, write) */
  byte ttl;      /* ttl sent (acquire, re-entry, renew, extend) */
  byte sent;     /* the client's clock when it was sent */
  byte seq;      /* write sequence number */
  bool newest;   /* the newest confirming request sent for its hold (ordering rule) */
  bool ran;      /* Redis ran it and its reply is on the way (a drop clears this: resent) */
  bool once;     /* ghost: it has run at least once */
  bool ok;       /* ghost: its first run succeeded (release) */
  mtype rc;      /* reply */
  byte rv;       /* reply value: a token */
}

/* ---- time ---------------------------------------------------------------------------------- */
byte now = T0;              /* the server's clock; the global time */
byte lag[NC];               /* how far each client's clock has fallen behind */
#define LC(i) (now + SKEW - lag[i])      /* client i's monotonic clock (never below now) */

/* ---- connections --------------------------------------------------------------------------- */
Cmd pend[NC * MAXPEND];     /* per client: commands sent and not yet answered, oldest first */
byte np[NC];
byte drops;
#define CMD(i, b) pend[(i) * MAXPEND + (b)]

/* ---- the clients' local views ------------------------------------------------------------- */
/* an entry (a Lease object): not taken, asked for, in hand, release sent, finished */
#define NO 0
#define ASKED 1
#define IN 2
#define OUT 3
#define DONE 4
/* the client's current acquisition */
#define IDLE 0
#define WAITING 1
#define HOLDING 2

byte phase[NC];
byte acq[NC];               /* fresh acquisitions started */
byte hold[NC];              /* id of the current acquisition's hold (= its first entry, its ticket) */
byte tok[NC];               /* its fencing token, 0 before it is known */
byte ent1[NC];              /* the outer entry */
byte ent2[NC];              /* the nested entry (re-entry) */
byte vu[NC];                /* validity: local clock instant until which the hold is trusted */
byte ttlc[NC];              /* the ttl the watchdog renews with */
bool lost[NC];              /* declared lost (timer, or Redis said so) */
byte qs[NC];                /* send instant of the last attempt/refresh whose reply said "queued" */
bool renewing[NC];          /* the watchdog's renewal is on the wire (one at a time) */
byte nren[NC], nxt[NC], nre[NC], nretry[NC], nwr[NC];   /* budgets used */

/* Entry ids: client i's k-th fresh acquisition is i*4+k+1; its re-entry is i*4+k+3. */
#define ID(i, k) ((i) * 4 + (k) + 1)
#define REID(i, k) ((i) * 4 + (k) + 3)
#define OWNER(id) (((id) - 1) / 4)
#define BIT(id) (1 << ((id) - 1))

/* A client believes it holds the lock: an entry in hand, not declared lost, validity not over
   on its own clock (lease.held). An entry whose release has been sent no longer counts: its
   critical section has ended. */
#define BEL(i) ((ent1[i] == IN || ent2[i] == IN) && !lost[i] && LC(i) < vu[i])

/* ---- the fencing guard (the resource tier) -------------------------------------------------- */
byte gseen;                 /* highest token accepted */
byte gwho, gseq;            /* writer and sequence of the last accepted write (replay detection) */

/* ---- ghosts: what happened, for the properties --------------------------------------------- */
byte gissued;               /* highest token ever issued */
byte gmaxtok, gmaxwho;      /* token and writer of the last applied write */
unsigned gapplied : 12;     /* which (writer client, seq) writes were applied */
bool bad_fence;             /* a write with a lower token (or another hold's equal token) applied */
bool bad_once;              /* a write applied twice */
bool bad_free;              /* a release freed a hold whose owner still has an entry in hand */
bool bad_lost;              /* a release that succeeded was answered "lost" */

/* scratch for atomic steps (not part of the state) */
hidden byte k, j, x;
hidden mtype rop, rrc;
hidden byte rh, re, rtok, rttl, rsent, rseq, rrv;
hidden byte rnew, rok;

#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define MAX(a, b) ((a) > (b) -> (a) : (b))

/* Sends a command on client i's connection; newest marks it as the newest confirming request of
   hold hh (clearing that mark on the older ones still in flight). Caller checks np[i] < MAXPEND. */
inline send(i, o, hh, ee, tt, tl, sq, nw) {
  k = i * MAXPEND + np[i];
  pend[k].op = o; pend[k].h = hh; pend[k].e = ee; pend[k].tok = tt; pend[k].ttl = tl;
  /* only replies that confirm or queue use the send instant (fewer states without it) */
  pend[k].sent = (o == RELEASE || o == WRITE -> 0 : LC(i)); pend[k].seq = sq; pend[k].newest = nw;
  pend[k].ran = false; pend[k].once = false; pend[k].ok = false; pend[k].rc = NONE; pend[k].rv = 0;
  if
  :: nw ->
     j = 0;
     do
     :: j < np[i] -> if :: pend[i * MAXPEND + j].h == hh -> pend[i * MAXPEND + j].newest = false :: else fi; j++
     :: else -> break
     od
  :: else
  fi;
  np[i]++
}

/* Takes command b off client i's connection, copying it to the r* scratch variables first. */
inline take(i, b) {
  k = i * MAXPEND + b;
  rop = pend[k].op; rh = pend[k].h; re = pend[k].e; rtok = pend[k].tok; rttl = pend[k].ttl;
  rsent = pend[k].sent; rseq = pend[k].seq; rnew = pend[k].newest; rok = pend[k].ok;
  rrc = pend[k].rc; rrv = pend[k].rv;
  j = b;
  do
  :: j + 1 < np[i] ->
     k = i * MAXPEND + j;
     pend[k].op = pend[k + 1].op; pend[k].h = pend[k + 1].h; pend[k].e = pend[k + 1].e;
     pend[k].tok = pend[k + 1].tok; pend[k].ttl = pend[k + 1].ttl; pend[k].sent = pend[k + 1].sent;
     pend[k].seq = pend[k + 1].seq; pend[k].newest = pend[k + 1].newest; pend[k].ran = pend[k + 1].ran;
     pend[k].once = pend[k + 1].once; pend[k].ok = pend[k + 1].ok; pend[k].rc = pend[k + 1].rc;
     pend[k].rv = pend[k + 1].rv;
     j++
  :: else -> break
  od;
  np[i]--;
  k = i * MAXPEND + np[i];
  pend[k].op = NONE; pend[k].h = 0; pend[k].e = 0; pend[k].tok = 0; pend[k].ttl = 0; pend[k].sent = 0;
  pend[k].seq = 0; pend[k].newest = false; pend[k].ran = false; pend[k].once = false; pend[k].ok = false;
  pend[k].rc = NONE; pend[k].rv = 0
}

/* a command of this kind for client i's current hold is on the wire (empty slots hold NONE) */
#define ON_WIRE(i, o) ((CMD(i, 0).op == o && CMD(i, 0).h == hold[i]) || (CMD(i, 1).op == o && CMD(i, 1).h == hold[i]) || \
                       (CMD(i, 2).op == o && CMD(i, 2).h == hold[i]))

/* Ordering rule (new protocol): a reply confirms the ttl it sent from the instant it was sent;
   only the newest request may lengthen validity, an older one may only shorten it. A hold that
   Redis said is gone is not revived. A reply that comes after the validity ran out on the
   client's clock may revive it (the expiry timer of a paused process may not have fired yet):
   that allows more than the spec ("changes nothing"), so what holds here holds for the spec. */
inline confirm(i) {
  if
  :: lost[i] || (ent1[i] != IN && ent2[i] != IN) -> skip
  :: else ->
     if
     :: rnew -> vu[i] = rsent + rttl - D
     :: else -> vu[i] = MIN(vu[i], rsent + rttl - D)
     fi
  fi
}

/* The fencing guard's script (guard-write.lua), run with the ghost checks of fenced exclusion.
   The new guard carries (token, writer, sequence) and applies a write at most once; the old
   one compares tokens only. */
inline guard_write(i, kk) {
  if
  :: pend[kk].tok < gseen -> pend[kk].rc = REFUSED
#ifndef OLD_GUARD
  :: pend[kk].tok == gseen && pend[kk].e == gwho && pend[kk].seq <= gseq ->
     /* a replay: the last write answers its recorded reply, an older one is refused; neither is applied */
     pend[kk].rc = (pend[kk].seq == gseq -> APPLIED : REFUSED)
#endif
  :: else ->
     if
     :: gapplied & (1 << (i * 4 + pend[kk].seq)) -> bad_once = true
     :: else
     fi;
     if
     :: pend[kk].tok < gmaxtok || (pend[kk].tok == gmaxtok && pend[kk].e != gmaxwho) -> bad_fence = true
     :: else
     fi;
     gapplied = gapplied | (1 << (i * 4 + pend[kk].seq));
     gmaxtok = pend[kk].tok; gmaxwho = pend[kk].e;
     gseen = pend[kk].tok; gwho = pend[kk].e; gseq = pend[kk].seq;
     pend[kk].rc = APPLIED;
     printf("t=%d guard: write (token %d, writer %d, seq %d) applied\n", now, gseen, gwho, gseq)
  fi
}

/* A new token was issued: tokens must strictly increase (fenced exclusion). */
inline issued(t) {
  if :: t <= gissued -> bad_fence = true :: else fi;
  gissued = t
}
