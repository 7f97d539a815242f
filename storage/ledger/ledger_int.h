/*
 * ledger_int.h — the ledger client's private types, shared by ledger*.c only
 * (storage/ledger/ledger.h is the public contract; docs/ledger.md the design).
 *
 * Lifetime of asynchronous objects (lobj_t). A ledger handle, a read and a
 * delete are "objects" that issue calls to bookies and the metadata store and
 * get callbacks later. Every such call first takes a hold (lobj_hold); every
 * callback first gives it back (lobj_back), which says whether the object is
 * still alive. Freeing a handle (ledger_release, a finished close) or the client
 * only kills the object: it is marked dead, unlinked, its watchers stopped, and
 * the memory goes when the last hold comes back. So a bookie that never answers
 * (until its handle is freed, when it answers QE_CLOSED) cannot make us touch
 * freed memory, and nothing dead calls a user callback.
 *
 * Invariants of a writer (ledger_t with role LEDGER_ROLE_WRITER):
 *   1. pending adds are exactly entries lac+1 .. next_entry_id-1, in a ring,
 *      head = lac+1; at most cfg.pending_adds_max of them.
 *   2. lac only grows, by one, when the head has >= Qa acks (drain).
 *   3. a write-set position k of a pending entry is in one of three states:
 *      acked (acked[k]), outstanding (seq[k] != 0, the id of the one request
 *      whose answer counts), or unsent (neither; only while its slot failed or
 *      the ensemble is being changed).
 *   4. once fail_rc != 0 it never changes back; no add is sent after it.
 */
#ifndef QUIRE_STORAGE_LEDGER_INT_H
#define QUIRE_STORAGE_LEDGER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/exec.h"
#include "storage/ledger/ledger.h"

#define LEDGER_ENSEMBLE_MAX 16           /* E bound (bitmasks of slots are uint32_t) */
#define LEDGER_BOOKIES_MAX 64            /* bookies per client (bitmasks are uint64_t) */
#define LEDGER_SEGMENTS_MAX 1024         /* segments accepted when decoding metadata */
#define LEDGER_READ_ENTRIES_MAX 10000    /* entries per ledger_read call */
#define LEDGER_READ_PARALLEL 64          /* entry reads outstanding per ledger_read call */
#define LEDGER_ID_BLOCK 100              /* ids reserved per counter compare-and-set (least) */
#define LEDGER_ID_BLOCK_MAX 65536        /* ... and most: twice the creates waiting, bounded */
#define LEDGER_CREATES_WAITING_MAX 16384 /* creates waiting for an id block */
#define LEDGER_MD_RETRIES_MAX 16         /* compare-and-set retries before giving up */
#define LEDGER_BOOKIE_ID_MAX 64          /* == sizeof(bk_client_t.id) */
#define LEDGER_BUSY_RETRY_S 0.01         /* delay before re-sending an add refused QE_BUSY */
#define LEDGER_MD_FORMAT 1               /* "format" field of the metadata JSON */
#define LEDGER_COUNTER_PATH "/ledgers/counter"

/* ------------------------------------------------------------ lifetime -- */

typedef struct lobj lobj_t;
struct lobj {
    lobj_t *prev, *next; /* in the owner's list while alive */
    uint32_t inflight;   /* calls whose callbacks are still to come */
    bool dead;
    void (*on_kill)(lobj_t *o); /* stop watchers, kill children (may be NULL) */
    void (*destroy)(lobj_t *o); /* free the memory; called once, when dead and idle */
};

void lobj_list_init(lobj_t *head);
void lobj_link(lobj_t *head, lobj_t *o);
void lobj_hold(lobj_t *o);
/* Gives back one hold; false if the object is dead (and maybe freed now). */
bool lobj_back(lobj_t *o);
/* Marks dead and unlinks; frees once no hold is left. */
void lobj_kill(lobj_t *o);

/* ------------------------------------------------------------ metadata -- */

enum { LEDGER_STATE_OPEN = 0, LEDGER_STATE_IN_RECOVERY = 1, LEDGER_STATE_CLOSED = 2 };

