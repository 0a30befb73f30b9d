/*
 * new-protocol.pml: the lock protocol of docs/protocol.md (single-node mode, one mutex key).
 *
 * Redis: one hash with the fencing counter c, the birth b, and while held the hold (id, token,
 * entry ids, entry count), with the hold's lease as its PTTL; after the last release it keeps c
 * and b for the counter retention. A queue of tickets with deadlines. The scripts below are the
 * atomic steps: acquire (fresh, replay, queue), re-entry by hold id, renewal, extend, release
 * (which grants to the live head of the queue), ticket refresh, and the guard's write.
 *
 * Clients: acquire with one id for hold, first entry and ticket; re-enter with the hold id; the
 * watchdog renews; extend(EXT) races it; releases; a waiter refreshes its ticket, attempts again
 * and takes a grant with the validity rule (the send instant of its last "queued" reply plus
 * the ticket lease). Validity follows the ordering rule (inline confirm in core.pml).
 *
 * Proposed amendments (see model/README.md), each off unless defined:
 *   FIX_GRANT_REPLY  an attempt that finds its own ticket granted answers "granted" (the client
 *                    then counts validity as for the announcement), not "acquired" (which the
 *                    client would count from the attempt's send instant with the full ttl)
 *   FIX_SHORTEN      a request that may shorten the lease (an extend to a shorter ttl, and the
 *                    renewals with that ttl after it) lowers the validity to sent + ttl - drift
 *                    when it is sent, not when its reply comes back
 *   FIX_REENTRY      a re-entry does not confirm validity (only acquire, renewal and extend do):
 *                    its replay changes nothing, so an older renewal replayed after it can leave
 *                    the PTTL shorter than the re-entry's confirmation would claim
 *   FIX_GRANT_ORDER  a "queued" reply carries the lock's counter c; a grant of token T is counted
 *                    only from a "queued" reply whose counter was below T (one that ran before the
 *                    grant): once a grant's hold expired, the waiter's next attempt queues the
 *                    same ticket again, and its "queued" reply ran after the grant
 *   FIX_GIVEN_BACK   a waiter that gives a grant back (too late to be valid) and goes on waiting
 *                    never takes that grant later (its refresh or attempt may still report it)
 *   FIX_HOLD_TOKEN   renewal, extend, re-entry and release match the hold's token as well as its
 *                    id: a waiter's ticket is the id of every hold it founds, so one id can name a
 *                    grant that expired unnoticed and then a fresh hold, and a late command for
 *                    the first (a grant given back) must not act on the second
 *   FIX_TOMBSTONE    the evidence a release leaves outlives the hash: before a hash with a counter
 *                    gets a PTTL that may end it within the replay window (a successor founded,
 *                    by an attempt or by a grant; a renewal or extend, which here may shorten),
 *                    the tokens of its epoch so far (birth .. counter, or .. the live hold's token
 *                    - 1) are recorded in a key of its own for the counter retention; an entry
 *                    given back while its hold's others remain leaves a tombstone (its id: the
 *                    hold may yet expire), and a hold served from the line leaves one (its id)
 *                    when it ends, for its ticket's late refresh. So a replay answers as the first run did even after
 *                    the hash expired (with the hold, or with a successor's hold), and an
 *                    uncontended release writes nothing of its own (docs/protocol.md)
 *   FIX_COUNTER_EPOCH a "queued" reply made while the lock has no hash carries what any hash
 *                    born later starts above (the server clock in µs; here the global counter),
 *                    not 0: a 0 reads as "before" a grant whose hold (and hash) expired unused
 *
 * REFRESH_STANDS: a ticket refresh that finds its ticket out of line (served by a grant whose
 * hold expired, or lapsed) and no tombstone of its hold stands it again at the back, as
 * keepalive.lua does; it answers "attempt now" (nothing the client counts) when that leaves it at
 * the head of a free lock. Without it a refresh answers "gone" there (a simpler world).
 */
#include "core.pml"

