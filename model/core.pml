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
#ifndef ACQS1
#define ACQS1 ACQS
#endif
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

/* Field widths: instants and durations fit in TIME bits (FOREVER is the largest value), tokens
   and ids in 4 bits; the Clock process checks that the chosen durations fit (a value too large
   for its field would silently wrap). Small fields keep the state vector, hence memory, small. */
#define TIMEBITS 5
#define FOREVER 31      /* an expiry instant beyond the horizon */

/* One command on a connection: what was sent, and (once Redis ran it) its reply. */
typedef Cmd {
  mtype op;
  mtype rc;                     /* reply */
  unsigned h : 4;               /* hold id (the founding entry's id) */
  unsigned e : 4;               /* entry id (acquire, re-entry, release); writer id (write) */
  unsigned tok : 4;             /* fencing token (release, renew, extend, write) */
  unsigned ttl : 3;             /* ttl sent (acquire, re-entry, renew, extend) */
  unsigned sent : TIMEBITS;     /* the client's clock when it was sent */
  unsigned seq : 2;             /* write sequence number */
  unsigned newest : 1;          /* the newest confirming request sent for its hold (ordering rule) */
  unsigned ran : 1;             /* Redis ran it, its reply is on the way (a drop clears this: resent) */
  unsigned once : 1;            /* ghost: it has run at least once */
  unsigned ok : 1;              /* ghost: its first run succeeded (release) */
  unsigned rv : 4               /* reply value: a token */
}

/* ---- time ---------------------------------------------------------------------------------- */
unsigned now : TIMEBITS = T0;   /* the server's clock; the global time */
#define LC(i) (now + SKEW - cl[i].lag)   /* client i's monotonic clock (never below now) */

/* ---- connections --------------------------------------------------------------------------- */
Cmd pend[NC * MAXPEND];         /* per client: commands sent and not yet answered, oldest first */
unsigned drops : 2;
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

/* A client: its current acquisition, its local view of it, its connection's length, its clock's
   lag, the grant announcement on its way to it, and how much of its budgets it used. */
typedef ClientState {
  unsigned phase : 2;
  unsigned acq : 2;             /* fresh acquisitions started */
  unsigned hold : 4;            /* id of the current acquisition's hold (= its first entry, its ticket) */
  unsigned tok : 4;             /* its fencing token, 0 before it is known */
  unsigned ent1 : 3;            /* the outer entry */
  unsigned ent2 : 3;            /* the nested entry (re-entry) */
  unsigned vu : TIMEBITS;       /* validity: local clock instant until which the hold is trusted */
  unsigned ttlc : 3;            /* the ttl the watchdog renews with */
  unsigned lost : 1;            /* Redis said the hold is gone */
  unsigned qs : TIMEBITS;       /* send instant of the last attempt/refresh whose reply said "queued" */
  unsigned qc : 4;              /* ... and the counter that reply reported (FIX_GRANT_ORDER) */
  unsigned gb : 4;              /* the token of a grant it gave back (too late): never taken again */
  unsigned renewing : 1;        /* the watchdog's renewal is on the wire (one at a time) */
  unsigned np : 2;              /* commands on its connection */
  unsigned lag : 2;             /* how far its clock has fallen behind the server's */
  unsigned gmsg : 4;            /* a grant announcement on its way (pub/sub): the token */
  unsigned gmh : 4;             /* ... and the hold (ticket) it grants */
  unsigned nren : 2;            /* budgets used */
  unsigned nxt : 2;
  unsigned nre : 2;
  unsigned nretry : 2;
  unsigned nwr : 2
}
ClientState cl[NC];

/* Entry ids: client i's k-th fresh acquisition is i*4+k+1; its re-entry is i*4+k+3. */
#define ID(i, k) ((i) * 4 + (k) + 1)
#define REID(i, k) ((i) * 4 + (k) + 3)
#define OWNER(id) (((id) - 1) / 4)
#define BIT(id) (1 << ((id) - 1))

