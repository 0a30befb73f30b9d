/*
 * multi-key.pml: multi-key holds (docs/protocol.md, "Multi-key holds (multiLock)") and the
 * validity a client counts from them.
 *
 * Redis: NK = 2 mutex keys, a (0) and b (1), each with its own hold (id, owner, token, entries)
 * and its own expiry instant (PTTL), and its own fencing counter. The scripts below are the atomic
 * steps: acquire-multi with `owner` (join '*': enter the hold the owner has on every key, else
 * found one on every key if all are free, else busy), acquire of one key's mutex with `owner`
 * (enter the owner's hold on that key, else found, else busy), the watchdog's renewal (keepalive
 * `x` items: one per key of the hold, in one call; a key's life is only ever lengthened; "held"
 * when the hold is on every key) and release-multi / release (the entry leaves every key it is on;
 * a key whose last entry left is free). Waiters do not queue here: a busy answer changes nothing
 * and the client may try again (queues and grants are new-protocol.pml's).
 *
 * Clients (each acquires once, and its attempt can be sent at any instant):
 *   c0  multiLock([a, b]) with owner O, ttl TM: founds the hold, or joins it
 *   c1  mutex(a) with owner O, ttl TA (long): joins the multi-key hold on a alone, and its
 *       watchdog renews a alone with its own ttl, so a outlives b
 *   c2  mutex(b) with an owner of its own, ttl TB: competes for b
 *   c3  multiLock([a, b]) with owner O, ttl TM: joins the hold of c0 (or founds it)
 * A client counts validity as "held until sent + reported pttl - D" on its acquire, and "sent +
 * ttl - D" on a renewal answered "held" (a hold gone from a key: lost). Clocks are exact (clock
 * drift is new-protocol.pml's SKEW). An acquire is sent, run and answered at one instant: a
 * later run only lowers sent + pttl against the key's expiry, and a later reply only starts the
 * belief later, so this gives every belief its longest window (what holds here holds with
 * delays); it keeps the state space small. Renewals and releases are sent, run and answered in
 * steps of their own, with any delay between them; a release ends its section when it is sent.
 *
 * The rule: acquire-multi reports the shortest PTTL among its keys. FIRST_KEY: the old rule, the
 * PTTL of the first key only (the key order is [a, b], so the first key is the one the mutex
 * keeps alive).
 *
 * Properties (never claims, -N): exclusion (believed-hold exclusion: no two clients believe they
 * hold the same key through different holds at the same instant; clients that share one hold by
 * owner may), sound (a client that believes it holds is the live hold on every key it holds, not
 * expired), all (both).
 */
#ifndef H
#define H 6             /* the horizon: the clock stops here */
#endif
#ifndef TM
#define TM 2            /* multiLock ttl (short: "b expires after about 1.7 s") */
#endif
#ifndef TA
#define TA 6            /* mutex(a) ttl (long: "kept a alive for 60 s") */
#endif
#ifndef TB
#define TB 3            /* mutex(b) ttl */
#endif
#ifndef D
#define D 1             /* drift margin subtracted from every validity */
#endif
#ifndef TRIES
#define TRIES 1         /* attempts per client; a busy answer changes nothing (no queue here), so one
                           attempt, made at any instant, covers the retries */
#endif
#ifndef RENEWALS
#define RENEWALS 0      /* watchdog renewals per client, besides c1's */
#endif
#ifndef RENEWALS_A
#define RENEWALS_A 1    /* c1's renewals of a */
#endif
#ifndef RELEASES
#define RELEASES 0      /* 1: a holder may release */
#endif
#define T0 1            /* the clock starts at 1: 0 means "no instant" */
#define NK 2
#define NC 4
#define TIMEBITS 5
#if H + TA >= 31 || TM >= 8 || TA >= 8 || TB >= 8 || TRIES > 3 || RENEWALS > 3 || RENEWALS_A > 3
#error "a duration, the horizon or a budget is too large for the model's fields"
#endif