typedef struct ledger_segment {
    int64_t first_entry_id;
    uint64_t length_before; /* bytes of entries 0 .. first_entry_id-1 */
    /* owned: one id per ensemble position (q.ensemble rows, not
     * LEDGER_ENSEMBLE_MAX: a writer of every topic holds one) */
    char (*bookies)[LEDGER_BOOKIE_ID_MAX];
} ledger_segment_t;

typedef struct ledger_md {
    ledger_quorum_t q;
    int state;
    int64_t last_entry_id; /* -1 unless CLOSED (or a closed empty ledger) */
    uint64_t length;       /* bytes of entries 0..last_entry_id once CLOSED */
    int64_t ctime_ms;
    size_t nsegments;
    ledger_segment_t *segments; /* owned, nsegments >= 1, first ids increasing */
} ledger_md_t;

/* "/ledgers/" + id zero-padded to 20 digits; buf of at least 32 bytes. */
void ledger_md_path(int64_t ledger_id, char *buf, size_t size);
/* A malloc'd JSON text (caller frees) and its length; 0 or -ENOMEM. */
int ledger_md_encode(const ledger_md_t *md, char **out, size_t *len);
/* Parses value into *out (owned by the caller: ledger_md_free). QE_CORRUPT on
 * anything malformed or out of bounds. */
int ledger_md_decode(const void *value, size_t len, ledger_md_t *out);
int ledger_md_copy(const ledger_md_t *src, ledger_md_t *dst);
/* Allocates s->bookies for `ensemble` ids (zeroed); 0 or -ENOMEM. */
int ledger_segment_alloc(ledger_segment_t *s, int ensemble);
void ledger_md_free(ledger_md_t *md);
/* Index of the segment holding entry_id. */
size_t ledger_md_segment_of(const ledger_md_t *md, int64_t entry_id);
const char *ledger_state_name(int state);
bool ledger_quorum_valid(const ledger_quorum_t *q);

/* -------------------------------------------------------------- client -- */

typedef struct ledger_bookie {
    bk_client_t *client; /* borrowed */
    bool down;
} ledger_bookie_t;

struct ledger_client {
    struct ev_loop *loop;
    md_store_t *md; /* borrowed */
    ledger_client_config_t cfg;
    qloop_mailbox_t *mailbox; /* defers user callbacks (never inline) */
    ledger_bookie_t bookies[LEDGER_BOOKIES_MAX];
    int nbookies;
    int rr_next; /* round-robin start of the next ensemble */
    lobj_t objs; /* live ledgers and deletes */
    /* Id allocation: ids id_next .. id_limit-1 are reserved for this client. */
    int64_t id_next, id_limit;
    lobj_t *id_alloc; /* the running counter update, or NULL */
    struct ledger *id_waiters_head, *id_waiters_tail;
    uint32_t id_waiters;
};

/* Ids reserved by one counter update when `waiters` creates wait (pure). */
int64_t lc_id_block_size(uint32_t waiters);
/* Runs fn(o) on the loop soon, holding o (fn must start with lobj_back(o)). */
void lc_post(ledger_client_t *lc, lobj_t *o, void (*fn)(void *));
bk_client_t *lc_bookie_by_id(ledger_client_t *lc, const char *id);
int lc_bookie_index(ledger_client_t *lc, const bk_client_t *c);
/* Fills out[0..n-1] with distinct bookies not down, not in `avoid` (lc indexes
 * bitmask), starting round-robin. Returns QE_UNAVAILABLE if fewer exist. */
int lc_choose_bookies(ledger_client_t *lc, int n, uint64_t avoid, bk_client_t **out);
/* Gets the next ledger id for l (ledger_id_ready() is called back later). */
int lc_id_request(ledger_client_t *lc, struct ledger *l);

/* -------------------------------------------------------------- ledger -- */

enum {
    LEDGER_ROLE_CREATING = 0, /* waiting for an id and the metadata create */
    LEDGER_ROLE_WRITER = 1,
    LEDGER_ROLE_OPENING = 2, /* reading metadata, LAC, or recovering */
    LEDGER_ROLE_READER = 3,
};

