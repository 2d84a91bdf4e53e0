/* go1 stands: a joint PD whose targets move from the first STATE's joint angles to the
 * standing pose q0 in rise_s seconds (a smoothstep), then hold it; the C twin of
 * bridge/examples/go1_stand.py. Prints the base height once a second.
 *     python -m launch serve-plant go1 --bind tcp://127.0.0.1:5555 &
 *     bridge/c/build/go1_stand tcp://127.0.0.1:5555 [kp kd rise_s]   (100 3 1) */
#include <stdio.h>
#include <stdlib.h>

#include "legmpc_client.h"

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: %s ENDPOINT [kp kd rise_s]\n", argv[0]), 2;
    double kp = argc > 2 ? atof(argv[2]) : 100.0, kd = argc > 3 ? atof(argv[3]) : 3.0;
    double rise = argc > 4 ? atof(argv[4]) : 1.0, t0 = 0.0;
    legmpc_client *c = legmpc_new();
    legmpc_options opts = {.name = "go1_stand.c", .robot = "go1"};
    if (!c || legmpc_connect(c, argv[1], &opts) != LEGMPC_OK)
        return fprintf(stderr, "go1_stand: %s\n", legmpc_errmsg(c)), legmpc_close(c), 3;
    const legmpc_config *cfg = legmpc_config_get(c);
    int nu = cfg->nu, ev, started = 0;
    double *start = calloc(5 * (size_t)nu, sizeof(double)), *q_des = start + nu, *v_des = q_des + nu;
    double *kps = v_des + nu, *kds = kps + nu;
    legmpc_state s;
    if (!start || legmpc_state_alloc(c, &s) != LEGMPC_OK) return fprintf(stderr, "out of memory\n"), 3;
    for (int j = 0; j < nu; j++) kps[j] = kp, kds[j] = kd;
    fprintf(stderr, "connected to %s (%s, %g Hz)\n", cfg->robot, cfg->mode, cfg->control_rate_hz);
    while ((ev = legmpc_recv(c, &s, 10000)) > 0 && ev != LEGMPC_EV_BYE) {
        if (ev == LEGMPC_EV_ERROR) {
            fprintf(stderr, "plant says: %s (%s)\n", legmpc_plant_error(c)->reason, legmpc_plant_error(c)->detail);
            continue;
        }
        if (!started) {  /* the joint angles to rise from */
            for (int j = 0; j < nu; j++) start[j] = s.q[cfg->q_index[j]];
            t0 = s.t, started = 1;
        }
        double x = rise > 0 ? (s.t - t0) / rise : 1.0;
        x = x < 0 ? 0 : x > 1 ? 1 : x;
        double smooth = x * x * (3 - 2 * x), rate = rise > 0 ? 6 * x * (1 - x) / rise : 0.0;
        for (int j = 0; j < nu; j++) {
            double gap = cfg->q0[cfg->q_index[j]] - start[j];
            q_des[j] = start[j] + smooth * gap, v_des[j] = rate * gap;
        }
        if (s.tick % (unsigned)(cfg->control_rate_hz + 0.5) == 0)
            fprintf(stderr, "t=%.2fs base height %.3f m quaternion (%.3f %.3f %.3f %.3f) status %d\n", s.t, s.q[2],
                    s.q[3], s.q[4], s.q[5], s.q[6], s.status);
        legmpc_command cmd = {.q_des = q_des, .v_des = v_des, .kp = kps, .kd = kds, .valid_until = -1};
        if (legmpc_send_command(c, s.tick, s.t, &cmd) != LEGMPC_OK) break;
    }
    if (ev == LEGMPC_EV_BYE) fprintf(stderr, "plant: %s\n", legmpc_bye_reason(c));
    else fprintf(stderr, "go1_stand: %s\n", legmpc_errmsg(c));
    legmpc_state_free(&s), free(start), legmpc_close(c);
    return ev == LEGMPC_EV_BYE ? 0 : 3;
}
