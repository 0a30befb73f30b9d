/*
 * old-protocol.pml: the protocol surelock 0.1 implements (src/scripts/*.lua, src/lease.ts,
 * src/watchdog.ts), for contrast. One mutex key, single mode.
 *
 * Redis: the holder hash {o owner, n entries, t token} with the lease as its PTTL, and a fencing
 * counter. acquire.lua re-enters when the owner matches (a resent fresh acquire re-enters too),
 * release.lua decrements the count of whoever matches owner and token (a resent release
 * decrements again), extend.lua and renew-batch.lua set the PTTL, guard-write.lua compares
 * tokens only. Waiters retry (the queue and its tickets are left out: they play no part in
 * the bugs shown here).
 *
 * Clients: Hold.confirmed(sentAt, ttl = this.ttlMs): a renewal's reply confirms the hold's
 * *current* ttl (which an extend's reply may have changed since the renewal was sent), and any
 * reply lengthens validity, older or not.
 */
#define OLD_GUARD
#include "core.pml"

/* ---- Redis ------------------------------------------------------------------------------- */
unsigned hexp : TIMEBITS;       /* the holder hash's expiry instant, server clock */
unsigned cnt : 4;               /* the fencing counter (never restarts below an issued token) */
unsigned hid : 4;               /* o: the owner (here the acquisition's id), 0 when free */
unsigned htok : 4;              /* t */
unsigned hn : 2;                /* n */

inline expire() {
  if
  :: hid != 0 && hexp <= now ->
     printf("t=%d redis: hold %d (token %d) expired\n", now, hid, htok);
     hexp = 0; hid = 0; htok = 0; hn = 0
  :: else
  fi
}

/* acquire.lua: the owner's entry count grows; else busy; else take it */
inline s_acquire(kk) {
  if
  :: hid == pend[kk].h ->
     hn++; hexp = MAX(hexp, now + pend[kk].ttl); pend[kk].rc = REENTERED; pend[kk].rv = htok
  :: hid != 0 && hid != pend[kk].h -> pend[kk].rc = BUSY
  :: hid == 0 ->
     cnt++; issued(cnt);
     hid = pend[kk].h; htok = cnt; hn = 1; hexp = now + pend[kk].ttl;
     pend[kk].rc = ACQUIRED; pend[kk].rv = htok
  fi
}

/* release.lua: owner and token must match; the count drops; the last entry deletes the hash */
inline s_release(kk) {
  if
  :: hid == 0 -> pend[kk].rc = GONE
  :: hid != 0 && (hid != pend[kk].h || htok != pend[kk].tok) -> pend[kk].rc = TAKEN
  :: hid == pend[kk].h && htok == pend[kk].tok && hn > 1 ->
     hn--; pend[kk].rc = DECREMENTED;
     if :: pend[kk].once -> SEEN(W_NONFINAL_REPLAY) :: else fi
  :: hid == pend[kk].h && htok == pend[kk].tok && hn <= 1 ->
     x = OWNER(hid);
     if
     :: cl[x].hold == hid && (cl[x].ent1 == IN || cl[x].ent2 == IN) -> bad_free = true
     :: else
     fi;
     printf("t=%d redis: hold %d (token %d) deleted\n", now, hid, htok);
     hexp = 0; hid = 0; htok = 0; hn = 0;
     pend[kk].rc = RELEASED
  fi;
  if :: !pend[kk].once -> pend[kk].ok = (pend[kk].rc == RELEASED || pend[kk].rc == DECREMENTED) :: else fi
}

/* extend.lua, renew-batch.lua: PEXPIRE ttl if owner and token match */
inline s_pexpire(kk) {
  if
  :: hid == 0 -> pend[kk].rc = GONE
  :: hid != 0 && (hid != pend[kk].h || htok != pend[kk].tok) -> pend[kk].rc = TAKEN
  :: else -> hexp = now + pend[kk].ttl; pend[kk].rc = HELD
  fi
}

inline run_script(i, kk) {
  if
  :: pend[kk].op == ATTEMPT || pend[kk].op == REENTER -> s_acquire(kk)
  :: pend[kk].op == RENEW || pend[kk].op == EXTEND -> s_pexpire(kk)
  :: pend[kk].op == RELEASE -> s_release(kk)
  :: pend[kk].op == WRITE -> guard_write(i, kk)
  fi;
  if
  :: pend[kk].once -> printf("t=%d redis: c%d %e(owner %d tok%d ttl%d) again (replay) -> %e %d\n", now, i,
                             pend[kk].op, pend[kk].h, pend[kk].tok, pend[kk].ttl, pend[kk].rc, pend[kk].rv)
  :: else -> printf("t=%d redis: c%d %e(owner %d tok%d ttl%d) -> %e %d\n", now, i,
                    pend[kk].op, pend[kk].h, pend[kk].tok, pend[kk].ttl, pend[kk].rc, pend[kk].rv)
  fi
}