/* A client believes it holds the lock: an entry in hand, not declared lost, validity not over
   on its own clock (lease.held). An entry whose release has been sent no longer counts: its
   critical section has ended. */
#define BEL(i) ((cl[i].ent1 == IN || cl[i].ent2 == IN) && !cl[i].lost && LC(i) < cl[i].vu)

/* ---- the fencing guard (the resource tier) -------------------------------------------------- */
unsigned gseen : 4;             /* highest token accepted */
unsigned gwho : 4;              /* writer of the last accepted write (replay detection) */
unsigned gseq : 2;              /* ... and its sequence number */

/* ---- ghosts: what happened, for the properties --------------------------------------------- */
unsigned gissued : 4;           /* highest token ever issued */
unsigned gmaxtok : 4;           /* token of the last applied write */
unsigned gmaxwho : 4;           /* ... and its writer */
unsigned gapplied : 12;     /* which (writer client, seq) writes were applied */
bool bad_fence;             /* a write with a lower token (or another hold's equal token) applied */
bool bad_once;              /* a write applied twice */
bool bad_free;              /* a release freed a hold whose owner still has an entry in hand */
bool bad_lost;              /* a release that succeeded was answered "lost" */

/* Witnesses: with -DWITNESS=<events>, the ghost events below are recorded and the property
   "witness" claims they never all happen; a check that must hold runs it too, and it must fail:
   proof that the check's runs do reach the situation it is about (it is not vacuous). */
#define W_NONFINAL_REPLAY 1     /* a non-final release ran again (resent) */
#define W_FINAL_REPLAY 2        /* a final release ran again and found its hold gone */
#define W_REENTRY_REPLAY 4      /* a re-entry ran again */
#define W_RACE 8                /* an extend and a renewal of one hold were on the wire together */
#define W_GRANT_TAKEN 16        /* a waiter took a grant (believes it holds) */
#define W_REQUEUED 32           /* a ticket was queued again after its grant's hold ended */
#define W_SECOND_HOLD 64        /* a second hold was founded (the lock changed hands) */
#define W_THIRD_HOLD 128        /* a third one */
#define W_STALE_REFUSED 256     /* the guard refused a write with a lower token */
#define W_WRITE_REPLAY 512      /* the guard recognised a replayed write */
#define W_SKEWED 1024           /* a client's clock fell SKEW ticks behind */
#define W_QUEUED_NO_HASH 2048   /* a "queued" reply ran while the lock had no hash (its counter gone) */
#ifdef WITNESS
unsigned seen : 12;
unsigned wgranted : 12;         /* tickets that were granted */
#define SEEN(b) seen = seen | (b)
#else
#define SEEN(b) skip
#endif

/* scratch for atomic steps (not part of the state) */
hidden byte k, j, x;
hidden mtype rop, rrc;
hidden byte rh, re, rtok, rttl, rsent, rseq, rrv;
hidden byte rnew, rok;

#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define MAX(a, b) ((a) > (b) -> (a) : (b))

/* Sends a command on client i's connection; newest marks it as the newest confirming request of
   hold hh (clearing that mark on the older ones still in flight). Caller checks cl[i].np < MAXPEND. */
inline send(i, o, hh, ee, tt, tl, sq, nw) {
  k = i * MAXPEND + cl[i].np;
  pend[k].op = o; pend[k].h = hh; pend[k].e = ee; pend[k].tok = tt; pend[k].ttl = tl;
  /* only replies that confirm or queue use the send instant (fewer states without it) */
  pend[k].sent = (o == RELEASE || o == WRITE -> 0 : LC(i)); pend[k].seq = sq; pend[k].newest = nw;
  pend[k].ran = false; pend[k].once = false; pend[k].ok = false; pend[k].rc = NONE; pend[k].rv = 0;
  if
  :: nw ->
     j = 0;
     do
     :: j < cl[i].np -> if :: pend[i * MAXPEND + j].h == hh -> pend[i * MAXPEND + j].newest = false :: else fi; j++
     :: else -> break
     od
  :: else
  fi;
  cl[i].np++
}

