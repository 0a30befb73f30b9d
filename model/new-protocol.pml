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
 *   FIX_TOMBSTONE    every release leaves a tombstone (its entry id) in a key of its own that
 *                    lives for the counter retention, so that its replay answers as the first run
 *                    did even after the hash expired (with the hold, or with a successor's hold)
 */
#include "core.pml"

/* ---- Redis ------------------------------------------------------------------------------- */
bool hash;                  /* the lock's hash exists */
byte hexp;                  /* its expiry instant (PTTL), server clock */
byte cnt;                   /* c: the fencing counter (a reborn hash starts above every token issued) */
byte birth;                 /* b: the token at which the hash was (re)created */
byte hid;                   /* hold id, 0 when not held */
byte htok;                  /* the hold's token */
byte hn;                    /* its entry count */
unsigned hents : 12;        /* its entry ids (@<entry>) */
bool hgr;                   /* founded by a grant (its PTTL is the rest of the ticket lease) */

#define QMAX 4
byte q[QMAX];               /* the queue of tickets, head first */
byte qdl[QMAX];             /* each ticket's deadline, server clock */
byte qn;

unsigned tomb : 12;         /* FIX_TOMBSTONE: ids of entries released (kept for the counter retention) */
byte tombexp;               /* ... until this instant */

byte gmsg[NC];              /* a grant announcement on its way to client i: the token */
byte gmh[NC];               /* ... and the hold (ticket) it grants */

inline expire() {
  if
  :: hash && hexp <= now ->
     if :: hid != 0 -> printf("t=%d redis: hold %d (token %d) expired\n", now, hid, htok) :: else fi;
     hash = false; hexp = 0; birth = 0; hid = 0; htok = 0; hn = 0; hents = 0; hgr = false
  :: else
  fi;
  if :: tomb != 0 && tombexp <= now -> tomb = 0; tombexp = 0 :: else fi
}

inline qpop() {
  j = 0;
  do
  :: j + 1 < qn -> q[j] = q[j + 1]; qdl[j] = qdl[j + 1]; j++
  :: else -> break
  od;
  qn--; q[qn] = 0; qdl[qn] = 0
}

/* lapsed tickets leave from the head */
inline prune() {
  do
  :: qn > 0 && qdl[0] <= now -> qpop()
  :: else -> break
  od
}

/* queue ticket t, or refresh its deadline */
inline enqueue(t) {
  j = 0;
  do
  :: j < qn && q[j] != t -> j++
  :: else -> break
  od;
  if
  :: j < qn -> qdl[j] = now + L
  :: else -> assert(qn < QMAX); q[qn] = t; qdl[qn] = now + L; qn++
  fi
}

/* found a hold: a new token; a hash born anew records its birth */
inline found(fe, flease, fgr) {
  cnt++;
  if :: !hash -> hash = true; birth = cnt :: else fi;
  issued(cnt);
  hid = fe; htok = cnt; hn = 1; hents = BIT(fe); hgr = fgr; hexp = now + flease
}

/* the release's handoff: the live head of the queue gets the lock for the rest of its lease */
inline grant() {
  prune();
  if
  :: qn > 0 ->
     x = q[0];
     found(x, qdl[0] - now, true);
     qpop();
     gmsg[OWNER(x)] = htok; gmh[OWNER(x)] = x;
     printf("t=%d redis: granted to ticket %d of c%d (token %d, pttl %d)\n", now, x, OWNER(x), htok, hexp - now)
  :: else
  fi
}

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
     enqueue(pend[kk].e); pend[kk].rc = QUEUED
  :: hid == 0 ->
     prune();
     if
     :: qn > 0 && q[0] != pend[kk].e -> enqueue(pend[kk].e); pend[kk].rc = QUEUED
     :: else ->
        if :: qn > 0 -> qpop() :: else fi;
        found(pend[kk].e, pend[kk].ttl, false);
        pend[kk].rc = ACQUIRED; pend[kk].rv = htok
     fi
  fi
}