/* ---- Redis ------------------------------------------------------------------------------- */
/* the counter a "queued" reply carries */
#ifdef FIX_COUNTER_EPOCH
#define QCNT cnt
#else
#define QCNT (hash -> cnt : 0)
#endif

bool hash;                      /* the lock's hash exists */
unsigned hexp : TIMEBITS;       /* its expiry instant (PTTL), server clock */
unsigned cnt : 4;               /* c: the fencing counter (a reborn hash starts above every token issued) */
unsigned birth : 4;             /* b: the token at which the hash was (re)created */
unsigned hid : 4;               /* hold id, 0 when not held */
unsigned htok : 4;              /* the hold's token */
unsigned hn : 2;                /* its entry count */
unsigned hents : 12;            /* its entry ids (@<entry>) */
bool hgr;                       /* founded by a grant (its PTTL is the rest of the ticket lease) */
bool hq;                        /* served from the line (a grant, or its attempt at the head): its end leaves a tombstone */

#define QMAX 4
typedef Ticket {
  unsigned ticket : 4;          /* the ticket (the waiter's hold id) */
  unsigned dl : TIMEBITS        /* its deadline, server clock */
}
Ticket q[QMAX];                 /* the queue, head first */
unsigned qn : 3;

unsigned tomb : 12;             /* FIX_TOMBSTONE: ids of entries given back from a hold that lived on, and of holds served from the line that ended (kept for the counter retention) */
unsigned tombexp : TIMEBITS;    /* ... until this instant */
unsigned etoks : 16;            /* FIX_TOMBSTONE: tokens of recorded epochs (holds that ended without expiring) */
unsigned etexp : TIMEBITS;      /* ... until this instant */

inline expire() {
  if
  :: hash && hexp <= now ->
     if :: hid != 0 -> printf("t=%d redis: hold %d (token %d) expired\n", now, hid, htok) :: else fi;
     hash = false; hexp = 0; birth = 0; hid = 0; htok = 0; hn = 0; hents = 0; hgr = false; hq = false
  :: else
  fi;
  if :: tomb != 0 && tombexp <= now -> tomb = 0; tombexp = 0 :: else fi;
  if :: etoks != 0 && etexp <= now -> etoks = 0; etexp = 0 :: else fi
}

/* FIX_TOMBSTONE: the hash's epoch from its birth to `hi` is recorded before the hash may end early */
inline keep_epoch(hi) {
#ifdef FIX_TOMBSTONE
  if
  :: hash && birth <= hi ->
     j = birth;
     do
     :: j <= hi -> etoks = etoks | BIT(j); j++
     :: else -> break
     od;
     etexp = RETAINED
  :: else
  fi
#else
  skip
#endif
}

inline qpop() {
  j = 0;
  do
  :: j + 1 < qn -> q[j].ticket = q[j + 1].ticket; q[j].dl = q[j + 1].dl; j++
  :: else -> break
  od;
  qn--; q[qn].ticket = 0; q[qn].dl = 0
}

/* lapsed tickets leave from the head */
inline prune() {
  do
  :: qn > 0 && q[0].dl <= now -> qpop()
  :: else -> break
  od
}

/* queue ticket t, or refresh its deadline */
inline enqueue(et) {
#ifdef WITNESS
  if :: wgranted & BIT(et) -> SEEN(W_REQUEUED) :: else fi;
#endif
  j = 0;
  do
  :: j < qn && q[j].ticket != et -> j++
  :: else -> break
  od;
  if
  :: j < qn -> q[j].dl = now + L
  :: else -> assert(qn < QMAX); q[qn].ticket = et; q[qn].dl = now + L; qn++
  fi
}

/* found a hold: a new token; a hash born anew records its birth */
inline found(fe, flease, fgr) {
  keep_epoch(cnt);
  cnt++;
  if :: !hash -> hash = true; birth = cnt :: else fi;
  issued(cnt);
  hid = fe; htok = cnt; hn = 1; hents = BIT(fe); hgr = fgr; hq = fgr; hexp = now + flease
}