typedef struct pending_add {
    int64_t entry_id;
    qbuf_t *data; /* one reference held */
    ledger_add_cb cb;
    void *arg;
    uint64_t seq[LEDGER_ENSEMBLE_MAX];   /* per write-set position: outstanding request */
    double sent_at[LEDGER_ENSEMBLE_MAX]; /* ev_now() when that request was sent */
    bool acked[LEDGER_ENSEMBLE_MAX];
    int acks;
} pending_add_t;

/* Recovery / open progress (one phase at a time; token tags requests). */
typedef struct ledger_open_state {
    int flags;
    ledger_open_cb cb;
    void *arg;
    int phase;      /* LEDGER_PHASE_* in ledger_recovery.c */
    uint32_t token; /* answers carrying an older token are ignored */
    int retries;
    int waiting, ok, missing, errors; /* counts in the current phase */
    int64_t max_lac;
    int status[LEDGER_ENSEMBLE_MAX]; /* per write-set position of the entry */
    int64_t entry_id;                /* entry being recovered */
    qbuf_t *entry;                   /* its data once read (a reference) */
    uint64_t length;                 /* bytes of entries before entry_id */
    double phase_started;
} ledger_open_state_t;

/* An ensemble change in flight: the metadata being written and the bookies
 * of its last segment. Allocated for the change only (ledger handles are
 * per topic; most never change their ensemble). */
typedef struct ledger_change {
    ledger_md_t md;
    bk_client_t *ens[LEDGER_ENSEMBLE_MAX];
    uint32_t slots; /* the slots it replaces */
} ledger_change_t;

typedef struct ledger {
    lobj_t obj;
    ledger_client_t *lc;
    int64_t id;
    int role;
    ledger_md_t md;
    int64_t md_version;
    bk_client_t *ens[LEDGER_ENSEMBLE_MAX]; /* writer: bookies of the last segment */
    int64_t lac;
    uint64_t length; /* bytes of entries 0..lac */
    ev_timer timer;  /* add timeouts (writer), phase timeouts (opening) */
    ev_timer retry;  /* writer: re-sends adds a bookie refused with QE_BUSY */
    lobj_t reads;    /* live ledger_read calls */

    /* writer */
    ledger_open_cb create_cb;
    void *create_arg;
    struct ledger *id_next_waiter;
    int64_t next_entry_id;
    pending_add_t **ring; /* capacity ring_cap (power of two, grows to the bound) */
    uint32_t ring_cap, ring_head, npending;
    uint64_t send_seq;
    int fail_rc;
    bool fail_emitted;
    bool drain_posted;
    uint32_t failed_slots; /* slots failed, waiting for an ensemble change */
    int changes;           /* ensemble changes committed */
    int md_retries;
    uint64_t avoid;          /* lc bookie indexes never to choose again */
    ledger_change_t *change; /* the ensemble change in flight, else NULL */
    bool closing, close_started;
    ledger_done_cb close_cb;
    void *close_arg;

    /* opening / recovery: allocated by ledger_open (a writer has none) */
    ledger_open_state_t *open;
} ledger_t;

ledger_t *ledger_alloc(ledger_client_t *lc, int64_t id, int role);
/* Kills the handle: no callback of it runs afterwards. */
void ledger_kill(ledger_t *l);
/* Called by the id allocator: rc < 0 fails the create. */
void ledger_id_ready(ledger_t *l, int rc, int64_t id);
/* Drops the writer state (pending adds without callbacks). */
void ledger_writer_free(ledger_t *l);
/* Frees the state of an ensemble change, if any (l->change = NULL). */
void ledger_change_free(ledger_t *l);
/* Writer entry for one position of entry e: the slot in the ensemble. */
static inline int ledger_slot_of(const ledger_t *l, int64_t entry_id, int k)
{
    return (int)((entry_id + k) % l->md.q.ensemble);
}
/* Bookie of write-set position k of entry_id according to the metadata, or NULL. */
bk_client_t *ledger_bookie_for(ledger_t *l, int64_t entry_id, int k);

#endif
