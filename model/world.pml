/*
 * world.pml: the network, the clock and the properties, shared by both protocol models.
 * Included last: it uses run_script, on_reply and expire, which the protocol file defines.
 */

/*
 * One connection per client. Redis runs one script at a time (each is one atomic step); by
 * default it runs a connection's commands in the order they were sent and the replies come back
 * in that order. A drop loses every reply still on the way and ioredis resends every command
 * not yet answered, in order: those that had already run run again (replays).
 */
#define me (_pid - NC)

#ifdef NONFIFO
#define RUNNABLE(b) (b < cl[me].np && !CMD(me, b).ran)
#define ANSWERED(b) (b < cl[me].np && CMD(me, b).ran)
#else
#define RUNNABLE(b) (b < cl[me].np && !CMD(me, b).ran && (b == 0 || CMD(me, (b) - 1).ran))
#define ANSWERED(b) (b == 0 && cl[me].np > 0 && CMD(me, 0).ran)
#endif

#define RUN(b) :: d_step { RUNNABLE(b) -> run_script(me, me * MAXPEND + (b)); \
                           CMD(me, b).once = true; CMD(me, b).ran = true }
#define REPLY(b) :: d_step { ANSWERED(b) -> take(me, b); on_reply(me) }

active [NC] proctype Connection() {
  do
  RUN(0)
  RUN(1)
  RUN(2)
  REPLY(0)
#ifdef NONFIFO
  REPLY(1)
  REPLY(2)
#endif
  :: d_step {
       drops < DROPS && cl[me].np > 0 && (CMD(me, 0).ran || CMD(me, 1).ran || CMD(me, 2).ran) ->
       drops++;
       printf("t=%d c%d: connection dropped, %d command(s) resent\n", now, me, cl[me].np);
       CMD(me, 0).ran = false; CMD(me, 1).ran = false; CMD(me, 2).ran = false
     }
  od
}

/*
 * The clock. Each tick advances the server's clock; a client's clock may stand still for a tick
 * (it runs slower) while its total lag stays within SKEW. A paused client is one that takes no
 * step while ticks happen: every interleaving is explored, so every pause is. Expiry happens at
 * the tick that reaches a key's expiry instant.
 */
/* every instant and duration fits its field (see TIMEBITS), every budget fits its own */
#if TTL >= 8 || EXT >= 8 || L >= 8 || H + SKEW + 8 >= FOREVER || RET >= FOREVER
#error "a duration or the horizon is too large for the model's fields"
#endif
#if SKEW > 3 || DROPS > 3 || ACQS > 2 || ACQS1 > 2 || NC < 1 || NC > 3
#error "SKEW, DROPS, ACQS or NC out of the model's range"
#endif
#if REENTRIES > 1 || REENTRIES1 > 1 || RENEWALS > 3 || RENEWALS1 > 3 || EXTENDS > 3 || EXTENDS1 > 3
#error "a budget is out of the model's range"
#endif
#if RETRIES > 3 || RETRIES1 > 3 || WRITES > 3 || WRITES1 > 3
#error "a budget is out of the model's range"
#endif

active proctype Clock() {
  do
  :: d_step { now < H -> now++; expire() }
  :: d_step { now < H && cl[0].lag < SKEW -> now++; cl[0].lag++; expire(); if :: cl[0].lag == SKEW -> SEEN(W_SKEWED) :: else fi; printf("t=%d c0's clock stood still\n", now) }
#if NC > 1
  :: d_step { now < H && cl[1].lag < SKEW -> now++; cl[1].lag++; expire(); if :: cl[1].lag == SKEW -> SEEN(W_SKEWED) :: else fi; printf("t=%d c1's clock stood still\n", now) }
  :: d_step {
       now < H && cl[0].lag < SKEW && cl[1].lag < SKEW -> now++; cl[0].lag++; cl[1].lag++; expire();
       if :: cl[0].lag == SKEW || cl[1].lag == SKEW -> SEEN(W_SKEWED) :: else fi;
       printf("t=%d c0's and c1's clocks stood still\n", now)
     }
#endif
#if NC > 2
  :: d_step { now < H && cl[2].lag < SKEW -> now++; cl[2].lag++; expire(); if :: cl[2].lag == SKEW -> SEEN(W_SKEWED) :: else fi; printf("t=%d c2's clock stood still\n", now) }
#endif
  od
}

/* ---- properties ----------------------------------------------------------------------------- */
#if NC > 2
#define TWO_BELIEVE ((BEL(0) && BEL(1)) || (BEL(0) && BEL(2)) || (BEL(1) && BEL(2)))
#elif NC > 1
#define TWO_BELIEVE (BEL(0) && BEL(1))
#else
#define TWO_BELIEVE false
#endif

/* lease exclusion: no two clients believe they hold the lock at the same instant */
ltl exclusion { [] !TWO_BELIEVE }
/* soundness of belief, per client (implies exclusion): a client that believes it holds the lock
   is the live hold in Redis */
#define SOUND(i) (!BEL(i) || (hid == cl[i].hold && htok == cl[i].tok && now < hexp))
#if NC > 2
#define ALL_SOUND (SOUND(0) && SOUND(1) && SOUND(2))
#elif NC > 1
#define ALL_SOUND (SOUND(0) && SOUND(1))
#else
#define ALL_SOUND SOUND(0)
#endif
ltl sound { [] ALL_SOUND }
/* fenced exclusion: tokens strictly increase per hold; the guard never applies a write with a
   lower token (or another hold's equal one), and applies each write at most once */
ltl fenced { [] !(bad_fence || bad_once) }
/* replay safety: a release never frees a hold while its owner still has an entry in hand, and a
   release that succeeded is never answered "lost" */
ltl replay { [] !(bad_free || bad_lost) }
/* all of them at once (the checks that must hold) */
ltl all { [] (ALL_SOUND && !(TWO_BELIEVE || bad_fence || bad_once || bad_free || bad_lost)) }
#ifdef WITNESS
/* the events named by WITNESS never all happen in one run (must fail: see core.pml) */
ltl witness { [] ((seen & (WITNESS)) != (WITNESS)) }
#endif