/* the release's handoff: the live head of the queue gets the lock for the rest of its lease */
inline grant() {
  prune();
  if
  :: qn > 0 ->
     x = q[0].ticket;
     found(x, q[0].dl - now, true);
     qpop();
     cl[OWNER(x)].gmsg = htok; cl[OWNER(x)].gmh = x;
#ifdef WITNESS
     wgranted = wgranted | BIT(x);
#endif
     printf("t=%d redis: granted to ticket %d of c%d (token %d, pttl %d)\n", now, x, OWNER(x), htok, hexp - now)
  :: else
  fi
}

/* the command addresses the live hold (by id; with FIX_HOLD_TOKEN by id and token) */
#ifdef FIX_HOLD_TOKEN
#define OURS(kk) (hid == pend[kk].h && htok == pend[kk].tok)
#else
#define OURS(kk) (hid == pend[kk].h)
#endif

/* acquire.lua: replay -> same answer; free and no live ticket ahead -> found a hold; else queue */
inline s_attempt(kk) {
  if
  :: hid != 0 && (hents & BIT(pend[kk].e)) ->
#ifdef FIX_GRANT_REPLY
     pend[kk].rc = (hgr && pend[kk].e == hid -> GRANTED : ACQUIRED);
#else
     pend[kk].rc = ACQUIRED;
#endif
     pend[kk].rv = htok
  :: hid != 0 && !(hents & BIT(pend[kk].e)) ->
     enqueue(pend[kk].e); pend[kk].rc = QUEUED; pend[kk].rv = cnt
  :: hid == 0 ->
     prune();
     if
     :: qn > 0 && q[0].ticket != pend[kk].e ->
        enqueue(pend[kk].e); pend[kk].rc = QUEUED; pend[kk].rv = QCNT;
        if :: !hash -> SEEN(W_QUEUED_NO_HASH) :: else fi
     :: else ->
        if :: qn > 0 -> qpop(); x = 1 :: else -> x = 0 fi;
        found(pend[kk].e, pend[kk].ttl, false);
        hq = (x == 1);                           /* served from the line */
        pend[kk].rc = ACQUIRED; pend[kk].rv = htok
     fi
  fi
}

/* acquire.lua, re-entry: only into that very hold; never a fresh acquisition */
inline s_reenter(kk) {
  if
  :: OURS(kk) ->
     if
     :: !(hents & BIT(pend[kk].e)) ->
        hents = hents | BIT(pend[kk].e); hn++; hexp = MAX(hexp, now + pend[kk].ttl)
     :: else -> SEEN(W_REENTRY_REPLAY)        /* a replay */
     fi;
     pend[kk].rc = REENTERED; pend[kk].rv = htok
  :: else -> pend[kk].rc = NOTHELD
  fi
}

/* keepalive (renewal) and extend: set the hold's PTTL */
inline s_pexpire(kk) {
  if
  :: OURS(kk) -> keep_epoch(htok - 1); hexp = now + pend[kk].ttl; pend[kk].rc = HELD
  :: else -> pend[kk].rc = GONE
  fi
}