/* roles */
#define MULTI(i) ((i) == 0 || (i) == 3)
#define KEYOF(i) ((i) == 1 -> 0 : 1)                  /* a mutex's key */
#define COVERS(i, kk) (MULTI(i) || ((i) == 1 && (kk) == 0) || ((i) == 2 && (kk) == 1))
#define OWN(i) ((i) == 2 -> 2 : 1)                    /* owner O = 1 */
#define TTLOF(i) (MULTI(i) -> TM : ((i) == 1 -> TA : TB))
#define RENEWS(i) ((i) == 1 -> RENEWALS_A : RENEWALS)
#define HOLDID(i) ((i) + 1)                           /* one acquisition per client: a hold id names one hold */
#define BIT(i) (1 << (i))

/* commands and replies */
#define NONE 0
#define ACQ 1
#define REN 2
#define FOUNDED 1
#define ENTERED 2
#define BUSY 3
#define HELD 4
#define GONE 5

/* client phases */
#define IDLE 0
#define ASKED 1
#define HOLDING 2
#define DONE 3

/* Witnesses: with -DWITNESS=<events>, these are recorded and the property "witness" claims they
   never all happen; a check that must hold runs it too, and it must fail (it is not vacuous). */
#define W_MULTI_JOINED 1    /* a multiLock entered its owner's hold on every key */
#define W_MUTEX_JOINED 2    /* a mutex entered its owner's multi-key hold on its one key */
#define W_KEY_OUTLIVES 4    /* a renewal of one key left it outliving another key of its hold */
#define W_SHORT_EXPIRED 8   /* a key of a hold expired while another key of that hold lives */
#define W_SPLIT_TAKEN 16    /* another hold was founded on a key while the key's last hold, which left it
                               (expired, or released there), still lives on the other key */
#define W_MULTI_RENEWED 32  /* a multiLock's renewal found its hold on every key (answered "held") */
#define W_PART_RELEASED 64  /* a release freed one key of a hold while another key kept an entry */
#ifdef WITNESS
unsigned seen : 7;
#define SEEN(b) seen = seen | (b)
#else
#define SEEN(b) skip
#endif

unsigned now : TIMEBITS = T0;

/* ---- Redis: per key ----------------------------------------------------------------------- */
typedef Key {
  unsigned hid : 3;             /* hold id, 0: free */
  unsigned hown : 2;            /* its owner */
  unsigned htok : 3;            /* its token on this key */
  unsigned hents : 4;           /* its entries (one per client: bit i) */
  unsigned hexp : TIMEBITS;     /* expiry instant (PTTL), server clock */
  unsigned cnt : 3              /* the key's fencing counter (never goes back: new-protocol.pml models its restart) */
#ifdef WITNESS
  ; unsigned split : 3          /* the hold that left this key (expired, or released there) while it lived on the other */
#endif
}
Key ky[NK];
#define hid(kk) ky[kk].hid
#define hown(kk) ky[kk].hown
#define htok(kk) ky[kk].htok
#define hents(kk) ky[kk].hents
#define hexp(kk) ky[kk].hexp
#define cnt(kk) ky[kk].cnt
#define split(kk) ky[kk].split

/* ---- clients ------------------------------------------------------------------------------ */
typedef Client {
  unsigned ph : 2;
  unsigned tries : 2;
  unsigned nren : 2;
  unsigned hold : 3;            /* the hold it holds (its own, or its owner's that it joined) */
  unsigned tok0 : 3;            /* its tokens on a and b (0 where it holds no entry) */
  unsigned tok1 : 3;
  unsigned vu : TIMEBITS;       /* validity: instant until which the hold is trusted */
  bool lost;                    /* Redis said the hold is gone */
  unsigned relh : 3;            /* its release is on the wire: the hold it gives its entry back to */
  /* its one command on the wire, and (once run) the reply */
  unsigned cmd : 2;
  bool ran;
  unsigned sent : TIMEBITS;
  unsigned rc : 3;
  unsigned rhold : 3;           /* the hold a renewal is for; the hold an acquire's reply names */
  unsigned rpttl : TIMEBITS;
  unsigned rtok0 : 3;
  unsigned rtok1 : 3
}
Client cl[NC];