/* ---- clients ------------------------------------------------------------------------------ */

inline idle(i) {
  cl[i].phase = IDLE; cl[i].tok = 0; cl[i].vu = 0; cl[i].ttlc = 0; cl[i].lost = false; cl[i].qs = 0; cl[i].qc = 0; cl[i].renewing = false
}

inline unheld(i) {
  if
  :: cl[i].ent1 != IN && cl[i].ent1 != ASKED && cl[i].ent2 != IN && cl[i].ent2 != ASKED ->
     cl[i].tok = 0; cl[i].vu = 0; cl[i].ttlc = 0; cl[i].lost = false; cl[i].renewing = false
  :: else
  fi
}

inline settle(i) {
  if
  :: cl[i].phase == HOLDING && cl[i].ent1 != IN && cl[i].ent1 != OUT && cl[i].ent2 != IN && cl[i].ent2 != OUT && cl[i].ent2 != ASKED ->
     idle(i)
  :: else
  fi
}

/* Hold.confirmed(sentAt, ttl): validity from the send instant with the given ttl, whatever
   else was sent since; a lost hold is not revived */
inline confirmed(i, cttl) {
  if
  :: cl[i].lost || (cl[i].ent1 != IN && cl[i].ent2 != IN) -> skip
  :: else ->
     cl[i].vu = rsent + cttl - D;
     printf("t=%d c%d: reply to %e (sent at %d): confirmed(sentAt, ttl %d): valid until %d on its clock (%d now)\n",
            now, i, rop, rsent, cttl, cl[i].vu, LC(i))
  fi
}

inline on_reply(i) {
  if
  :: rop == ATTEMPT ->
     if
     :: (rrc == ACQUIRED || rrc == REENTERED) && rh == cl[i].hold && cl[i].phase == WAITING && cl[i].ent1 == ASKED ->
        cl[i].phase = HOLDING; cl[i].ent1 = IN; cl[i].tok = rrv; cl[i].ttlc = TTL; confirmed(i, TTL);
        /* "reentered" for an owner only we know: the acquire was resent and ran twice; give the
           duplicate entry back (lockable.ts) */
        if :: rrc == REENTERED && cl[i].np < MAXPEND -> send(i, RELEASE, rh, 0, rrv, 0, 0, false) :: else fi
     :: (rrc == ACQUIRED || rrc == REENTERED) && (rh != cl[i].hold || cl[i].phase == IDLE) ->
        if :: cl[i].np < MAXPEND -> send(i, RELEASE, rh, 0, rrv, 0, 0, false) :: else fi
     :: else   /* busy: the waiter tries again later */
     fi
  :: rop == REENTER ->
     if
     :: rh == cl[i].hold && cl[i].ent2 == ASKED && rrc == REENTERED -> cl[i].ent2 = IN   /* the existing Hold: validity unchanged */
     :: rh == cl[i].hold && cl[i].ent2 == ASKED && rrc != REENTERED ->
        /* busy, or (not modelled further) a fresh acquisition under the inherited owner */
        cl[i].ent2 = DONE; settle(i)
     :: else
     fi
  :: rop == RENEW ->
     if
     :: rh == cl[i].hold && cl[i].phase == HOLDING ->
        cl[i].renewing = false;
        if
        :: rrc == HELD -> confirmed(i, cl[i].ttlc)          /* the current ttl, not the one sent */
        :: else -> cl[i].lost = true
        fi
     :: else
     fi
  :: rop == EXTEND ->
     if
     :: rh == cl[i].hold && cl[i].phase == HOLDING ->
        if
        :: rrc == HELD && !cl[i].lost -> confirmed(i, rttl); cl[i].ttlc = rttl
        :: rrc == HELD && cl[i].lost -> skip
        :: else -> cl[i].lost = true
        fi
     :: else
     fi
  :: rop == RELEASE ->
     if :: (rrc == GONE || rrc == TAKEN) && rok -> bad_lost = true :: else fi;
     if
     :: rh == cl[i].hold && re == 1 && cl[i].ent1 == OUT -> cl[i].ent1 = DONE; settle(i)
     :: rh == cl[i].hold && re == 2 && cl[i].ent2 == OUT -> cl[i].ent2 = DONE; settle(i)
     :: else
     fi
  :: rop == WRITE -> skip
  fi
}

