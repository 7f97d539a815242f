/*
 * quire_perf_main.c — quire-perf's entry point: parses the command line, runs
 * the load on one libev loop until done or SIGINT/SIGTERM (the first asks for a
 * clean stop: drain, close, report; the second stops at once), prints the final
 * report (and writes it as JSON with --json), and exits non-zero on any error.
 */
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/errors.h"
#include "tools/quire_perf.h"

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    perf_run_stop(w->data);
}

static int write_json(const perf_opts_t *o, const perf_stats_t *t, double d, double end_unix_s)
{
    FILE *f = fopen(o->json_path, "w");
    if (!f) {
        perror(o->json_path);
        return -1;
    }
    int rc = perf_write_json(f, o, t, d, end_unix_s);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "quire-perf: cannot write %s\n", o->json_path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    perf_opts_t o;
    char err[512] = "";
    int rc = perf_opts_parse(argc, argv, &o, err, sizeof err);
    if (rc == 1) {
        perf_usage(stdout);
        perf_opts_free(&o);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "quire-perf: %s (see quire-perf --help)\n", err);
        perf_opts_free(&o);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct ev_loop *loop = ev_default_loop(0);
    perf_run_t *run = NULL;
    if ((rc = perf_run_create(loop, &o, stdout, &run)) != 0) {
        fprintf(stderr, "quire-perf: cannot start: %s\n", q_strerror(rc));
        perf_opts_free(&o);
        return 1;
    }
    ev_signal sigint, sigterm;
    ev_signal_init(&sigint, signal_cb, SIGINT);
    ev_signal_init(&sigterm, signal_cb, SIGTERM);
    sigint.data = sigterm.data = run;
    ev_signal_start(loop, &sigint);
    ev_signal_start(loop, &sigterm);
    perf_run_start(run);
    if (!perf_run_done(run))
        ev_run(loop, 0);
    ev_signal_stop(loop, &sigint);
    ev_signal_stop(loop, &sigterm);

    double d = 0;
    const perf_stats_t *t = perf_run_totals(run, &d);
    if (perf_run_status(run) == 0 || d > 0)
        perf_print_final(stdout, &o, t, d);
    int status = perf_run_status(run) != 0 ? 1 : 0;
    if (o.json_path && write_json(&o, t, d, perf_run_end_unix_s(run)) != 0)
        status = 1;
    perf_run_free(run);
    perf_opts_free(&o);
    return status;
}
