/* A test driver of the C client for tests/test_c_client.py (not an example): each mode
 * prints one line per fact the test checks.
 *   probe parse FILE...                   legmpc_config_parse of each FILE: "ok ..." or "error ..."
 *   probe config ENDPOINT                 CONFIG as JSON, then hold q0 until BYE
 *   probe bad ENDPOINT                    malformed COMMANDs, the ERRORs that answer them
 *   probe stall ENDPOINT MS               a stall of MS ms at tick 3, then the drained STATE
 *   probe connect ENDPOINT ROBOT MS [KEYDIR]  connect ("-": no robot), hold q0 until BYE */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "legmpc_client.h"

static double q_des[64], kp[64], kd[64];

static void print_event(legmpc_client *c, int ev) {
    const legmpc_error *e = legmpc_plant_error(c);
    if (ev == LEGMPC_EV_ERROR)
        printf("error %s answers %d %u local %d tick %u\n", e->reason, e->answers_type, e->answers_seq, e->local, e->tick);
    else printf("event %s %s\n", legmpc_code_name(ev), ev < 0 ? legmpc_errmsg(c) : "");
}

/* Answer every STATE with a PD holding q0's joints until BYE, and send one PLAN (2 zero
 * stages) after the first COMMAND; 0 on BYE. */
static int hold(legmpc_client *c, legmpc_state *s) {
    static const double t[2] = {0.0, 0.01};
    static double x[2 * 256], u[2 * 64];
    legmpc_command cmd = {.q_des = q_des, .kp = kp, .kd = kd, .valid_until = -1};
    int ev, planned = 0;
    while ((ev = legmpc_recv(c, s, 10000)) > 0 && ev != LEGMPC_EV_BYE) {
        if (ev == LEGMPC_EV_ERROR) print_event(c, ev);
        if (ev != LEGMPC_EV_STATE) continue;
        if (legmpc_send_command(c, s->tick, s->t, &cmd) != LEGMPC_OK) break;
        if (!planned++ && legmpc_send_plan(c, 2, t, x, u) != LEGMPC_OK) break;
    }
    if (ev > 0 && ev != LEGMPC_EV_BYE) ev = -100;  /* a send failed */
    legmpc_stats st;
    legmpc_get_stats(c, &st);
    if (ev < 0) fprintf(stderr, "probe: %s\n", legmpc_errmsg(c));
    printf("end %s bye '%s' states %llu skipped %llu commands %llu errors %llu\n", legmpc_code_name(ev),
           legmpc_bye_reason(c), (unsigned long long)st.states, (unsigned long long)st.skipped,
           (unsigned long long)st.commands, (unsigned long long)st.errors);
    return ev == LEGMPC_EV_BYE ? 0 : 1;
}

static int parse(const char *path) {
    static char buf[1 << 17];
    FILE *fp = fopen(path, "rb");
    size_t n = fp ? fread(buf, 1, sizeof buf, fp) : 0;
    if (fp) fclose(fp);
    legmpc_config cfg;
    char err[300];
    if (legmpc_config_parse(buf, n, &cfg, err, sizeof err)) return printf("error %s\n", err), 0;
    printf("ok robot %s nq %d nv %d nu %d nc %d nf %d q_name0 %s\n", cfg.robot, cfg.nq, cfg.nv, cfg.nu, cfg.nc, cfg.nf,
           cfg.q_names[0]);
    legmpc_config_release(&cfg);
    return 0;
}