/* Takes command b off client i's connection, copying it to the r* scratch variables first. */
inline take(i, b) {
  k = i * MAXPEND + b;
  rop = pend[k].op; rh = pend[k].h; re = pend[k].e; rtok = pend[k].tok; rttl = pend[k].ttl;
  rsent = pend[k].sent; rseq = pend[k].seq; rnew = pend[k].newest; rok = pend[k].ok;
  rrc = pend[k].rc; rrv = pend[k].rv;
  j = b;
  do
  :: j + 1 < cl[i].np ->
     k = i * MAXPEND + j;
     pend[k].op = pend[k + 1].op; pend[k].h = pend[k + 1].h; pend[k].e = pend[k + 1].e;
     pend[k].tok = pend[k + 1].tok; pend[k].ttl = pend[k + 1].ttl; pend[k].sent = pend[k + 1].sent;
     pend[k].seq = pend[k + 1].seq; pend[k].newest = pend[k + 1].newest; pend[k].ran = pend[k + 1].ran;
     pend[k].once = pend[k + 1].once; pend[k].ok = pend[k + 1].ok; pend[k].rc = pend[k + 1].rc;
     pend[k].rv = pend[k + 1].rv;
     j++
  :: else -> break
  od;
  cl[i].np--;
  k = i * MAXPEND + cl[i].np;
  pend[k].op = NONE; pend[k].h = 0; pend[k].e = 0; pend[k].tok = 0; pend[k].ttl = 0; pend[k].sent = 0;
  pend[k].seq = 0; pend[k].newest = false; pend[k].ran = false; pend[k].once = false; pend[k].ok = false;
  pend[k].rc = NONE; pend[k].rv = 0
}

/* a command of this kind for client i's current hold is on the wire (empty slots hold NONE) */
#define ON_WIRE(i, o) ((CMD(i, 0).op == o && CMD(i, 0).h == cl[i].hold) || (CMD(i, 1).op == o && CMD(i, 1).h == cl[i].hold) || \
                       (CMD(i, 2).op == o && CMD(i, 2).h == cl[i].hold))

/* Ordering rule (new protocol): a reply confirms the ttl it sent from the instant it was sent;
   only the newest request may lengthen validity, an older one may only shorten it. A hold that
   Redis said is gone is not revived. A reply that comes after the validity ran out on the
   client's clock may revive it (the expiry timer of a paused process may not have fired yet):
   that allows more than the spec ("changes nothing"), so what holds here holds for the spec. */
inline confirm(i) {
  if
  :: cl[i].lost || (cl[i].ent1 != IN && cl[i].ent2 != IN) -> skip
  :: else ->
     if
     :: rnew -> cl[i].vu = rsent + rttl - D
     :: else -> cl[i].vu = MIN(cl[i].vu, rsent + rttl - D)
     fi;
     printf("t=%d c%d: reply to %e (sent at %d, ttl %d): valid until %d on its clock (%d now)\n",
            now, i, rop, rsent, rttl, cl[i].vu, LC(i))
  fi
}

/* The fencing guard's script (guard-write.lua), run with the ghost checks of fenced exclusion.
   The new guard carries (token, writer, sequence) and applies a write at most once; the old
   one compares tokens only. */
inline guard_write(i, kk) {
  if
  :: pend[kk].tok < gseen -> pend[kk].rc = REFUSED; SEEN(W_STALE_REFUSED)
#ifndef OLD_GUARD
  :: pend[kk].tok == gseen && pend[kk].e == gwho && pend[kk].seq <= gseq ->
     /* a replay: the last write answers its recorded reply, an older one is refused; neither is applied */
     pend[kk].rc = (pend[kk].seq == gseq -> APPLIED : REFUSED); SEEN(W_WRITE_REPLAY)
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
  if :: t >= 2 -> SEEN(W_SECOND_HOLD) :: else fi;
  if :: t >= 3 -> SEEN(W_THIRD_HOLD) :: else fi;
  gissued = t
}