/* A client believes it holds its keys: an entry in hand (its release not sent), not told it is
   lost, its validity not over (lease.held). */
#define BEL(i) (cl[i].ph == HOLDING && !cl[i].lost && now < cl[i].vu)

hidden byte k, x;

#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define PTTL(kk) (hexp(kk) - now)

/* a key's hold ends (its last entry left, or it expired); the counter stays */
inline free_key(kk) {
  hid(kk) = 0; hown(kk) = 0; htok(kk) = 0; hents(kk) = 0; hexp(kk) = 0
}

inline expire() {
  k = 0;
  do
  :: k < NK ->
     if
     :: hid(k) != 0 && hexp(k) <= now ->
        if
        :: k == 0 -> printf("t=%d redis: key a of hold %d (token %d) expired\n", now, hid(k), htok(k))
        :: else -> printf("t=%d redis: key b of hold %d (token %d) expired\n", now, hid(k), htok(k))
        fi;
        if
        :: hid(1 - k) == hid(k) && hexp(1 - k) > now ->
           SEEN(W_SHORT_EXPIRED);
#ifdef WITNESS
           split(k) = hid(k);
#endif
           skip
        :: else
        fi;
        free_key(k)
     :: else
     fi;
     k++
  :: else -> break
  od;
  k = 0
}

/* a new hold of client i on key kk */
inline found(i, kk) {
  cnt(kk)++; hid(kk) = HOLDID(i); hown(kk) = OWN(i); htok(kk) = cnt(kk); hents(kk) = BIT(i);
  hexp(kk) = now + TTLOF(i);
#ifdef WITNESS
  if :: split(kk) != 0 && hid(1 - kk) == split(kk) -> SEEN(W_SPLIT_TAKEN) :: else fi;
  split(kk) = 0;
#endif
  skip
}

/* acquire-multi.lua, answer(): the hold's PTTL as the client is told it, and its tokens */
inline answer(i, code) {
  cl[i].rc = code; cl[i].rhold = hid(0); cl[i].rtok0 = htok(0); cl[i].rtok1 = htok(1);
#ifdef FIRST_KEY
  cl[i].rpttl = PTTL(0)
#else
  cl[i].rpttl = MIN(PTTL(0), PTTL(1))
#endif
}

/* acquire-multi.lua with owner (join '*') */
inline s_multi(i) {
  if
  :: hid(0) != 0 && hown(0) == OWN(i) && hid(1) == hid(0) ->
     hents(0) = hents(0) | BIT(i); hents(1) = hents(1) | BIT(i);
     SEEN(W_MULTI_JOINED);
     answer(i, ENTERED)
  :: else ->
     if
     :: hid(0) == 0 && hid(1) == 0 -> found(i, 0); found(i, 1); answer(i, FOUNDED)
     :: else -> cl[i].rc = BUSY
     fi
  fi
}

/* acquire.lua with owner (join '*') on key kk */
inline s_mutex(i, kk) {
  if
  :: hid(kk) != 0 && hown(kk) == OWN(i) ->
     hents(kk) = hents(kk) | BIT(i);
     if :: hid(1 - kk) == hid(kk) -> SEEN(W_MUTEX_JOINED) :: else fi;
     cl[i].rc = ENTERED; cl[i].rhold = hid(kk); cl[i].rpttl = PTTL(kk)
  :: hid(kk) != 0 && hown(kk) != OWN(i) -> cl[i].rc = BUSY
  :: hid(kk) == 0 -> found(i, kk); cl[i].rc = FOUNDED; cl[i].rhold = hid(kk); cl[i].rpttl = PTTL(kk)
  fi;
  if
  :: cl[i].rc != BUSY && kk == 0 -> cl[i].rtok0 = htok(0)
  :: cl[i].rc != BUSY && kk == 1 -> cl[i].rtok1 = htok(1)
  :: else
  fi
}