/* acquire.lua, re-entry: only into that very hold; never a fresh acquisition */
inline s_reenter(kk) {
  if
  :: hid == pend[kk].h ->
     if
     :: !(hents & BIT(pend[kk].e)) ->
        hents = hents | BIT(pend[kk].e); hn++; hexp = MAX(hexp, now + pend[kk].ttl)
     :: else   /* a replay */
     fi;
     pend[kk].rc = REENTERED; pend[kk].rv = htok
  :: else -> pend[kk].rc = NOTHELD
  fi
}

/* keepalive (renewal) and extend: set the hold's PTTL */
inline s_pexpire(kk) {
  if
  :: hid == pend[kk].h -> hexp = now + pend[kk].ttl; pend[kk].rc = HELD
  :: else -> pend[kk].rc = GONE
  fi
}

/* release.lua: one entry; the last one frees the hold (counter retention) and grants */
inline s_release(i, kk) {
  if
  :: hid == pend[kk].h && (hents & BIT(pend[kk].e)) ->
     hents = hents ^ BIT(pend[kk].e); hn--;
#ifdef FIX_TOMBSTONE
     tomb = tomb | BIT(pend[kk].e); tombexp = RETAINED;
#endif
     if
     :: hn == 0 ->
        x = OWNER(hid);
        if
        :: hold[x] == hid && (ent1[x] == IN || ent2[x] == IN) -> bad_free = true
        :: else
        fi;
        printf("t=%d redis: hold %d (token %d) released\n", now, hid, htok);
        hid = 0; htok = 0; hgr = false; hents = 0; hexp = RETAINED;
        grant();
        pend[kk].rc = RELEASED
     :: else -> pend[kk].rc = DECREMENTED
     fi
  :: hid == pend[kk].h && !(hents & BIT(pend[kk].e)) ->
     pend[kk].rc = DECREMENTED                 /* replay of a non-final release */
  :: hid != pend[kk].h && ((hash && birth <= pend[kk].tok) || (tomb & BIT(pend[kk].e))) ->
     pend[kk].rc = RELEASED                    /* hold gone from a hash alive since its token */
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
     :: j < qn && q[j] != pend[kk].e -> j++
     :: else -> break
     od;
     if
     :: j < qn && qdl[j] > now -> qdl[j] = now + L; pend[kk].rc = QUEUED
     :: else -> pend[kk].rc = GONE             /* lapsed (pruned later) or never queued */
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
  phase[i] = IDLE; tok[i] = 0; vu[i] = 0; ttlc[i] = 0; lost[i] = false; qs[i] = 0; renewing[i] = false
}

/* no entry in hand or asked for any more: the validity and the token are of no further use */
inline unheld(i) {
  if
  :: ent1[i] != IN && ent1[i] != ASKED && ent2[i] != IN && ent2[i] != ASKED ->
     tok[i] = 0; vu[i] = 0; ttlc[i] = 0; lost[i] = false; renewing[i] = false
  :: else
  fi
}

/* no entry left in hand or on the wire: the acquisition is over */
inline settle(i) {
  if
  :: phase[i] == HOLDING && ent1[i] != IN && ent1[i] != OUT && ent2[i] != IN && ent2[i] != OUT && ent2[i] != ASKED ->
     idle(i)
  :: else
  fi
}

/* the grant is ours: valid from the send instant of the last "queued" reply plus the ticket lease */
inline granted(i, t) {
  if
  :: phase[i] == WAITING && ent1[i] == ASKED ->
     if
     :: qs[i] != 0 && LC(i) < qs[i] + L - D ->
        phase[i] = HOLDING; ent1[i] = IN; tok[i] = t; vu[i] = qs[i] + L - D; ttlc[i] = TTL; qs[i] = 0;
        printf("t=%d c%d: granted, token %d, valid until %d\n", now, i, t, vu[i])
     :: else ->
        /* too late to be valid (or no "queued" reply to count from): give it back, stop waiting */
        ent1[i] = DONE;
        if :: np[i] < MAXPEND -> send(i, RELEASE, hold[i], hold[i], t, 0, 0, false) :: else fi;
        idle(i)
     fi
  :: else
  fi
}