/* release.lua: one entry; the last one frees the hold (counter retention) and grants */
inline s_release(i, kk) {
  if
  :: OURS(kk) && (hents & BIT(pend[kk].e)) ->
     hents = hents ^ BIT(pend[kk].e); hn--;
     if
     :: hn == 0 ->
#ifdef FIX_TOMBSTONE
        if :: hq -> tomb = tomb | BIT(hid); tombexp = RETAINED :: else fi;
#endif
        x = OWNER(hid);
        if
        /* its owner's hold: the same id and token (a ticket is the id of every hold its waiter
           founds or is granted, so one id may name a hold that expired and a later grant) */
        :: cl[x].hold == hid && cl[x].tok == htok && (cl[x].ent1 == IN || cl[x].ent2 == IN) -> bad_free = true
        :: else
        fi;
        printf("t=%d redis: hold %d (token %d) released\n", now, hid, htok);
        hid = 0; htok = 0; hgr = false; hq = false; hents = 0; hexp = RETAINED;
        grant();
        pend[kk].rc = RELEASED
     :: else ->
#ifdef FIX_TOMBSTONE
        tomb = tomb | BIT(pend[kk].e); tombexp = RETAINED;   /* the hold may still expire */
#endif
        pend[kk].rc = DECREMENTED
     fi
  :: OURS(kk) && !(hents & BIT(pend[kk].e)) ->
     pend[kk].rc = DECREMENTED;                /* replay of a non-final release */
     SEEN(W_NONFINAL_REPLAY)
  :: !OURS(kk) && ((hash && birth <= pend[kk].tok) || (pend[kk].tok > 0 && (etoks & BIT(pend[kk].tok))) || (tomb & (BIT(pend[kk].e) | BIT(pend[kk].h)))) ->
     pend[kk].rc = RELEASED;                   /* hold gone from a hash (or a recorded epoch) alive since its token */
     if :: pend[kk].once -> SEEN(W_FINAL_REPLAY) :: else fi
  :: else -> pend[kk].rc = GONE
  fi;
  if :: !pend[kk].once -> pend[kk].ok = (pend[kk].rc != GONE) :: else fi
}

/* keepalive, ticket refresh: refresh a live ticket; report a grant */
inline s_refresh(kk) {
  if
  :: hid == pend[kk].e -> pend[kk].rc = GRANTED; pend[kk].rv = htok
  :: else ->
     j = 0;
     do
     :: j < qn && q[j].ticket != pend[kk].e -> j++
     :: else -> break
     od;
     if
     :: j < qn && q[j].dl > now -> q[j].dl = now + L; pend[kk].rc = QUEUED; pend[kk].rv = QCNT;
        if :: !hash -> SEEN(W_QUEUED_NO_HASH) :: else fi
#ifdef REFRESH_STANDS
     :: else ->
        if
        :: tomb & BIT(pend[kk].e) -> pend[kk].rc = GONE     /* its hold was released: never again */
        :: else ->
           prune(); enqueue(pend[kk].e);
           if
           :: hid == 0 && q[0].ticket == pend[kk].e -> pend[kk].rc = GONE   /* "attempt now" */
           :: else ->
              pend[kk].rc = QUEUED; pend[kk].rv = QCNT;
              if :: !hash -> SEEN(W_QUEUED_NO_HASH) :: else fi
           fi
        fi
#else
     :: else -> pend[kk].rc = GONE             /* lapsed (pruned later) or never queued */
#endif
     fi
  fi
}

inline run_script(i, kk) {
  if
  :: pend[kk].op == ATTEMPT -> s_attempt(kk)
  :: pend[kk].op == REENTER -> s_reenter(kk)
  :: pend[kk].op == RENEW || pend[kk].op == EXTEND -> s_pexpire(kk)
  :: pend[kk].op == RELEASE -> s_release(i, kk)
  :: pend[kk].op == REFRESH -> s_refresh(kk)
  :: pend[kk].op == WRITE -> guard_write(i, kk)
  fi;
  if
  :: pend[kk].once -> printf("t=%d redis: c%d %e(h%d e%d tok%d ttl%d) again (replay) -> %e %d\n", now, i,
                             pend[kk].op, pend[kk].h, pend[kk].e, pend[kk].tok, pend[kk].ttl, pend[kk].rc, pend[kk].rv)
  :: else -> printf("t=%d redis: c%d %e(h%d e%d tok%d ttl%d) -> %e %d\n", now, i,
                    pend[kk].op, pend[kk].h, pend[kk].e, pend[kk].tok, pend[kk].ttl, pend[kk].rc, pend[kk].rv)
  fi
}

/* ---- clients ------------------------------------------------------------------------------ */