/* keepalive.lua, one `x` item per key of the hold: a key that holds it lives at least ttl more */
inline s_renew(i) {
  cl[i].rc = HELD;
  k = 0;
  do
  :: k < NK ->
     if
     :: COVERS(i, k) && hid(k) == cl[i].rhold -> hexp(k) = MAX(hexp(k), now + TTLOF(i))
     :: COVERS(i, k) && hid(k) != cl[i].rhold -> cl[i].rc = GONE
     :: else
     fi;
     k++
  :: else -> break
  od;
  k = 0;
  if :: hid(0) != 0 && hid(0) == hid(1) && hexp(0) != hexp(1) -> SEEN(W_KEY_OUTLIVES) :: else fi;
  if :: MULTI(i) && cl[i].rc == HELD -> SEEN(W_MULTI_RENEWED) :: else fi
}

/* release-multi.lua / release.lua: the entry leaves every key it is on; a key left without one is free */
inline s_release(i) {
  k = 0; x = 0;
  do
  :: k < NK ->
     if
     :: COVERS(i, k) && hid(k) == cl[i].relh && (hents(k) & BIT(i)) ->
        hents(k) = hents(k) ^ BIT(i);
        if
        :: hents(k) == 0 ->
           if
           :: k == 0 -> printf("t=%d redis: key a of hold %d released\n", now, hid(k))
           :: else -> printf("t=%d redis: key b of hold %d released\n", now, hid(k))
           fi;
#ifdef WITNESS
           split(k) = hid(k);
#endif
           free_key(k); x = 1
        :: else
        fi
     :: else
     fi;
     k++
  :: else -> break
  od;
  k = 0;
  if :: x == 1 && (hid(0) == cl[i].relh || hid(1) == cl[i].relh) -> SEEN(W_PART_RELEASED) :: else fi;
  x = 0
}

inline run_cmd(i) {
  if
  :: cl[i].cmd == ACQ && MULTI(i) -> s_multi(i)
  :: cl[i].cmd == ACQ && !MULTI(i) -> s_mutex(i, KEYOF(i))
  :: cl[i].cmd == REN -> s_renew(i)
  fi;
  cl[i].ran = true;
  if
  :: cl[i].rc == FOUNDED ->
     printf("t=%d redis: c%d's acquire founds hold %d (tokens %d %d), answers pttl %d\n", now, i, cl[i].rhold, cl[i].rtok0, cl[i].rtok1, cl[i].rpttl)
  :: cl[i].rc == ENTERED ->
     printf("t=%d redis: c%d's acquire enters hold %d by owner (tokens %d %d), answers pttl %d\n", now, i, cl[i].rhold, cl[i].rtok0, cl[i].rtok1, cl[i].rpttl)
  :: cl[i].rc == BUSY -> printf("t=%d redis: c%d's acquire: busy\n", now, i)
  :: cl[i].rc == HELD -> printf("t=%d redis: c%d's renewal of hold %d: held\n", now, i, cl[i].rhold)
  :: cl[i].rc == GONE -> printf("t=%d redis: c%d's renewal of hold %d: gone\n", now, i, cl[i].rhold)
  fi
}

/* the acquisition is over: forget its fields (fewer states) */
inline done(i) {
  cl[i].ph = DONE; cl[i].hold = 0; cl[i].tok0 = 0; cl[i].tok1 = 0; cl[i].vu = 0; cl[i].lost = false
}

inline clear_cmd(i) {
  cl[i].cmd = NONE; cl[i].ran = false; cl[i].sent = 0; cl[i].rc = 0; cl[i].rhold = 0; cl[i].rpttl = 0;
  cl[i].rtok0 = 0; cl[i].rtok1 = 0
}

