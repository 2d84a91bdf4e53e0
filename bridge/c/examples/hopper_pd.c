/* The hopper holds its nominal posture with a joint PD, as the hopper-pd scenario's
 * controller (mpc/controllers.py StandPD, kp 40, kd 1) without its gravity feed-forward
 * (that needs the robot's dynamics). Prints the base height once a second.
 *     python -m launch serve-plant hopper --bind tcp://127.0.0.1:5555 &
 *     bridge/c/build/hopper_pd tcp://127.0.0.1:5555 [kp kd]   (40 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "legmpc_client.h"

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: %s ENDPOINT [kp kd]\n", argv[0]), 2;
    double kp = argc > 2 ? atof(argv[2]) : 40.0, kd = argc > 3 ? atof(argv[3]) : 1.0;
    legmpc_client *c = legmpc_new();
    legmpc_options opts = {.name = "hopper_pd.c", .robot = "hopper"};
    if (!c || legmpc_connect(c, argv[1], &opts) != LEGMPC_OK)
        return fprintf(stderr, "hopper_pd: %s\n", legmpc_errmsg(c)), legmpc_close(c), 3;
    const legmpc_config *cfg = legmpc_config_get(c);
    int nu = cfg->nu, ev, height = 0;
    double *q_des = calloc(3 * (size_t)nu + 1, sizeof(double)), *kps = q_des + nu, *kds = kps + nu;
    legmpc_state s;
    if (!q_des || legmpc_state_alloc(c, &s) != LEGMPC_OK) return fprintf(stderr, "out of memory\n"), 3;
    for (int j = 0; j < nu; j++) q_des[j] = cfg->q0[cfg->q_index[j]], kps[j] = kp, kds[j] = kd;
    for (int i = 0; i < cfg->nq; i++)  /* the base height's place in q */
        if (!strcmp(cfg->q_names[i], cfg->floating_base ? "base_z" : "z")) height = i;
    fprintf(stderr, "connected to %s (%s, %g Hz)\n", cfg->robot, cfg->mode, cfg->control_rate_hz);
    legmpc_command cmd = {.q_des = q_des, .kp = kps, .kd = kds, .valid_until = -1};  /* NULL: zeros */
    while ((ev = legmpc_recv(c, &s, 10000)) > 0 && ev != LEGMPC_EV_BYE) {
        if (ev == LEGMPC_EV_ERROR) {
            fprintf(stderr, "plant says: %s (%s)\n", legmpc_plant_error(c)->reason, legmpc_plant_error(c)->detail);
            continue;
        }
        if (s.tick % (unsigned)(cfg->control_rate_hz + 0.5) == 0)
            fprintf(stderr, "t=%.2fs base height %.3f m status %d\n", s.t, s.q[height], s.status);
        if (legmpc_send_command(c, s.tick, s.t, &cmd) != LEGMPC_OK) break;
    }
    if (ev == LEGMPC_EV_BYE) fprintf(stderr, "plant: %s\n", legmpc_bye_reason(c));
    else fprintf(stderr, "hopper_pd: %s\n", legmpc_errmsg(c));
    legmpc_state_free(&s), free(q_des), legmpc_close(c);
    return ev == LEGMPC_EV_BYE ? 0 : 3;
}