/* the acquisition is over: forget its fields (fewer states; replies for it are ignored) */
inline idle(i) {
  cl[i].phase = IDLE; cl[i].tok = 0; cl[i].vu = 0; cl[i].ttlc = 0; cl[i].lost = false; cl[i].qs = 0; cl[i].qc = 0; cl[i].renewing = false; cl[i].gb = 0
}

/* no entry in hand or asked for any more: the validity and the token are of no further use */
inline unheld(i) {
  if
  :: cl[i].ent1 != IN && cl[i].ent1 != ASKED && cl[i].ent2 != IN && cl[i].ent2 != ASKED ->
     cl[i].tok = 0; cl[i].vu = 0; cl[i].ttlc = 0; cl[i].lost = false; cl[i].renewing = false
  :: else
  fi
}

/* no entry left in hand or on the wire: the acquisition is over */
inline settle(i) {
  if
  :: cl[i].phase == HOLDING && cl[i].ent1 != IN && cl[i].ent1 != OUT && cl[i].ent2 != IN && cl[i].ent2 != OUT && cl[i].ent2 != ASKED ->
     idle(i)
  :: else
  fi
}

/* a "queued" reply: the newest one (by send instant) counts, with the counter it reports */
inline queued(i) {
  if
  :: rsent >= cl[i].qs -> cl[i].qs = rsent; cl[i].qc = rrv
  :: else
  fi
}

/* the grant is ours: valid from the send instant of the last "queued" reply plus the ticket lease */
inline granted(i, t) {
  if
  :: cl[i].phase == WAITING && cl[i].ent1 == ASKED && t != cl[i].gb ->
     if
#ifdef FIX_GRANT_ORDER
     :: cl[i].qs != 0 && LC(i) < cl[i].qs + L - D && cl[i].qc < t ->
#else
     :: cl[i].qs != 0 && LC(i) < cl[i].qs + L - D ->
#endif
        cl[i].phase = HOLDING; cl[i].ent1 = IN; cl[i].tok = t; cl[i].vu = cl[i].qs + L - D; cl[i].ttlc = TTL; cl[i].qs = 0; cl[i].qc = 0;
        printf("t=%d c%d: granted, token %d, valid until %d\n", now, i, t, cl[i].vu); SEEN(W_GRANT_TAKEN)
     :: else ->
        /* too late to be valid (or no "queued" reply to count from): give it back at once, and
           go on waiting with the same ticket, never to take that grant again */
        printf("t=%d c%d: grant of token %d cannot be counted (too late, or no earlier \"queued\" reply): gives it back\n", now, i, t);
#ifdef FIX_GIVEN_BACK
        cl[i].gb = t;
#endif
        if :: cl[i].np < MAXPEND -> send(i, RELEASE, cl[i].hold, cl[i].hold, t, 0, 0, false) :: else fi
     fi
  :: else
  fi
}

