/*
 * quorum-line.pml: quorum mode's waiting line (docs/protocol.md, "Quorum mode's waiting line").
 *
 * N independent nodes, each with a mutex (who holds it) and a line of tickets. A holder (id W+1)
 * holds every node at the start and releases node by node, in any order. W waiters (ids 1..W, the
 * id is also the order of their wait: waiter 1 began first) each acquire once and release. An
 * attempt is sent to every node; each node runs it atomically when it arrives (every arrival
 * order, interleaved with everything else); the waiter decides as soon as the votes so far decide
 * (a majority founded: won; too few left to win: lost) and treats each vote, early or late, by the
 * rule, in a step of its own on that node. A lost waiter attempts again when a node tells it its
 * turn (it heads the line of a free lock there), or, standing in no line, when a lock is free.
 * With DOWN, the last node is down from the start: it answers nothing (an error vote).
 *
 * The rule (default) and the old one (-DOLD):
 *  - the line: ordered by the waiters' order (default), or by arrival (-DARRIVAL, and with OLD);
 *  - won: keep the founded votes; a "busy" vote's ticket leaves that line (OLD: only a late busy
 *    vote is given back; an early one stays: the ghost ticket);
 *  - lost (busy or split): a "busy" vote keeps its ticket; a lone hold is given back and the
 *    ticket keeps its place (OLD: a late vote is given back whole, ticket and all; an early
 *    founded one too; an early busy one stays).
 *
 * Properties (never claims, -N): exclusion (never two holders believing they hold), noghost (a
 * waiter that won and treated all its votes has no ticket on any node), progress (every waiter is
 * eventually served: checked for acceptance cycles under weak fairness, so a livelock or a stuck
 * state fails it).
 */
#ifndef N
#define N 3
#endif
#ifndef W
#define W 2
#endif
#define M (N / 2 + 1)
#define HOLDER (W + 1)

mtype = { founded_, busy_, error_ };
#define NONE 0
#define FOUNDED 1
#define BUSY 2
#define ERR 3

#define UNDECIDED 0
#define WON 1
#define LOST 2

/* Witnesses: with -DWITNESS=<events>, these are recorded and the property "witness" claims they
   never all happen; a check that must hold runs it too, and it must fail (the check is not vacuous). */
#define W_LATE_VOTE 1     /* a vote arrived after its attempt was decided */
#define W_STEP_ASIDE 2    /* a lone hold was given back, its ticket kept in line */
#define W_WINNER_LEFT 4   /* a winner's ticket left the line of a node that voted busy */
#define W_ALL_SERVED 8    /* every waiter was served */
#ifdef WITNESS
unsigned seen : 4;
#define SEEN(b) seen = seen | (b)
#else
#define SEEN(b) skip
#endif

byte lock[N];
byte q[N * W];
byte qlen[N];
byte holders;
byte served;
/* On how many nodes each waiter stands in line. */
byte tix[W + 2];
bool ghost;

#define up(i) (!DOWNED || (i) != N - 1)
#ifdef DOWN
#define DOWNED 1
#else
#define DOWNED 0
#endif

#define HEAD(i) (qlen[i] > 0 -> q[(i) * W] : 0)
#define TURNAT(i, w) (up(i) && lock[i] == 0 && HEAD(i) == (w))
#if N == 3
#define TURN(w) (TURNAT(0, w) || TURNAT(1, w) || TURNAT(2, w))
#define ANYFREE (lock[0] == 0 || lock[1] == 0 || (lock[2] == 0 && up(2)))
#else
#define TURN(w) (TURNAT(0, w) || TURNAT(1, w) || TURNAT(2, w) || TURNAT(3, w) || TURNAT(4, w))
#define ANYFREE (lock[0] == 0 || lock[1] == 0 || lock[2] == 0 || lock[3] == 0 || (lock[4] == 0 && up(4)))
#endif

inline has(i, w, r) {
  r = false;
  k = 0;
  do
  :: k < qlen[i] && q[i * W + k] == w -> r = true; break
  :: k < qlen[i] && q[i * W + k] != w -> k++
  :: k >= qlen[i] -> break
  od
}

inline leave(i, w) {
  has(i, w, r);
  if
  :: r ->
    do
    :: k + 1 < qlen[i] -> q[i * W + k] = q[i * W + k + 1]; k++
    :: else -> break
    od;
    qlen[i]--;
    q[i * W + qlen[i]] = 0;
    tix[w]--
  :: else -> skip
  fi
}

inline stand(i, w) {
  has(i, w, r);
  if
  :: !r ->
#if defined(OLD) || defined(ARRIVAL)
    q[i * W + qlen[i]] = w;
#else
    k = qlen[i];
    do
    :: k > 0 && q[i * W + k - 1] > w -> q[i * W + k] = q[i * W + k - 1]; k--
    :: else -> break
    od;
    q[i * W + k] = w;
#endif
    qlen[i]++;
    tix[w]++
  :: else -> skip
  fi
}