static void print_config(const legmpc_config *g) {
    printf("{\"robot\": \"%s\", \"nq\": %d, \"nv\": %d, \"nu\": %d, \"nc\": %d, \"nf\": %d, \"floating_base\": %d, "
           "\"mode\": \"%s\", \"control_rate_hz\": %.17g, \"plant_rate_hz\": %.17g, \"deadline_s\": %.17g, "
           "\"hold_ticks\": %d, \"safe_kp\": %.17g, \"damping_kd\": %.17g, \"quaternion_order\": \"%s\", "
           "\"base_velocity_frame\": \"%s\"", g->robot, g->nq, g->nv, g->nu, g->nc, g->nf, g->floating_base, g->mode,
           g->control_rate_hz, g->plant_rate_hz, g->deadline_s, g->hold_ticks, g->safe_kp, g->damping_kd,
           g->quaternion_order, g->base_velocity_frame);
    const char *const *names[3] = {g->q_names, g->u_names, g->contacts};
    const char *keys[3] = {"q_names", "u_names", "contacts"};
    int lens[3] = {g->nq, g->nu, g->nc};
    for (int k = 0; k < 3; k++) {
        printf(", \"%s\": [", keys[k]);
        for (int i = 0; i < lens[k]; i++) printf("%s\"%s\"", i ? ", " : "", names[k][i]);
        printf("]");
    }
    printf(", \"q0\": [");
    for (int i = 0; i < g->nq; i++) printf("%s%.17g", i ? ", " : "", g->q0[i]);
    printf("], \"u_max\": [");
    for (int i = 0; i < g->nu; i++) printf("%s%.17g", i ? ", " : "", g->u_max[i]);
    printf("], \"q_index\": [");
    for (int i = 0; i < g->nu; i++) printf("%s%d", i ? ", " : "", g->q_index[i]);
    printf("], \"v_index\": [");
    for (int i = 0; i < g->nu; i++) printf("%s%d", i ? ", " : "", g->v_index[i]);
    printf("]}\n");
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) return fprintf(stderr, "usage: see the comment at the top of probe.c\n"), 2;
    if (!strcmp(argv[1], "parse")) {
        for (int i = 2; i < argc; i++) parse(argv[i]);
        return 0;
    }
    legmpc_client *c = legmpc_new();
    legmpc_options o = {.name = "probe", .connect_timeout_ms = 20000};
    if (!strcmp(argv[1], "connect")) {
        o.robot = argc > 3 && strcmp(argv[3], "-") ? argv[3] : NULL;
        o.connect_timeout_ms = argc > 4 ? atoi(argv[4]) : 20000;
        o.curve_dir = argc > 5 ? argv[5] : NULL;
    }
    int r = legmpc_connect(c, argv[2], &o);
    printf("connect %s %s\n", legmpc_code_name(r), r ? legmpc_errmsg(c) : "");
    if (r == LEGMPC_E_REFUSED) print_event(c, LEGMPC_EV_ERROR);
    if (r) return legmpc_close(c), 1;
    const legmpc_config *g = legmpc_config_get(c);
    if (g->nu > 64 || g->nq + g->nv > 256) return 2;
    for (int j = 0; j < g->nu; j++) q_des[j] = g->q0[g->q_index[j]], kp[j] = 40.0, kd[j] = 1.0;
    legmpc_state s;
    legmpc_state_alloc(c, &s);
    if (!strcmp(argv[1], "config")) print_config(g);
    if (!strcmp(argv[1], "bad")) {
        int ev = legmpc_recv(c, &s, 10000);
        double nan_tau[64] = {0}, neg_kp[64];
        nan_tau[0] = strtod("nan", NULL);
        memcpy(neg_kp, kp, sizeof kp);
        neg_kp[g->nu - 1] = -1.0;
        legmpc_command good = {.q_des = q_des, .kp = kp, .kd = kd, .valid_until = -1}, nan_cmd = good, neg_cmd = good;
        nan_cmd.tau_ff = nan_tau, neg_cmd.kp = neg_kp;
        const char *v1 = legmpc_check_command(c, &nan_cmd), *v2 = legmpc_check_command(c, &neg_cmd);
        printf("state %d tick %u check %s %s %s\n", ev, s.tick, v1, v2, legmpc_check_command(c, &good) ? "bad" : "ok");
        uint32_t k = s.tick;
        legmpc_send_command(c, k, s.t, &nan_cmd);       /* two refused back to back: answered in order */
        legmpc_send_command(c, k + 7, s.t, &good);
        for (int i = 0; i < 2; i++) print_event(c, legmpc_recv(c, &s, 10000));
        legmpc_send_command(c, k, s.t, &neg_cmd);
        print_event(c, legmpc_recv(c, &s, 10000));
        double plan_t[1] = {0.0}, plan_x[256] = {strtod("inf", NULL)}, plan_u[64] = {0};
        int r_plan = legmpc_send_plan(c, 1, plan_t, plan_x, plan_u);  /* refused here, not sent */
        printf("plan %s %s\n", legmpc_code_name(r_plan), legmpc_errmsg(c));
        legmpc_send_command(c, k, s.t, &good);
        ev = legmpc_recv(c, &s, 10000);
        printf("state %d tick %u status %d\n", ev, s.tick, s.status);
        legmpc_send_command(c, s.tick, s.t, &good);
    }
    if (!strcmp(argv[1], "stall")) {
        legmpc_command good = {.q_des = q_des, .kp = kp, .kd = kd, .valid_until = -1};
        for (int answered = 0; answered < 6;) {
            int ev = legmpc_recv(c, &s, 10000);
            if (ev == LEGMPC_EV_ERROR) { print_event(c, ev); continue; }
            if (ev != LEGMPC_EV_STATE) return print_event(c, ev), 1;
            if (answered >= 3) printf("state tick %u skipped %u status %d\n", s.tick, s.skipped, s.status);
            legmpc_send_command(c, s.tick, s.t, &good);
            if (++answered == 3) {  /* a stall: the plant goes on sending STATEs */
                struct timespec ts = {atoi(argv[3]) / 1000, (atoi(argv[3]) % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
    }
    r = hold(c, &s);
    legmpc_state_free(&s);
    legmpc_close(c);
    return r;
}