/* a release of one entry (the wire carries only owner and token; e tells the client which) */
#define RELEASE_ENTRY(ent, which, when) \
  :: d_step { cl[_pid].ent == IN && when && (cl[_pid].lost || LC(_pid) >= cl[_pid].vu || cl[_pid].np < MAXPEND) -> \
       if \
       :: cl[_pid].lost || LC(_pid) >= cl[_pid].vu -> cl[_pid].ent = DONE \
       :: else -> cl[_pid].ent = OUT; send(_pid, RELEASE, cl[_pid].hold, which, cl[_pid].tok, 0, 0, false) \
       fi; \
       unheld(_pid); settle(_pid) }

active [NC] proctype Client() {
  assert(_pid < NC);
  do
  :: d_step {
       cl[_pid].phase == IDLE && cl[_pid].acq < BUDGET(ACQS, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].hold = ID(_pid, cl[_pid].acq); cl[_pid].acq++;
       cl[_pid].phase = WAITING; cl[_pid].ent1 = ASKED; cl[_pid].ent2 = NO; cl[_pid].tok = 0; cl[_pid].vu = 0;
       cl[_pid].lost = false; cl[_pid].renewing = false; cl[_pid].ttlc = TTL;
       send(_pid, ATTEMPT, cl[_pid].hold, 0, 0, TTL, 0, false)
     }
  /* a waiter tries again after a "busy" (woken by the release, or its sleep capped by the PTTL) */
  :: d_step {
       cl[_pid].phase == WAITING && !ON_WIRE(_pid, ATTEMPT) && cl[_pid].nretry < BUDGET(RETRIES, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nretry++; send(_pid, ATTEMPT, cl[_pid].hold, 0, 0, TTL, 0, false)
     }
  /* the watchdog renews with the hold's ttl as it is when sent */
  :: d_step {
       cl[_pid].phase == HOLDING && (cl[_pid].ent1 == IN || cl[_pid].ent2 == IN) && !cl[_pid].lost && LC(_pid) < cl[_pid].vu &&
       !cl[_pid].renewing && cl[_pid].nren < BUDGET(RENEWALS, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nren++; cl[_pid].renewing = true;
       if :: ON_WIRE(_pid, EXTEND) -> SEEN(W_RACE) :: else fi;
       send(_pid, RENEW, cl[_pid].hold, 0, cl[_pid].tok, cl[_pid].ttlc, 0, false)
     }
  /* lease.extend(EXT) */
  :: d_step {
       cl[_pid].phase == HOLDING && (cl[_pid].ent1 == IN || cl[_pid].ent2 == IN) && !cl[_pid].lost && LC(_pid) < cl[_pid].vu &&
       cl[_pid].nxt < BUDGET(EXTENDS, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nxt++;
       if :: ON_WIRE(_pid, RENEW) -> SEEN(W_RACE) :: else fi;
       send(_pid, EXTEND, cl[_pid].hold, 0, cl[_pid].tok, EXT, 0, false)
     }
  /* a nested withLock re-enters under the owner its flow inherits */
  :: d_step {
       cl[_pid].phase == HOLDING && cl[_pid].ent1 == IN && cl[_pid].ent2 == NO && !cl[_pid].lost && LC(_pid) < cl[_pid].vu &&
       cl[_pid].nre < BUDGET(REENTRIES, _pid) && cl[_pid].np < MAXPEND ->
       cl[_pid].nre++; cl[_pid].ent2 = ASKED; send(_pid, REENTER, cl[_pid].hold, 0, 0, cl[_pid].ttlc, 0, false)
     }
  RELEASE_ENTRY(ent2, 2, true)
  RELEASE_ENTRY(ent1, 1, (cl[_pid].ent2 == NO || cl[_pid].ent2 == DONE))
  :: d_step {
       (cl[_pid].ent1 == IN || cl[_pid].ent2 == IN) && cl[_pid].nwr < BUDGET(WRITES, _pid) && cl[_pid].np < MAXPEND ->
       send(_pid, WRITE, cl[_pid].hold, cl[_pid].hold, cl[_pid].tok, 0, cl[_pid].nwr, false); cl[_pid].nwr++
     }
  od
}

#include "world.pml"