/* acquire.lua on node i, for waiter w: its vote. */
inline acquireAt(i, w, v) {
  if
  :: !up(i) -> v = ERR
  :: up(i) && lock[i] == w -> v = FOUNDED
  :: up(i) && lock[i] != 0 && lock[i] != w -> stand(i, w); v = BUSY
  :: up(i) && lock[i] == 0 ->
    if
    :: HEAD(i) == 0 || HEAD(i) == w -> leave(i, w); lock[i] = w; v = FOUNDED
    :: else ->
      stand(i, w);
#if defined(OLD) || defined(ARRIVAL)
      v = BUSY
#else
      if
      :: HEAD(i) == w -> leave(i, w); lock[i] = w; v = FOUNDED
      :: else -> v = BUSY
      fi
#endif
    fi
  fi
}

/* A vote of waiter w on node i, treated by the rule once the attempt is decided. */
inline treat(i) {
  atomic {
    treated[i] = true;
    if
    :: !up(i) -> skip
    :: up(i) && decision == WON ->
#ifdef OLD
      if :: vote[i] == BUSY && !early[i] -> leave(i, w) :: else -> skip fi;
      if :: vote[i] == BUSY && early[i] -> printf("q: winner %d's ticket stays in node %d's line\n", w, i) :: else -> skip fi
#else
      if :: vote[i] == BUSY -> leave(i, w); SEEN(W_WINNER_LEFT); printf("q: winner %d leaves node %d's line\n", w, i) :: else -> skip fi
#endif
    :: up(i) && decision == LOST ->
#ifdef OLD
      if
      :: vote[i] == FOUNDED || !early[i] -> leave(i, w); if :: lock[i] == w -> lock[i] = 0 :: else -> skip fi;
         printf("q: waiter %d gives back its vote on node %d, ticket and all\n", w, i)
      :: else -> skip
      fi
#else
      if
      :: vote[i] == FOUNDED -> if :: lock[i] == w -> lock[i] = 0 :: else -> skip fi; stand(i, w); SEEN(W_STEP_ASIDE);
         printf("q: waiter %d steps aside on node %d\n", w, i)
      :: else -> skip
      fi
#endif
    fi
  }
}

proctype holder() {
  byte i;
  do
  :: i < N -> atomic { if :: lock[i] == HOLDER -> lock[i] = 0 :: else -> skip fi; i++ }
  :: i >= N -> break
  od
}

proctype waiter(byte w) {
  byte vote[N];
  bool early[N];
  bool treated[N];
  byte answered, founded, decision, i, k, left;
  bool r;

attempt:
  skip;
  d_step {
    i = 0;
    do
    :: i < N -> vote[i] = NONE; early[i] = false; treated[i] = false; i++
    :: else -> break
    od;
    answered = 0; founded = 0; decision = UNDECIDED; i = 0
  }
  do
  :: answered == N && decision != UNDECIDED -> break
  :: else ->
    /* A vote arrives from any node that has not answered yet, or a decided vote is treated. */
    if
    :: vote[0] == NONE -> i = 0
    :: vote[1] == NONE -> i = 1
    :: vote[2] == NONE -> i = 2
#if N == 5
    :: vote[3] == NONE -> i = 3
    :: vote[4] == NONE -> i = 4
#endif
    fi;
    atomic {
      acquireAt(i, w, vote[i]);
      printf("q: waiter %d's attempt on node %d: %e\n", w, i, (vote[i] == FOUNDED -> founded_ : (vote[i] == BUSY -> busy_ : error_)));
      if :: decision != UNDECIDED -> SEEN(W_LATE_VOTE) :: else -> skip fi;
      answered++;
      if :: vote[i] == FOUNDED -> founded++ :: else -> skip fi;
      if
      :: decision == UNDECIDED ->
        early[i] = true;
        if
        :: founded >= M -> decision = WON
        :: founded < M && founded + (N - answered) < M -> decision = LOST
        :: else -> skip
        fi
      :: else -> skip
      fi
    }
  od;
  /* Each vote treated by the rule, one node at a time, in any order. */
  do
  :: !treated[0] -> i = 0; treat(i)
  :: !treated[1] -> i = 1; treat(i)
  :: !treated[2] -> i = 2; treat(i)
#if N == 5
  :: !treated[3] -> i = 3; treat(i)
  :: !treated[4] -> i = 4; treat(i)
#endif
  :: else -> break
  od;

  if
  :: decision == WON ->
    atomic {
      holders++;
      i = 0;
      do
      :: i < N -> has(i, w, r); if :: r -> ghost = true :: else -> skip fi; i++
      :: else -> break
      od
    }
progress_won:
    printf("q: waiter %d holds\n", w);
    served++;
    if :: served == W -> SEEN(W_ALL_SERVED) :: else -> skip fi;
    holders--;
    i = 0;
    do
    :: i < N -> atomic { if :: lock[i] == w -> lock[i] = 0 :: else -> skip fi; i++ }
    :: else -> break
    od
  :: decision == LOST ->
    /* Told its turn; or, in no line anywhere, a lock is free (the poll). */
    if
    :: TURN(w) -> skip
    :: tix[w] == 0 && ANYFREE -> skip
    fi;
    goto attempt
  fi
}

init {
  byte i;
  atomic {
    i = 0;
    do
    :: i < N -> lock[i] = HOLDER; i++
    :: else -> break
    od;
    run holder();
    i = 1;
    do
    :: i <= W -> run waiter(i); i++
    :: else -> break
    od
  }
}

ltl exclusion { [] (holders <= 1) }
ltl noghost { [] !ghost }
ltl progress { <> (served == W) }
#ifdef WITNESS
ltl witness { [] ((seen & (WITNESS)) != (WITNESS)) }
#endif