inline on_reply(i) {
  if
  :: cl[i].cmd == ACQ && (cl[i].rc == FOUNDED || cl[i].rc == ENTERED) ->
     cl[i].ph = HOLDING; cl[i].hold = cl[i].rhold;
     if :: COVERS(i, 0) -> cl[i].tok0 = cl[i].rtok0 :: else fi;
     if :: COVERS(i, 1) -> cl[i].tok1 = cl[i].rtok1 :: else fi;
     /* held until sent + reported pttl - drift */
     cl[i].vu = (cl[i].sent + cl[i].rpttl > D -> cl[i].sent + cl[i].rpttl - D : 0);
     printf("t=%d c%d: holds hold %d (tokens %d %d), valid until %d\n", now, i, cl[i].hold, cl[i].tok0, cl[i].tok1, cl[i].vu)
  :: cl[i].cmd == ACQ && cl[i].rc == BUSY ->
     if :: cl[i].tries < TRIES -> cl[i].ph = IDLE :: else -> done(i) fi
  :: cl[i].cmd == REN && cl[i].ph == HOLDING && cl[i].rc == HELD ->
     cl[i].vu = cl[i].sent + TTLOF(i) - D;
     printf("t=%d c%d: renewed, valid until %d\n", now, i, cl[i].vu)
  :: cl[i].cmd == REN && cl[i].ph == HOLDING && cl[i].rc == GONE -> cl[i].lost = true
  :: else                               /* a renewal answered after the release was sent */
  fi;
  clear_cmd(i)
}

active [NC] proctype C() {
  assert(_pid < NC);
  do
  /* acquire (again, after a busy answer): sent, run and answered at one instant (see the top) */
  :: d_step {
       cl[_pid].ph == IDLE && cl[_pid].tries < TRIES && cl[_pid].cmd == NONE ->
       cl[_pid].tries++; cl[_pid].ph = ASKED; cl[_pid].cmd = ACQ; cl[_pid].sent = now;
       run_cmd(_pid); on_reply(_pid)
     }
  /* the watchdog renews, while the hold is valid */
  :: d_step {
       BEL(_pid) && cl[_pid].nren < RENEWS(_pid) && cl[_pid].cmd == NONE ->
       cl[_pid].nren++; cl[_pid].cmd = REN; cl[_pid].sent = now; cl[_pid].rhold = cl[_pid].hold   /* the hold it renews */
     }
  /* release: the section ends when it is sent (no call once the hold is lost or expired) */
  :: d_step {
       RELEASES && cl[_pid].ph == HOLDING ->
       if :: BEL(_pid) -> cl[_pid].relh = cl[_pid].hold :: else fi;
       printf("t=%d c%d: releases\n", now, _pid);
       done(_pid)
     }
  /* Redis runs its command, or its release */
  :: d_step { cl[_pid].cmd != NONE && !cl[_pid].ran -> run_cmd(_pid) }
  :: d_step { cl[_pid].relh != 0 -> s_release(_pid); cl[_pid].relh = 0 }
  /* the reply arrives */
  :: d_step { cl[_pid].ran -> on_reply(_pid) }
  od
}

active proctype Clock() {
  do
  :: d_step { now < H -> now++; expire() }
  od
}

/* ---- properties ----------------------------------------------------------------------------- */
/* i and j both believe they hold key kk, through different holds (or tokens). The pairs are
   spelled out: a constant comparison (which of the clients cover a key) is no predicate to spin's
   ltl translator. Key a: c0, c1, c3; key b: c0, c2, c3. */
#define CLASH(i, j, kk) (BEL(i) && BEL(j) && (cl[i].hold != cl[j].hold || cl[i].tok##kk != cl[j].tok##kk))
#define TWO_BELIEVE (CLASH(0, 1, 0) || CLASH(0, 3, 0) || CLASH(1, 3, 0) || CLASH(0, 2, 1) || CLASH(0, 3, 1) || CLASH(2, 3, 1))
/* a client that believes is the live hold on every key it holds */
#define ON(i, kk) (hid(kk) == cl[i].hold && htok(kk) == cl[i].tok##kk && now < hexp(kk))
#define ALL_SOUND ((!BEL(0) || (ON(0, 0) && ON(0, 1))) && (!BEL(1) || ON(1, 0)) && (!BEL(2) || ON(2, 1)) && \
                   (!BEL(3) || (ON(3, 0) && ON(3, 1))))

ltl exclusion { [] !TWO_BELIEVE }
ltl sound { [] ALL_SOUND }
ltl all { [] (ALL_SOUND && !TWO_BELIEVE) }
#ifdef WITNESS
ltl witness { [] ((seen & (WITNESS)) != (WITNESS)) }
#endif