inline on_reply(i) {
  if
  :: rop == ATTEMPT ->
     if
     :: rrc == ACQUIRED && rh == cl[i].hold && cl[i].phase == WAITING && cl[i].ent1 == ASKED ->
        cl[i].phase = HOLDING; cl[i].ent1 = IN; cl[i].tok = rrv; cl[i].ttlc = TTL; cl[i].qs = 0; cl[i].qc = 0; confirm(i)
     :: rrc == ACQUIRED && rh == cl[i].hold && cl[i].phase == HOLDING && rrv == cl[i].tok ->
        confirm(i)                       /* an attempt that met the hold its ticket was granted */
     :: rrc == ACQUIRED && (rh != cl[i].hold || cl[i].phase == IDLE) ->
        /* it took the lock after we stopped waiting: give it back */
        if :: cl[i].np < MAXPEND -> send(i, RELEASE, rh, re, rrv, 0, 0, false) :: else fi
     :: rrc == QUEUED && rh == cl[i].hold && cl[i].phase == WAITING -> queued(i)
     :: rrc == GRANTED && rh == cl[i].hold -> granted(i, rrv)
     :: else
     fi
  :: rop == REFRESH ->
     if
     :: rrc == QUEUED && rh == cl[i].hold && cl[i].phase == WAITING -> queued(i)
     :: rrc == GRANTED && rh == cl[i].hold -> granted(i, rrv)
     :: else
     fi
  :: rop == REENTER ->
     if
     :: rh == cl[i].hold && cl[i].ent2 == ASKED && rrc == REENTERED ->
        cl[i].ent2 = IN;
#ifndef FIX_REENTRY
        confirm(i)
#endif
     :: rh == cl[i].hold && cl[i].ent2 == ASKED && rrc == NOTHELD -> cl[i].ent2 = DONE; cl[i].lost = true; settle(i)
     :: else
     fi
  :: rop == RENEW || rop == EXTEND ->
     if
     :: rh == cl[i].hold && cl[i].phase == HOLDING ->
        if :: rop == RENEW -> cl[i].renewing = false :: else fi;
        if
        :: rrc == HELD -> confirm(i); if :: rop == EXTEND && !cl[i].lost -> cl[i].ttlc = rttl :: else fi
        :: else -> cl[i].lost = true
        fi
     :: else
     fi
  :: rop == RELEASE ->
     if :: (rrc == GONE || rrc == TAKEN) && rok -> bad_lost = true :: else fi;
     if
     :: rh == cl[i].hold && re == cl[i].hold && cl[i].ent1 == OUT -> cl[i].ent1 = DONE; settle(i)
     :: rh == cl[i].hold && re != cl[i].hold && cl[i].ent2 == OUT -> cl[i].ent2 = DONE; settle(i)
     :: else
     fi
  :: rop == WRITE -> skip
  fi
}

/* a release of one entry: no network call if the hold is known lost or its validity ran out
   (LockLostError) */
#define RELEASE_ENTRY(ent, eid, when) \
  :: d_step { cl[_pid].ent == IN && when && (cl[_pid].lost || LC(_pid) >= cl[_pid].vu || cl[_pid].np < MAXPEND) -> \
       if \
       :: cl[_pid].lost || LC(_pid) >= cl[_pid].vu -> cl[_pid].ent = DONE \
       :: else -> cl[_pid].ent = OUT; send(_pid, RELEASE, cl[_pid].hold, eid, cl[_pid].tok, 0, 0, false) \
       fi; \
       unheld(_pid); settle(_pid) }