inline on_reply(i) {
  if
  :: rop == ATTEMPT ->
     if
     :: rrc == ACQUIRED && rh == hold[i] && phase[i] == WAITING && ent1[i] == ASKED ->
        phase[i] = HOLDING; ent1[i] = IN; tok[i] = rrv; ttlc[i] = TTL; qs[i] = 0; confirm(i)
     :: rrc == ACQUIRED && rh == hold[i] && phase[i] == HOLDING && rrv == tok[i] ->
        confirm(i)                       /* an attempt that met the hold its ticket was granted */
     :: rrc == ACQUIRED && (rh != hold[i] || phase[i] == IDLE) ->
        /* it took the lock after we stopped waiting: give it back */
        if :: np[i] < MAXPEND -> send(i, RELEASE, rh, re, rrv, 0, 0, false) :: else fi
     :: rrc == QUEUED && rh == hold[i] && phase[i] == WAITING -> qs[i] = MAX(qs[i], rsent)
     :: rrc == GRANTED && rh == hold[i] -> granted(i, rrv)
     :: else
     fi
  :: rop == REFRESH ->
     if
     :: rrc == QUEUED && rh == hold[i] && phase[i] == WAITING -> qs[i] = MAX(qs[i], rsent)
     :: rrc == GRANTED && rh == hold[i] -> granted(i, rrv)
     :: else
     fi
  :: rop == REENTER ->
     if
     :: rh == hold[i] && ent2[i] == ASKED && rrc == REENTERED ->
        ent2[i] = IN;
#ifndef FIX_REENTRY
        confirm(i)
#endif
     :: rh == hold[i] && ent2[i] == ASKED && rrc == NOTHELD -> ent2[i] = DONE; lost[i] = true; settle(i)
     :: else
     fi
  :: rop == RENEW || rop == EXTEND ->
     if
     :: rh == hold[i] && phase[i] == HOLDING ->
        if :: rop == RENEW -> renewing[i] = false :: else fi;
        if
        :: rrc == HELD -> confirm(i); if :: rop == EXTEND && !lost[i] -> ttlc[i] = rttl :: else fi
        :: else -> lost[i] = true
        fi
     :: else
     fi
  :: rop == RELEASE ->
     if :: (rrc == GONE || rrc == TAKEN) && rok -> bad_lost = true :: else fi;
     if
     :: rh == hold[i] && re == hold[i] && ent1[i] == OUT -> ent1[i] = DONE; settle(i)
     :: rh == hold[i] && re != hold[i] && ent2[i] == OUT -> ent2[i] = DONE; settle(i)
     :: else
     fi
  :: rop == WRITE -> skip
  fi
}

/* a release of one entry: no network call if the hold is known lost or its validity ran out
   (LockLostError) */
#define RELEASE_ENTRY(ent, eid, when) \
  :: d_step { ent[_pid] == IN && when && (lost[_pid] || LC(_pid) >= vu[_pid] || np[_pid] < MAXPEND) -> \
       if \
       :: lost[_pid] || LC(_pid) >= vu[_pid] -> ent[_pid] = DONE \
       :: else -> ent[_pid] = OUT; send(_pid, RELEASE, hold[_pid], eid, tok[_pid], 0, 0, false) \
       fi; \
       unheld(_pid); settle(_pid) }

