/*
 * progress.c - the progress threads: each communicator with nonblocking
 * allreduce calls has one, which runs them in the order they were posted
 * (MPI's order of a communicator's collectives), each as SAMPI's whole
 * blocking call (sampi_allreduce_nb), while the program computes.
 *
 * Why a thread per communicator and not one per process: a blocking run
 * cannot be set aside, and MPI lets two communicators' nonblocking calls
 * start in different orders on different ranks (rank 0 posts on A then B,
 * rank 1 on B then A); one thread running them in posting order would wait
 * for A on rank 0 while rank 1's thread waits for B.  Threads of their own
 * never wait for each other.  All of them run on one PU (sampi_pin), the
 * one the rank does not compute on; a program has one or two communicators
 * with nonblocking calls, not hundreds.
 *
 * Waits: a thread with nothing to do polls its queue for a while in the
 * wait mode (a call posted right after the last one starts at once), then
 * sleeps on a condition variable until the next post wakes it.  Inside a
 * call it waits as every SAMPI call does (wait_mode.h).
 */
#include "progress.h"
#include "pin.h"
#include "progress_mode.h"
#include "sampi_internal.h"
#include "wait_mode.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Idle turns before a thread sleeps: about 20-50 us of polling. */
#define IDLE_TURNS 1000

struct sampi_nb_queue {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct sampi_nb_call *head, *tail;
    _Atomic int nonempty; /* head != NULL, read without the lock while idle */
    int stop;
    int sleeping;
    pthread_t thread;
    struct sampi_comm *c;
    struct sampi_nb_queue *next_all;
};

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sampi_nb_queue *all_queues;
static int progress_pu = -1;
static _Atomic uint64_t live_requests;

void sampi_nb_live_add(int delta)
{
    atomic_fetch_add(&live_requests, (uint64_t)(int64_t)delta);
}

uint64_t sampi_nb_live_requests(void)
{
    return atomic_load(&live_requests);
}

void sampi_progress_place(void)
{
    char why[200], where[300];
    progress_pu = sampi_pin_progress_pu(why, sizeof(why));
    if (progress_pu >= 0)
        snprintf(where, sizeof(where), "pinned to PU %d (%s)", progress_pu, why);
    else
        snprintf(where, sizeof(where), "not pinned (%s)", why);
    sampi_progress_mode_placed(where);
}

/* The next call, or NULL when the queue is told to stop. */
static struct sampi_nb_call *take(struct sampi_nb_queue *q)
{
    unsigned spins = 0;
    for (unsigned turn = 0; turn < IDLE_TURNS; turn++) {
        if (atomic_load_explicit(&q->nonempty, memory_order_acquire))
            break;
        sampi_wait_pause(&spins);
    }
    pthread_mutex_lock(&q->lock);
    while (!q->head && !q->stop) {
        q->sleeping = 1;
        pthread_cond_wait(&q->wake, &q->lock);
        q->sleeping = 0;
    }
    struct sampi_nb_call *call = q->head;
    if (call) {
        q->head = call->next;
        if (!q->head)
            q->tail = NULL;
        atomic_store_explicit(&q->nonempty, q->head != NULL, memory_order_release);
    }
    pthread_mutex_unlock(&q->lock);
    return call;
}

static void *thread_main(void *arg)
{
    struct sampi_nb_queue *q = arg;
    if (progress_pu >= 0)
        sampi_pin_thread_to(progress_pu);
    struct sampi_nb_call *call;
    while ((call = take(q))) {
        struct sampi_comm *c = call->args.c;
        call->error = call->run(&call->args);
        sampi_stat_add(&c->stats.nb_calls, 1);
        sampi_stat_add(&sampi_process_stats.nb_calls, 1);
        if (call->error != MPI_SUCCESS) {
            sampi_stat_add(&c->stats.errors, 1);
            sampi_stat_add(&sampi_process_stats.errors, 1);
        }
        /* before the request completes: a blocking call or MPI_Comm_free
         * after the program's MPI_Wait must find nothing pending; the queue
         * outlives this (release joins the thread first) */
        atomic_fetch_sub_explicit(&c->nb_pending, 1, memory_order_release);
        call->finish(call);
    }
    return NULL;
}

static struct sampi_nb_queue *queue_of(struct sampi_comm *c)
{
    if (c->nbq)
        return c->nbq;
    struct sampi_nb_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->wake, NULL);
    q->c = c;
    if (pthread_create(&q->thread, NULL, thread_main, q)) {
        pthread_cond_destroy(&q->wake);
        pthread_mutex_destroy(&q->lock);
        free(q);
        return NULL;
    }
    pthread_mutex_lock(&all_lock);
    q->next_all = all_queues;
    all_queues = q;
    pthread_mutex_unlock(&all_lock);
    c->nbq = q;
    return q;
}

int sampi_progress_ready(struct sampi_comm *c)
{
    return queue_of(c) ? 0 : -EAGAIN;
}

void sampi_progress_post(struct sampi_nb_call *call)
{
    struct sampi_comm *c = call->args.c;
    struct sampi_nb_queue *q = c->nbq;
    call->next = NULL;
    atomic_fetch_add_explicit(&c->nb_pending, 1, memory_order_relaxed);
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = call;
    else
        q->head = call;
    q->tail = call;
    atomic_store_explicit(&q->nonempty, 1, memory_order_release);
    if (q->sleeping)
        pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
}

static void stop(struct sampi_nb_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
}

void sampi_progress_release(struct sampi_comm *c)
{
    struct sampi_nb_queue *q = c->nbq;
    if (!q)
        return;
    sampi_comm_wait_pending(c);
    stop(q);
    pthread_mutex_lock(&all_lock);
    for (struct sampi_nb_queue **p = &all_queues; *p; p = &(*p)->next_all)
        if (*p == q) {
            *p = q->next_all;
            break;
        }
    pthread_mutex_unlock(&all_lock);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    free(q);
    c->nbq = NULL;
}

void sampi_progress_finish_all(void)
{
    pthread_mutex_lock(&all_lock);
    for (struct sampi_nb_queue *q = all_queues; q; q = q->next_all) {
        uint64_t n = atomic_load(&q->c->nb_pending);
        if (n)
            sampi_log_warn("MPI_Finalize: %llu nonblocking allreduce call%s on communicator %llu "
                           "still running: waiting for %s (MPI: every collective completes "
                           "before MPI_Finalize)",
                           (unsigned long long)n, n == 1 ? "" : "s",
                           (unsigned long long)sampi_comm_label(q->c), n == 1 ? "it" : "them");
        sampi_comm_wait_pending(q->c);
    }
    pthread_mutex_unlock(&all_lock);
}