active [NC] proctype Client() {
  assert(_pid < NC);            /* the clients are the first processes: _pid is the client's index */
  do
  /* acquire: one new id for the hold, its first entry and its ticket */
  :: d_step {
       cl[_pid].phase == IDLE && cl[_pid].acq < BUDGET(ACQS, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].hold = ID(_pid, cl[_pid].acq); cl[_pid].acq++;
       cl[_pid].phase = WAITING; cl[_pid].ent1 = ASKED; cl[_pid].ent2 = NO; cl[_pid].tok = 0; cl[_pid].vu = 0;
       cl[_pid].lost = false; cl[_pid].qs = 0; cl[_pid].qc = 0; cl[_pid].gb = 0; cl[_pid].renewing = false; cl[_pid].ttlc = TTL;
       send(_pid, ATTEMPT, cl[_pid].hold, cl[_pid].hold, 0, TTL, 0, true)
     }
  /* a waiter attempts again (its wait is capped by the holder's PTTL; one attempt at a time),
     or the keepalive refreshes its ticket */
  :: d_step {
       cl[_pid].phase == WAITING && !ON_WIRE(_pid, ATTEMPT) && cl[_pid].nretry < BUDGET(RETRIES, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nretry++; send(_pid, ATTEMPT, cl[_pid].hold, cl[_pid].hold, 0, TTL, 0, true)
     }
  :: d_step {
       cl[_pid].phase == WAITING && cl[_pid].nretry < BUDGET(RETRIES, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nretry++; send(_pid, REFRESH, cl[_pid].hold, cl[_pid].hold, 0, 0, 0, false)
     }
  /* the grant's announcement arrives, or pub/sub loses it */
  :: d_step { cl[_pid].gmsg != 0 -> if :: cl[_pid].gmh == cl[_pid].hold -> granted(_pid, cl[_pid].gmsg) :: else fi; cl[_pid].gmsg = 0; cl[_pid].gmh = 0 }
  :: d_step { cl[_pid].gmsg != 0 -> cl[_pid].gmsg = 0; cl[_pid].gmh = 0 }
  /* the watchdog renews with the hold's ttl */
  :: d_step {
       cl[_pid].phase == HOLDING && (cl[_pid].ent1 == IN || cl[_pid].ent2 == IN) && !cl[_pid].lost && LC(_pid) < cl[_pid].vu &&
       !cl[_pid].renewing &&
       cl[_pid].nren < BUDGET(RENEWALS, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nren++; cl[_pid].renewing = true;
#ifdef FIX_SHORTEN
       cl[_pid].vu = MIN(cl[_pid].vu, LC(_pid) + cl[_pid].ttlc - D);
#endif
       if :: ON_WIRE(_pid, EXTEND) -> SEEN(W_RACE) :: else fi;
       send(_pid, RENEW, cl[_pid].hold, 0, cl[_pid].tok, cl[_pid].ttlc, 0, true)
     }
  /* lease.extend(EXT), racing the watchdog */
  :: d_step {
       cl[_pid].phase == HOLDING && (cl[_pid].ent1 == IN || cl[_pid].ent2 == IN) && !cl[_pid].lost && LC(_pid) < cl[_pid].vu &&
       cl[_pid].nxt < BUDGET(EXTENDS, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nxt++;
#ifdef FIX_SHORTEN
       cl[_pid].vu = MIN(cl[_pid].vu, LC(_pid) + EXT - D);
#endif
       if :: ON_WIRE(_pid, RENEW) -> SEEN(W_RACE) :: else fi;
       send(_pid, EXTEND, cl[_pid].hold, 0, cl[_pid].tok, EXT, 0, true)
     }
  /* a nested withLock re-enters with the hold id it inherits */
  :: d_step {
       cl[_pid].phase == HOLDING && cl[_pid].ent1 == IN && cl[_pid].ent2 == NO && !cl[_pid].lost && LC(_pid) < cl[_pid].vu &&
       cl[_pid].nre < BUDGET(REENTRIES, _pid) &&
       cl[_pid].np < MAXPEND ->
       cl[_pid].nre++; cl[_pid].ent2 = ASKED;
#ifdef FIX_REENTRY
       send(_pid, REENTER, cl[_pid].hold, REID(_pid, cl[_pid].acq - 1), cl[_pid].tok, cl[_pid].ttlc, 0, false)
#else
       send(_pid, REENTER, cl[_pid].hold, REID(_pid, cl[_pid].acq - 1), cl[_pid].tok, cl[_pid].ttlc, 0, true)
#endif
     }
  /* releases: the nested section ends before the outer one (withLock awaits it) */
  RELEASE_ENTRY(ent2, REID(_pid, cl[_pid].acq - 1), true)
  RELEASE_ENTRY(ent1, cl[_pid].hold, (cl[_pid].ent2 == NO || cl[_pid].ent2 == DONE))
  /* a fenced write from the critical section; it may reach the guard long after (a write under
     way when the process was paused), when the lease ran out or the lock was released */
  :: d_step {
       (cl[_pid].ent1 == IN || cl[_pid].ent2 == IN) && cl[_pid].nwr < BUDGET(WRITES, _pid) && cl[_pid].np < MAXPEND ->
       send(_pid, WRITE, cl[_pid].hold, cl[_pid].hold, cl[_pid].tok, 0, cl[_pid].nwr, false); cl[_pid].nwr++
     }
  od
}

#include "world.pml"