active [NC] proctype Client() {
  assert(_pid < NC);            /* the clients are the first processes: _pid is the client's index */
  do
  /* acquire: one new id for the hold, its first entry and its ticket */
  :: d_step {
       phase[_pid] == IDLE && acq[_pid] < ACQS && np[_pid] < MAXPEND ->
       hold[_pid] = ID(_pid, acq[_pid]); acq[_pid]++;
       phase[_pid] = WAITING; ent1[_pid] = ASKED; ent2[_pid] = NO; tok[_pid] = 0; vu[_pid] = 0;
       lost[_pid] = false; qs[_pid] = 0; renewing[_pid] = false; ttlc[_pid] = TTL;
       send(_pid, ATTEMPT, hold[_pid], hold[_pid], 0, TTL, 0, true)
     }
  /* a waiter attempts again (its wait is capped by the holder's PTTL; one attempt at a time),
     or the keepalive refreshes its ticket */
  :: d_step {
       phase[_pid] == WAITING && !ON_WIRE(_pid, ATTEMPT) && nretry[_pid] < BUDGET(RETRIES, _pid) && np[_pid] < MAXPEND ->
       nretry[_pid]++; send(_pid, ATTEMPT, hold[_pid], hold[_pid], 0, TTL, 0, true)
     }
  :: d_step {
       phase[_pid] == WAITING && nretry[_pid] < BUDGET(RETRIES, _pid) && np[_pid] < MAXPEND ->
       nretry[_pid]++; send(_pid, REFRESH, hold[_pid], hold[_pid], 0, 0, 0, false)
     }
  /* the grant's announcement arrives, or pub/sub loses it */
  :: d_step { gmsg[_pid] != 0 -> if :: gmh[_pid] == hold[_pid] -> granted(_pid, gmsg[_pid]) :: else fi; gmsg[_pid] = 0; gmh[_pid] = 0 }
  :: d_step { gmsg[_pid] != 0 -> gmsg[_pid] = 0; gmh[_pid] = 0 }
  /* the watchdog renews with the hold's ttl */
  :: d_step {
       phase[_pid] == HOLDING && (ent1[_pid] == IN || ent2[_pid] == IN) && !lost[_pid] && LC(_pid) < vu[_pid] &&
       !renewing[_pid] &&
       nren[_pid] < BUDGET(RENEWALS, _pid) && np[_pid] < MAXPEND ->
       nren[_pid]++; renewing[_pid] = true;
#ifdef FIX_SHORTEN
       vu[_pid] = MIN(vu[_pid], LC(_pid) + ttlc[_pid] - D);
#endif
       send(_pid, RENEW, hold[_pid], 0, tok[_pid], ttlc[_pid], 0, true)
     }
  /* lease.extend(EXT), racing the watchdog */
  :: d_step {
       phase[_pid] == HOLDING && (ent1[_pid] == IN || ent2[_pid] == IN) && !lost[_pid] && LC(_pid) < vu[_pid] &&
       nxt[_pid] < BUDGET(EXTENDS, _pid) && np[_pid] < MAXPEND ->
       nxt[_pid]++;
#ifdef FIX_SHORTEN
       vu[_pid] = MIN(vu[_pid], LC(_pid) + EXT - D);
#endif
       send(_pid, EXTEND, hold[_pid], 0, tok[_pid], EXT, 0, true)
     }
  /* a nested withLock re-enters with the hold id it inherits */
  :: d_step {
       phase[_pid] == HOLDING && ent1[_pid] == IN && ent2[_pid] == NO && !lost[_pid] && LC(_pid) < vu[_pid] &&
       nre[_pid] < BUDGET(REENTRIES, _pid) &&
       np[_pid] < MAXPEND ->
       nre[_pid]++; ent2[_pid] = ASKED;
#ifdef FIX_REENTRY
       send(_pid, REENTER, hold[_pid], REID(_pid, acq[_pid] - 1), 0, ttlc[_pid], 0, false)
#else
       send(_pid, REENTER, hold[_pid], REID(_pid, acq[_pid] - 1), 0, ttlc[_pid], 0, true)
#endif
     }
  /* releases: the nested section ends before the outer one (withLock awaits it) */
  RELEASE_ENTRY(ent2, REID(_pid, acq[_pid] - 1), true)
  RELEASE_ENTRY(ent1, hold[_pid], (ent2[_pid] == NO || ent2[_pid] == DONE))
  /* a fenced write from the critical section; it may reach the guard long after (a write under
     way when the process was paused), when the lease ran out or the lock was released */
  :: d_step {
       (ent1[_pid] == IN || ent2[_pid] == IN) && nwr[_pid] < BUDGET(WRITES, _pid) && np[_pid] < MAXPEND ->
       send(_pid, WRITE, hold[_pid], hold[_pid], tok[_pid], 0, nwr[_pid], false); nwr[_pid]++
     }
  od
}

#include "world.pml"
